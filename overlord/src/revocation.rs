//! Which certificates are revoked, for the overlord's checks of minions and
//! of signed job requests: the CA's CRL in the root
//! (`etc/pki/certmaster/ca/certmaster.crl`, or the minion-side copy).
//! A CRL is signed by the CA, so a copy from anywhere is checked the same.

use common::tls::Credentials;
use rustls_pki_types::CertificateRevocationListDer;

/// The CRLs to check against (none if the CA has revoked nothing yet).
pub fn crls(creds: &Credentials) -> Vec<CertificateRevocationListDer<'static>> {
    creds
        .crl
        .as_deref()
        .filter(|p| p.exists())
        .and_then(|p| common::tls::load_crl(p).ok())
        .into_iter()
        .collect()
}
