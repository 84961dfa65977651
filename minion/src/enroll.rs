//! A minion's side of the certmaster: enrollment at start (key + CSR,
//! `wait_for_cert` with retries and backoff until signed) and the periodic
//! CRL fetch that makes cleaned certificates stop working.
//!
//! The certmaster is reached over HTTPS and must present a certificate named
//! `certmaster` that chains to the CA:
//! - the CA already installed (`ca.cert`) once the minion has one;
//! - otherwise the CA whose SHA-256 fingerprint is pinned in
//!   `etc/certmaster/minion.conf` (`ca_fingerprint`), so first contact cannot
//!   be spoofed;
//! - otherwise the CA the certmaster presents (trust on first use, logged
//!   with its fingerprint so it can be pinned).
//!
//! The CA returned by `wait_for_cert` must be the one the connection was
//! verified against.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::config::{ConfigError, Ini};
use common::identity::{fingerprint_sha256, fingerprints_match};
use common::paths::Root;
use common::rpc::client::{CallError, MinionClient};
use common::Value;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};

/// Func's default certmaster host and port.
const DEFAULT_HOST: &str = "certmaster";
const DEFAULT_PORT: u16 = 51235;
/// Name the certmaster's TLS certificate carries.
const CERTMASTER_NAME: &str = "certmaster";

/// Where and how to reach the certmaster (`etc/certmaster/minion.conf`).
#[derive(Debug, Clone)]
pub struct EnrollConfig {
    /// `host:port` of the certmaster.
    pub certmaster: String,
    /// Whether a certmaster was named (flag or config), rather than Func's default.
    pub configured: bool,
    pub ca_fingerprint: Option<String>,
    /// Longest wait between two requests while pending.
    pub retry_max: Duration,
    /// How often the CRL is fetched.
    pub crl_refresh: Duration,
}

impl EnrollConfig {
    /// Reads `etc/certmaster/minion.conf` below `root`; `flag` (`--certmaster`) wins.
    pub fn load(root: &Root, flag: Option<String>) -> Result<Self, ConfigError> {
        let ini = Ini::load(&root.certmaster_minion_conf())?;
        let host = ini.str("main", "certmaster");
        let port = ini
            .u64("main", "certmaster_port")?
            .and_then(|p| u16::try_from(p).ok())
            .unwrap_or(DEFAULT_PORT);
        let secs = |key: &str, default: f64| -> Result<Duration, ConfigError> {
            Ok(Duration::from_secs_f64(
                ini.f64("main", key)?.unwrap_or(default).clamp(0.05, 86_400.0),
            ))
        };
        Ok(Self {
            configured: flag.is_some() || host.is_some(),
            certmaster: flag.unwrap_or_else(|| format!("{}:{port}", host.unwrap_or(DEFAULT_HOST))),
            ca_fingerprint: ini.str("main", "ca_fingerprint").map(str::to_string),
            retry_max: secs("enroll_retry_max", 60.0)?,
            crl_refresh: secs("crl_refresh", 60.0)?,
        })
    }
}

/// Why enrollment cannot go on.
#[derive(Debug, thiserror::Error)]
pub enum EnrollError {
    #[error("the certmaster refused the request: {0}")]
    Refused(String),
    #[error("the certmaster at {addr} presented a CA that is not the pinned one (ca_fingerprint): {detail}")]
    WrongCa { addr: String, detail: String },
    #[error("could not locate the certmaster at {addr} ({detail}); name it with --certmaster HOST:PORT or `certmaster` in etc/certmaster/minion.conf")]
    Unresolvable { addr: String, detail: String },
    #[error("cannot reach the certmaster at {addr}: {detail}")]
    Unreachable { addr: String, detail: String },
    #[error("certmaster answer unusable: {0}")]
    BadAnswer(String),
    #[error(transparent)]
    Cert(#[from] certs::CertError),
    #[error("cannot write {0}")]
    Io(String),
}

/// Makes sure the minion has a signed certificate, asking the certmaster
/// (and waiting while the request is pending) if it has none. With a
/// certificate already present, the certmaster is still told the advertised
/// address; failing to reach it then is only a warning.
pub async fn enroll(root: &Root, name: &str, advertise: &str, cfg: &EnrollConfig) -> Result<(), EnrollError> {
    let have_cert = root.minion_cert(name).exists() && root.minion_ca_cert().exists();
    if have_cert && !cfg.configured {
        return Ok(());
    }
    let key = certs::layout::ensure_minion_key(root, name)?;
    let csr = certs::request::csr(name, &key)?;
    let fingerprint = certs::authority::key_fingerprint(&rcgen_public_key(&key));
    if !have_cert {
        tracing::info!(%fingerprint, "certificate request for {name}: compare this fingerprint with `certmaster-ca --list`, then `certmaster-ca --sign {name} --fingerprint {fingerprint}`");
    }
    let mut delay = Duration::from_millis(200);
    let mut said_pending: Option<std::time::Instant> = None;
    loop {
        match ask(root, cfg, &csr, advertise).await {
            Ok(Some((cert, ca))) => {
                if certs::authority::cert_public_key(&cert)? != rcgen_public_key(&key) {
                    return Err(EnrollError::BadAnswer(
                        "the certificate does not match our key (run certmaster-ca --clean first?)".into(),
                    ));
                }
                certs::layout::install_minion_cert(root, name, &cert, &ca)?;
                tracing::info!(certmaster = %cfg.certmaster, "certificate installed");
                return Ok(());
            }
            // Said once, then every ten minutes: not at every retry.
            Ok(None) if said_pending.is_none_or(|t| t.elapsed() >= Duration::from_secs(600)) => {
                said_pending = Some(std::time::Instant::now());
                tracing::info!(certmaster = %cfg.certmaster, %fingerprint, "waiting to be signed: `certmaster-ca --sign {name} --fingerprint {fingerprint}` on the certmaster")
            }
            Ok(None) => {}
            Err(e @ (EnrollError::Refused(_) | EnrollError::WrongCa { .. } | EnrollError::BadAnswer(_))) => {
                return Err(e)
            }
            Err(e @ EnrollError::Unresolvable { .. }) if !have_cert => return Err(e),
            Err(e) if have_cert => {
                tracing::warn!(error = %e, "certmaster not reached; serving with the certificate we have");
                return Ok(());
            }
            Err(e) => {
                // Not reached (down, busy, or its per-address cap closed us):
                // retry sooner than a pending request is polled, so a fleet
                // that starts at once is not left waiting for a minute.
                let wait = jittered(delay);
                tracing::warn!(error = %e, retry_in = ?wait, "certmaster not reached; retrying");
                tokio::time::sleep(wait).await;
                delay = (delay * 2).min(cfg.retry_max.min(UNREACHED_RETRY_MAX));
                continue;
            }
        }
        tokio::time::sleep(jittered(delay)).await;
        delay = (delay * 2).min(cfg.retry_max);
    }
}

/// Longest wait between attempts while the certmaster is not reached.
const UNREACHED_RETRY_MAX: Duration = Duration::from_secs(10);

/// `delay` scaled by a random factor in [0.5, 1): minions that started
/// together and were turned away together do not come back in lock-step.
fn jittered(delay: Duration) -> Duration {
    use std::hash::{BuildHasher, Hasher};
    // A randomly keyed hasher: random bits without another dependency.
    let bits = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    let factor = 0.5 + (bits % 1024) as f64 / 2048.0;
    delay.mul_f64(factor)
}

fn rcgen_public_key(key: &rcgen::KeyPair) -> Vec<u8> {
    use rcgen::PublicKeyData;
    key.der_bytes().to_vec()
}

/// One `wait_for_cert`: `Some((cert, ca))` when signed, `None` while pending.
async fn ask(
    root: &Root,
    cfg: &EnrollConfig,
    csr: &str,
    advertise: &str,
) -> Result<Option<(String, String)>, EnrollError> {
    let info = Value::Struct(
        [("address".to_string(), Value::String(advertise.to_string()))]
            .into_iter()
            .collect(),
    );
    let (answer, anchor) = call(
        root,
        cfg,
        "wait_for_cert",
        vec![Value::String(csr.to_string()), info],
    )
    .await?;
    let Value::Array(items) = answer else {
        return Err(EnrollError::BadAnswer(
            "wait_for_cert did not return a list".into(),
        ));
    };
    match items.as_slice() {
        [Value::Boolean(true), Value::String(cert), Value::String(ca)] => {
            let ca_der = certs::authority::pem_to_der(ca)
                .ok_or_else(|| EnrollError::BadAnswer("CA certificate unreadable".into()))?;
            if ca_der != anchor {
                return Err(EnrollError::BadAnswer(
                    "the CA returned is not the CA the connection was verified against".into(),
                ));
            }
            Ok(Some((cert.clone(), ca.clone())))
        }
        [Value::Boolean(false), ..] => Ok(None),
        _ => Err(EnrollError::BadAnswer(
            "wait_for_cert returned an unexpected shape".into(),
        )),
    }
}

/// Calls the certmaster; returns the answer and the CA (DER) it was verified against.
async fn call(
    root: &Root,
    cfg: &EnrollConfig,
    method: &str,
    params: Vec<Value>,
) -> Result<(Value, Vec<u8>), EnrollError> {
    let unreachable = |detail: String| EnrollError::Unreachable {
        addr: cfg.certmaster.clone(),
        detail,
    };
    let unresolvable = |detail: String| EnrollError::Unresolvable {
        addr: cfg.certmaster.clone(),
        detail,
    };
    let lookup =
        tokio::time::timeout(Duration::from_secs(10), tokio::net::lookup_host(&cfg.certmaster)).await;
    let addr: SocketAddr = match lookup {
        Ok(Ok(mut addrs)) => addrs.next().ok_or_else(|| unresolvable("no address".into()))?,
        Ok(Err(e)) => return Err(unresolvable(e.to_string())),
        Err(_) => return Err(unresolvable("name lookup timed out".into())),
    };
    let known = std::fs::read_to_string(root.minion_ca_cert())
        .ok()
        .and_then(|pem| certs::authority::pem_to_der(&pem));
    let verifier = Arc::new(CaVerifier::new(known, cfg.ca_fingerprint.clone()));
    let tls = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| unreachable(e.to_string()))?
        .dangerous()
        .with_custom_certificate_verifier(verifier.clone())
        .with_no_client_auth();
    let result = async {
        let mut client =
            MinionClient::connect(addr, CERTMASTER_NAME, Arc::new(tls), Duration::from_secs(20)).await?;
        client.call(method, params).await
    }
    .await;
    let pin_error = verifier.pin_error();
    match result {
        Ok(v) => Ok((v, verifier.anchor().unwrap_or_default())),
        Err(_) if pin_error.is_some() => Err(EnrollError::WrongCa {
            addr: cfg.certmaster.clone(),
            detail: pin_error.unwrap_or_default(),
        }),
        Err(CallError::Fault { message, .. }) => Err(EnrollError::Refused(message)),
        Err(e) => Err(unreachable(e.to_string())),
    }
}

/// Fetches the CRL; `Ok(None)` when the certmaster has not published one.
pub async fn fetch_crl(root: &Root, cfg: &EnrollConfig) -> Result<Option<String>, EnrollError> {
    let (value, _) = call(root, cfg, "get_crl", vec![]).await?;
    match value {
        Value::String(pem) if pem.trim().is_empty() => Ok(None),
        Value::String(pem) => Ok(Some(pem)),
        _ => Err(EnrollError::BadAnswer("get_crl did not return a string".into())),
    }
}

/// Verifies the certmaster's certificate against the known, pinned or
/// first-seen CA (see the module docs) and remembers which CA that was.
#[derive(Debug)]
struct CaVerifier {
    known: Option<Vec<u8>>,
    pin: Option<String>,
    provider: Arc<rustls::crypto::CryptoProvider>,
    anchor: Mutex<Option<Vec<u8>>>,
    pin_error: Mutex<Option<String>>,
}

impl CaVerifier {
    fn new(known: Option<Vec<u8>>, pin: Option<String>) -> Self {
        Self {
            known,
            pin,
            provider: Arc::new(rustls::crypto::ring::default_provider()),
            anchor: Mutex::new(None),
            pin_error: Mutex::new(None),
        }
    }

    fn anchor(&self) -> Option<Vec<u8>> {
        self.anchor.lock().ok().and_then(|a| a.clone())
    }

    fn pin_error(&self) -> Option<String> {
        self.pin_error.lock().ok().and_then(|e| e.clone())
    }

    fn refuse(&self, detail: String) -> rustls::Error {
        if let Ok(mut e) = self.pin_error.lock() {
            *e = Some(detail.clone());
        }
        rustls::Error::General(detail)
    }

    /// The CA to verify against.
    fn choose_anchor(&self, presented: &[CertificateDer<'_>]) -> Result<Vec<u8>, rustls::Error> {
        if let Some(pin) = &self.pin {
            let candidate = self.known.clone().or_else(|| {
                presented
                    .iter()
                    .find(|c| fingerprints_match(&fingerprint_sha256(c.as_ref()), pin))
                    .map(|c| c.to_vec())
            });
            return match candidate {
                Some(ca) if fingerprints_match(&fingerprint_sha256(&ca), pin) => Ok(ca),
                Some(ca) => Err(self.refuse(format!("expected {pin}, have {}", fingerprint_sha256(&ca)))),
                None => Err(self.refuse(format!(
                    "expected {pin}, presented {}",
                    presented
                        .iter()
                        .map(|c| fingerprint_sha256(c.as_ref()))
                        .collect::<Vec<_>>()
                        .join(", ")
                ))),
            };
        }
        if let Some(known) = &self.known {
            return Ok(known.clone());
        }
        let first = presented
            .last()
            .ok_or_else(|| rustls::Error::General("certmaster sent no CA certificate".into()))?;
        // Once per process: the first contact is retried until signed.
        static WARNED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
        if !WARNED.swap(true, std::sync::atomic::Ordering::Relaxed) {
            tracing::warn!(fingerprint = %fingerprint_sha256(first.as_ref()), "first contact with the certmaster is not pinned: trusting this CA (set ca_fingerprint in etc/certmaster/minion.conf to pin it)");
        }
        Ok(first.to_vec())
    }
}

impl ServerCertVerifier for CaVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let anchor = self.choose_anchor(intermediates)?;
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(CertificateDer::from(anchor.clone()))
            .map_err(|e| rustls::Error::General(e.to_string()))?;
        let inner = rustls::client::WebPkiServerVerifier::builder_with_provider(
            Arc::new(roots),
            self.provider.clone(),
        )
        .build()
        .map_err(|e| rustls::Error::General(e.to_string()))?;
        let verified = inner.verify_server_cert(end_entity, &[], server_name, ocsp, now)?;
        if let Ok(mut a) = self.anchor.lock() {
            *a = Some(anchor);
        }
        Ok(verified)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// Fetches the CRL now and every `cfg.crl_refresh`, installing each new one:
/// a certificate cleaned on the certmaster is refused within one interval.
/// Failures are logged once per outage, not on every attempt.
pub async fn refresh_crl(minion: Arc<crate::state::Minion>, cfg: EnrollConfig) {
    let root = minion.config.root.clone();
    let mut failing = false;
    loop {
        match fetch_crl(&root, &cfg).await {
            Ok(Some(pem)) => {
                failing = false;
                match minion.apply_crl(&pem) {
                    Ok(true) => {
                        tracing::info!("new CRL from the certmaster installed");
                        // Said where the administrator of this host looks.
                        let own = std::fs::read_to_string(root.minion_cert(&minion.config.name))
                            .unwrap_or_default();
                        if certs::authority::crl_revokes(&pem, &own) {
                            tracing::error!(
                                "this minion's own certificate is revoked (certmaster-ca --clean {} on the certmaster): overlords no longer call it; to enroll again, remove its certificate and key and restart funcd",
                                minion.config.name
                            );
                        }
                    }
                    Ok(false) => {}
                    Err(e) => tracing::warn!(error = %e, "CRL from the certmaster not usable"),
                }
            }
            Ok(None) => failing = false,
            Err(e) => {
                if !failing {
                    tracing::warn!(error = %e, "cannot fetch the CRL; keeping the current one");
                }
                failing = true;
            }
        }
        tokio::time::sleep(cfg.crl_refresh).await;
    }
}
