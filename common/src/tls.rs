//! rustls configurations for both ends of Func's mutual TLS, with the ring
//! provider only (never aws-lc-rs) and TLS 1.2/1.3.
//!
//! - [`server_config`]: a minion's server; client certificates are required
//!   and must chain to the CA; an optional CRL refuses cleaned certificates.
//! - [`client_config`]: the overlord (or any caller) presenting its own
//!   certificate and checking the server's name against its certificate.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, CertificateRevocationListDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{ClientConfig, RootCertStore, ServerConfig};

#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot read {what} {path}: {detail}")]
    Read {
        what: &'static str,
        path: PathBuf,
        detail: String,
    },
    #[error("{what} {path} holds no PEM item")]
    Empty { what: &'static str, path: PathBuf },
    #[error("TLS configuration: {0}")]
    Config(String),
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// All certificates of a PEM file.
pub fn load_certs(path: &Path, what: &'static str) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let read = |detail: String| TlsError::Read {
        what,
        path: path.to_path_buf(),
        detail,
    };
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| read(e.to_string()))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| read(e.to_string()))?;
    if certs.is_empty() {
        return Err(TlsError::Empty {
            what,
            path: path.to_path_buf(),
        });
    }
    Ok(certs)
}

/// The private key of a PEM file.
pub fn load_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    PrivateKeyDer::from_pem_file(path).map_err(|e| TlsError::Read {
        what: "private key",
        path: path.to_path_buf(),
        detail: e.to_string(),
    })
}

/// A CRL from a PEM file.
pub fn load_crl(path: &Path) -> Result<CertificateRevocationListDer<'static>, TlsError> {
    CertificateRevocationListDer::from_pem_file(path).map_err(|e| TlsError::Read {
        what: "CRL",
        path: path.to_path_buf(),
        detail: e.to_string(),
    })
}

fn roots(ca: &Path) -> Result<Arc<RootCertStore>, TlsError> {
    let mut store = RootCertStore::empty();
    for cert in load_certs(ca, "CA certificate")? {
        store
            .add(cert)
            .map_err(|e| TlsError::Config(format!("CA certificate {}: {e}", ca.display())))?;
    }
    Ok(Arc::new(store))
}

/// Files a TLS endpoint presents: its key, its certificate, the CA it
/// trusts, and (for a client) the CRL that peers' certificates are checked
/// against: a revoked minion certificate is refused even at the right address.
#[derive(Debug, Clone)]
pub struct Credentials {
    pub key: PathBuf,
    pub cert: PathBuf,
    pub ca: PathBuf,
    /// Used by [`client_config`] when the file exists; an unreadable one is
    /// an error (never silently unchecked).
    pub crl: Option<PathBuf>,
}

/// A server that requires a client certificate chained to `creds.ca`.
pub fn server_config(
    creds: &Credentials,
    crls: Vec<CertificateRevocationListDer<'static>>,
) -> Result<ServerConfig, TlsError> {
    let provider = provider();
    let verifier = WebPkiClientVerifier::builder_with_provider(roots(&creds.ca)?, provider.clone())
        .with_crls(crls)
        .allow_unknown_revocation_status()
        .build()
        .map_err(|e| TlsError::Config(e.to_string()))?;
    let mut cfg = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::Config(e.to_string()))?
        .with_client_cert_verifier(verifier)
        .with_single_cert(load_certs(&creds.cert, "certificate")?, load_key(&creds.key)?)
        .map_err(|e| TlsError::Config(e.to_string()))?;
    // Never refuse a handshake over ALPN: we serve HTTP/1.0 and 1.1 alike.
    cfg.alpn_protocols = vec![b"http/1.1".to_vec(), b"http/1.0".to_vec()];
    Ok(cfg)
}

/// A server that asks for no client certificate (the certmaster, whose
/// callers have none yet), presenting `chain` (its certificate, then the CA).
pub fn server_config_open(
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
) -> Result<ServerConfig, TlsError> {
    let mut cfg = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::Config(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| TlsError::Config(e.to_string()))?;
    cfg.alpn_protocols = vec![b"http/1.1".to_vec(), b"http/1.0".to_vec()];
    Ok(cfg)
}

/// The CRL `creds` names, if that file exists (none before the CA revoked
/// anything); an unreadable one is an error.
pub fn credential_crls(creds: &Credentials) -> Result<Vec<CertificateRevocationListDer<'static>>, TlsError> {
    match &creds.crl {
        Some(path) if path.exists() => Ok(vec![load_crl(path)?]),
        _ => Ok(Vec::new()),
    }
}

/// A client presenting `creds.cert`, trusting only `creds.ca`, and
/// refusing servers whose certificate `creds.crl` revokes.
pub fn client_config(creds: &Credentials) -> Result<ClientConfig, TlsError> {
    let verifier = webpki_verifier(creds)?;
    with_verifier(creds, verifier)
}

/// [`client_config`] for talking to a service of our CA (func-api, a
/// relay): the server's certificate must also carry the service mark
/// ([`crate::identity::SERVICE_EKU_OID`]), so a minion's certificate that
/// names the same host is refused (DESIGN §9).
pub fn service_client_config(creds: &Credentials) -> Result<ClientConfig, TlsError> {
    let verifier = Arc::new(ServiceVerifier {
        inner: webpki_verifier(creds)?,
        mark: crate::identity::service_oid_string(),
    });
    let mut cfg = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::Config(e.to_string()))?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_client_auth_cert(load_certs(&creds.cert, "certificate")?, load_key(&creds.key)?)
        .map_err(|e| TlsError::Config(e.to_string()))?;
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(cfg)
}

fn webpki_verifier(creds: &Credentials) -> Result<Arc<rustls::client::WebPkiServerVerifier>, TlsError> {
    rustls::client::WebPkiServerVerifier::builder_with_provider(roots(&creds.ca)?, provider())
        .with_crls(credential_crls(creds)?)
        .allow_unknown_revocation_status()
        .build()
        .map_err(|e| TlsError::Config(e.to_string()))
}

fn with_verifier(
    creds: &Credentials,
    verifier: Arc<rustls::client::WebPkiServerVerifier>,
) -> Result<ClientConfig, TlsError> {
    let mut cfg = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::Config(e.to_string()))?
        .with_webpki_verifier(verifier)
        .with_client_auth_cert(load_certs(&creds.cert, "certificate")?, load_key(&creds.key)?)
        .map_err(|e| TlsError::Config(e.to_string()))?;
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(cfg)
}

/// The CA's chain, name and revocation checks, then the service mark.
#[derive(Debug)]
struct ServiceVerifier {
    inner: Arc<rustls::client::WebPkiServerVerifier>,
    mark: String,
}

impl rustls::client::danger::ServerCertVerifier for ServiceVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &rustls::pki_types::ServerName<'_>,
        ocsp: &[u8],
        now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        let verified = self
            .inner
            .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)?;
        if !crate::identity::has_eku_mark(end_entity.as_ref(), &self.mark) {
            return Err(rustls::Error::General(
                "the certificate is not a service's of our CA (no service mark): a minion's certificate cannot stand for a relay or func-api".into(),
            ));
        }
        Ok(verified)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}
