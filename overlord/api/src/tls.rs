//! func-api's TLS: HTTPS only. The certificate is `[api] cert`/`key`, or by
//! default `etc/pki/func-api/func-api.{cert,pem}` below the root, issued by
//! the local CA at first start for this host's name, `localhost` and the
//! loopback addresses (the key 0600). A client may show a certificate of
//! our CA: one with the overlord mark is an admin; none is needed, since
//! tokens are the usual way in.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;
use common::paths::Root;
use rustls::server::WebPkiClientVerifier;

use super::config::ApiSettings;

/// The default certificate and key below `root`.
pub fn default_paths(root: &Root) -> (PathBuf, PathBuf) {
    let dir = root.join("etc/pki/func-api");
    (dir.join("func-api.cert"), dir.join("func-api.pem"))
}

/// The service's rustls configuration (made, with its certificate, if needed).
pub fn server_config(root: &Root, settings: &ApiSettings) -> anyhow::Result<rustls::ServerConfig> {
    let (cert, key) = match (&settings.cert, &settings.key) {
        (Some(c), Some(k)) => (c.clone(), k.clone()),
        (None, None) => {
            let (c, k) = default_paths(root);
            if !c.exists() || !k.exists() {
                issue(root, &c, &k)?;
            } else if !has_service_mark(&c) {
                // Issued by an older version: anew when the CA is here,
                // else said (a relay's clients refuse it).
                match root.ca_key().exists() {
                    true => issue(root, &c, &k)?,
                    false => tracing::warn!(
                        "{} has no service mark: overlords will not take this func-api for a relay",
                        c.display()
                    ),
                }
            }
            (c, k)
        }
        _ => anyhow::bail!("[api] cert and key go together: set both, or neither"),
    };
    let chain = common::tls::load_certs(&cert, "func-api certificate")?;
    let key = common::tls::load_key(&key)?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    for ca in common::tls::load_certs(&root.ca_cert(), "CA certificate")? {
        roots.add(ca).context("the CA certificate")?;
    }
    let mut crls = Vec::new();
    if root.ca_crl().exists() {
        crls.push(common::tls::load_crl(&root.ca_crl())?);
    }
    let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), Arc::clone(&provider))
        .with_crls(crls)
        .allow_unknown_revocation_status()
        .allow_unauthenticated()
        .build()
        .context("client certificate verifier")?;
    let mut cfg = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_client_cert_verifier(verifier)
        .with_single_cert(chain, key)
        .context("the func-api certificate and key")?;
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(cfg)
}

/// Whether the certificate file carries the service mark (one issued by an
/// older version has none, and relay clients refuse it: it is issued anew).
fn has_service_mark(cert: &std::path::Path) -> bool {
    let mark = common::identity::service_oid_string();
    common::tls::load_certs(cert, "func-api certificate")
        .ok()
        .and_then(|chain| {
            chain
                .first()
                .map(|c| common::identity::has_eku_mark(c.as_ref(), &mark))
        })
        .unwrap_or(false)
}

/// Issues the default certificate from the CA below `root`.
fn issue(root: &Root, cert: &std::path::Path, key: &std::path::Path) -> anyhow::Result<()> {
    let ca_cert = std::fs::read_to_string(root.ca_cert())
        .with_context(|| format!("reading the CA certificate {}", root.ca_cert().display()))?;
    let ca_key = std::fs::read_to_string(root.ca_key()).with_context(|| {
        format!(
            "reading the CA key {} (or set [api] cert and key in overlord.conf)",
            root.ca_key().display()
        )
    })?;
    let ca = certs::authority::Authority::load(&ca_cert, &ca_key).context("loading the CA")?;
    let host = nix::unistd::gethostname()
        .ok()
        .and_then(|h| h.into_string().ok())
        .filter(|h| common::identity::is_valid_host_name(h))
        .unwrap_or_else(|| "localhost".into());
    let mut names = vec![host, "localhost".into(), "127.0.0.1".into(), "::1".into()];
    names.dedup();
    let pair = certs::request::new_key().context("making a key")?;
    let signed = ca
        .issue_service(&names, &pair)
        .context("issuing the func-api certificate")?;
    let dir = cert.parent().context("certificate path")?;
    common::private::private_dir(dir).with_context(|| format!("creating {}", dir.display()))?;
    common::private::write(key, pair.serialize_pem().as_bytes(), true)
        .with_context(|| format!("writing {}", key.display()))?;
    common::private::write(cert, signed.cert_pem.as_bytes(), true)
        .with_context(|| format!("writing {}", cert.display()))?;
    Ok(())
}
