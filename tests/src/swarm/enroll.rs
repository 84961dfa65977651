//! Enrolling the swarm's identities through the real certmaster, as `funcd`
//! does: a key and a CSR per name, `wait_for_cert(csr, {"address"})`, the
//! certificate checked against the key. Requests go over a few kept
//! connections at once (within the certmaster's per-address cap); a pending
//! answer (no autosign) is asked again until signed.
//!
//! The identities are kept in one file below `--root` (0600 in 0700), so a
//! restarted swarm serves the same minions without enrolling again.
//!
//! This is a test program: the first contact with the certmaster trusts
//! the CA it presents (funcd can pin its fingerprint; the swarm does not),
//! and every answer must come from that same CA.

use std::io::Write as _;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{bail, Context as _};
use base64::Engine as _;
use common::rpc::client::MinionClient;
use common::Value;

use super::args::Args;

/// One simulated minion: its name, key (PKCS#8 DER) and certificate (DER).
pub struct Identity {
    pub name: String,
    pub key_der: Vec<u8>,
    pub cert_der: Vec<u8>,
}

/// Every identity, with the CA (DER) that signed them.
pub struct Identities {
    pub identities: Vec<Identity>,
    pub ca_der: Vec<u8>,
    pub enrolled_now: usize,
}

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

fn store_path(args: &Args) -> std::path::PathBuf {
    args.root.join("identities")
}

/// Loads the identities kept below `--root` and enrolls the missing ones.
pub async fn enroll_all(args: &Args, advertise: &str) -> anyhow::Result<Identities> {
    make_private_dir(&args.root)?;
    let (mut kept, mut ca_der) = load(args)?;
    let names: Vec<String> = (1..=args.count).map(|i| format!("{}{i}", args.prefix)).collect();
    let missing: Vec<String> = names.iter().filter(|n| !kept.contains_key(*n)).cloned().collect();
    let enrolled_now = missing.len();
    if !missing.is_empty() {
        let (fresh, ca) = enroll(args, advertise, missing).await?;
        if let Some(old) = &ca_der {
            if *old != ca {
                bail!("the certmaster's CA is not the one the kept identities were signed by; remove {} to enroll again", store_path(args).display());
            }
        }
        ca_der = Some(ca);
        for id in fresh {
            kept.insert(id.name.clone(), id);
        }
    }
    let ca_der = ca_der.context("no CA")?;
    // The kept file holds every identity served; each advertised address is
    // said again at the next enrollment (a restart on another port asks anew).
    let identities: Vec<Identity> = names.iter().filter_map(|n| kept.remove(n)).collect();
    if enrolled_now > 0 {
        save(args, &identities, &ca_der)?;
    }
    Ok(Identities {
        identities,
        ca_der,
        enrolled_now,
    })
}

fn make_private_dir(dir: &std::path::Path) -> anyhow::Result<()> {
    use std::os::unix::fs::{DirBuilderExt as _, PermissionsExt as _};
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .with_context(|| format!("cannot create {}", dir.display()))?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    Ok(())
}

type Kept = std::collections::HashMap<String, Identity>;

fn load(args: &Args) -> anyhow::Result<(Kept, Option<Vec<u8>>)> {
    let path = store_path(args);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((Kept::new(), None)),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    let mut kept = Kept::new();
    let mut ca = None;
    for line in text.lines() {
        let fields: Vec<&str> = line.split('\t').collect();
        let bad = || anyhow::anyhow!("{}: unreadable line", path.display());
        match fields.as_slice() {
            ["ca", der] => ca = Some(B64.decode(der).map_err(|_| bad())?),
            [name, key, cert] => {
                kept.insert(
                    name.to_string(),
                    Identity {
                        name: name.to_string(),
                        key_der: B64.decode(key).map_err(|_| bad())?,
                        cert_der: B64.decode(cert).map_err(|_| bad())?,
                    },
                );
            }
            _ => return Err(bad()),
        }
    }
    Ok((kept, ca))
}

fn save(args: &Args, ids: &[Identity], ca_der: &[u8]) -> anyhow::Result<()> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let path = store_path(args);
    let tmp = path.with_extension("tmp");
    let _ = std::fs::remove_file(&tmp);
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&tmp)
        .with_context(|| format!("cannot create {}", tmp.display()))?;
    let mut out = std::io::BufWriter::new(file);
    writeln!(out, "ca\t{}", B64.encode(ca_der))?;
    for id in ids {
        writeln!(
            out,
            "{}\t{}\t{}",
            id.name,
            B64.encode(&id.key_der),
            B64.encode(&id.cert_der)
        )?;
    }
    let file = out.into_inner().map_err(|e| e.into_error())?;
    file.sync_all()?;
    std::fs::rename(&tmp, &path)?;
    Ok(())
}

/// Enrolls `names` over `--enroll-connections` kept connections.
async fn enroll(
    args: &Args,
    advertise: &str,
    names: Vec<String>,
) -> anyhow::Result<(Vec<Identity>, Vec<u8>)> {
    let addr: SocketAddr = tokio::net::lookup_host(&args.certmaster)
        .await
        .with_context(|| format!("cannot resolve {}", args.certmaster))?
        .next()
        .with_context(|| format!("{} has no address", args.certmaster))?;
    let tls = Arc::new(
        rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(FirstContact))
            .with_no_client_auth(),
    );
    let names = Arc::new(names);
    let next = Arc::new(AtomicU32::new(0));
    let ca: Arc<Mutex<Option<Vec<u8>>>> = Arc::default();
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..args.enroll_connections {
        let (names, next, ca, tls) = (names.clone(), next.clone(), ca.clone(), tls.clone());
        let advertise = advertise.to_string();
        tasks.spawn(async move {
            let mut done = Vec::new();
            let mut client: Option<MinionClient> = None;
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed) as usize;
                let Some(name) = names.get(i) else { break };
                let key = rcgen::KeyPair::generate().context("key")?;
                let csr = certs::request::csr(name, &key)?;
                let (cert_pem, ca_pem) = ask_until_signed(&mut client, addr, &tls, &csr, &advertise).await?;
                let cert_der = certs::authority::pem_to_der(&cert_pem).context("certificate unreadable")?;
                if certs::authority::cert_public_key(&cert_pem)? != rcgen::PublicKeyData::der_bytes(&key).to_vec() {
                    bail!("{name}: the certificate does not match our key (certmaster-ca --clean {name} first?)");
                }
                let ca_der = certs::authority::pem_to_der(&ca_pem).context("CA certificate unreadable")?;
                {
                    let mut seen = ca.lock().unwrap_or_else(|p| p.into_inner());
                    match &*seen {
                        Some(known) if *known != ca_der => bail!("the certmaster answered with two CAs"),
                        Some(_) => {}
                        None => *seen = Some(ca_der),
                    }
                }
                done.push(Identity {
                    name: name.clone(),
                    key_der: key.serialize_der(),
                    cert_der,
                });
            }
            Ok::<_, anyhow::Error>(done)
        });
    }
    let mut all = Vec::with_capacity(names.len());
    while let Some(joined) = tasks.join_next().await {
        all.extend(joined.context("an enrolling task ended")??);
    }
    let ca = ca
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .take()
        .context("no CA")?;
    Ok((all, ca))
}

/// `wait_for_cert` until signed, over a kept connection (reconnecting when
/// the certmaster closed it or could not be reached).
async fn ask_until_signed(
    client: &mut Option<MinionClient>,
    addr: SocketAddr,
    tls: &Arc<rustls::ClientConfig>,
    csr: &str,
    advertise: &str,
) -> anyhow::Result<(String, String)> {
    let info = Value::Struct(
        [("address".to_string(), Value::String(advertise.to_string()))]
            .into_iter()
            .collect(),
    );
    let mut pause = Duration::from_millis(100);
    let mut failures = 0u32;
    loop {
        if client.as_mut().is_none_or(|c| c.is_closed()) {
            *client =
                match MinionClient::connect(addr, "certmaster", tls.clone(), Duration::from_secs(30)).await {
                    Ok(c) => Some(c),
                    Err(e) => {
                        failures += 1;
                        if failures > 60 {
                            bail!("certmaster {addr} not reached: {e}");
                        }
                        tokio::time::sleep(pause).await;
                        pause = (pause * 2).min(Duration::from_secs(2));
                        continue;
                    }
                };
        }
        let Some(c) = client.as_mut() else { continue };
        match c
            .call(
                "wait_for_cert",
                vec![Value::String(csr.to_string()), info.clone()],
            )
            .await
        {
            Ok(Value::Array(items)) => match items.as_slice() {
                [Value::Boolean(true), Value::String(cert), Value::String(ca)] => {
                    return Ok((cert.clone(), ca.clone()))
                }
                [Value::Boolean(false), ..] => {
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_secs(2));
                }
                _ => bail!("wait_for_cert returned an unexpected shape"),
            },
            Ok(_) => bail!("wait_for_cert did not return a list"),
            Err(common::rpc::client::CallError::Fault { message, .. }) => {
                bail!("the certmaster refused: {message}")
            }
            Err(e) => {
                failures += 1;
                if failures > 60 {
                    bail!("certmaster {addr}: {e}");
                }
                *client = None;
            }
        }
    }
}

/// Trusts the certificate the certmaster presents (first contact); the
/// answers' CA is compared across every answer instead.
#[derive(Debug, Default)]
struct FirstContact;

impl rustls::client::danger::ServerCertVerifier for FirstContact {
    fn verify_server_cert(
        &self,
        _end_entity: &rustls::pki_types::CertificateDer<'_>,
        _intermediates: &[rustls::pki_types::CertificateDer<'_>],
        _server_name: &rustls::pki_types::ServerName<'_>,
        _ocsp_response: &[u8],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &rustls::crypto::ring::default_provider().signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &rustls::crypto::ring::default_provider().signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        rustls::crypto::ring::default_provider()
            .signature_verification_algorithms
            .supported_schemes()
    }
}
