//! A minion's side of enrollment: an ECDSA P-256 key (P-256 because OpenSSL
//! 3.0, hence Python's `ssl`, cannot load rcgen's Ed25519 PKCS#8 v2 keys) and
//! a CSR whose CN and SAN are the minion's name.

use rcgen::{CertificateParams, DistinguishedName, DnType, KeyPair};

use crate::{CertError, Result};

/// A fresh private key, as PEM.
pub fn new_key() -> Result<KeyPair> {
    Ok(KeyPair::generate()?)
}

/// Loads a PEM private key.
pub fn load_key(pem: &str) -> Result<KeyPair> {
    Ok(KeyPair::from_pem(pem)?)
}

/// A PEM CSR for `name`, signed by `key`.
pub fn csr(name: &str, key: &KeyPair) -> Result<String> {
    if !common::identity::is_valid_host_name(name) {
        return Err(CertError::BadName(common::paths::shorten(name)));
    }
    let mut params = CertificateParams::new(vec![name.to_string()])?;
    params.distinguished_name = DistinguishedName::new();
    params.distinguished_name.push(DnType::CommonName, name);
    Ok(params.serialize_request(key)?.pem()?)
}
