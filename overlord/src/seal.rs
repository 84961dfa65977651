//! Signed job requests (DESIGN §9): the job store is data, not authority.
//! When a job or batch is accepted, its request — id, SPEC, function,
//! arguments, hosts, caller and the caller's rights — is signed with the
//! overlord's key ([`Signer::seal`]); every driver verifies it
//! ([`verify`]) against an overlord certificate of our CA (chained to the
//! CA, not revoked, carrying the overlord mark) before it sends anything.
//! So whoever can write the store (a database role, a second overlord, a
//! man in the middle) cannot change what runs, where, or as whom: a
//! rewritten function, an added host or a forged job is refused.
//!
//! Only ECDSA P-256 keys are used (the certmaster issues nothing else).

use std::collections::BTreeSet;
use std::sync::Arc;

use base64::Engine as _;
use common::paths::Root;
use common::tls::Credentials;
use ring::signature::{self, EcdsaKeyPair, KeyPair as _};
use serde::Serialize;

use crate::store::{JobMeta, Seal};

/// Why a request cannot be trusted, or cannot be signed.
#[derive(Debug, thiserror::Error)]
pub enum SealError {
    #[error("the job request is not signed")]
    Unsigned,
    #[error("the job request's signature is malformed: {0}")]
    Malformed(String),
    #[error("the job request was not signed by an overlord certificate of this CA: {0}")]
    Signer(String),
    #[error(
        "the job request's signature does not match what the store holds (changed after it was accepted)"
    )]
    Mismatch,
    #[error("the store lists hosts the signed request does not name: {0}")]
    ExtraHosts(String),
    #[error("cannot sign with the overlord key: {0}")]
    Key(String),
}

/// The fields that decide what runs, where and as whom, in a fixed order.
#[derive(Serialize)]
struct Signed<'a> {
    v: u32,
    id: &'a str,
    spec: &'a str,
    function: &'a str,
    args: &'a [String],
    typed_args: Option<&'a str>,
    user: &'a str,
    rights: Option<&'a [String]>,
    batch: bool,
    hosts: Vec<&'a str>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    delegate: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    schedule: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    rerun_of: Option<&'a str>,
}

/// The bytes signed for `meta` on `hosts` (sorted, so order does not matter).
pub fn signed_bytes(meta: &JobMeta, hosts: &[String]) -> Vec<u8> {
    let mut hosts: Vec<&str> = hosts.iter().map(String::as_str).collect();
    hosts.sort_unstable();
    hosts.dedup();
    let doc = Signed {
        v: 1,
        id: &meta.id,
        spec: &meta.spec,
        function: &meta.function,
        args: &meta.args,
        typed_args: meta.typed_args.as_deref(),
        user: &meta.user,
        rights: meta.rights.as_deref(),
        batch: meta.batch,
        hosts,
        delegate: meta.delegate,
        schedule: meta.schedule.as_deref(),
        rerun_of: meta.rerun_of.as_deref(),
    };
    let mut out = b"func-job-request\n".to_vec();
    out.extend(serde_json::to_vec(&doc).unwrap_or_default());
    out
}

/// The identity of `meta`'s signed request, as minions are told it
/// (`X-Func-Request`): the hex SHA-256 of its signature. `None`: unsigned.
pub fn request_id(meta: &JobMeta) -> Option<String> {
    let seal = meta.seal.as_ref()?;
    let digest = ring::digest::digest(&ring::digest::SHA256, seal.sig.as_bytes());
    Some(digest.as_ref().iter().map(|b| format!("{b:02x}")).collect())
}

/// The overlord's key, ready to sign requests.
pub struct Signer {
    key: EcdsaKeyPair,
    cert: String,
    rng: ring::rand::SystemRandom,
}

impl Signer {
    /// Loads the overlord's key and certificate below `root`.
    pub fn load(root: &Root) -> Result<Self, SealError> {
        Self::from(&crate::settings::credentials(root))
    }

    fn from(creds: &Credentials) -> Result<Self, SealError> {
        let key = common::tls::load_key(&creds.key).map_err(|e| SealError::Key(e.to_string()))?;
        let rng = ring::rand::SystemRandom::new();
        let key =
            EcdsaKeyPair::from_pkcs8(&signature::ECDSA_P256_SHA256_ASN1_SIGNING, key.secret_der(), &rng)
                .map_err(|e| SealError::Key(format!("not an ECDSA P-256 key in PKCS#8: {e}")))?;
        let cert = common::tls::load_certs(&creds.cert, "certificate")
            .map_err(|e| SealError::Key(e.to_string()))?
            .into_iter()
            .next()
            .ok_or_else(|| SealError::Key("no certificate".into()))?;
        let spki = public_key(&cert).map_err(SealError::Key)?;
        if spki != key.public_key().as_ref() {
            return Err(SealError::Key(
                "the key does not match the overlord certificate".into(),
            ));
        }
        Ok(Signer {
            key,
            cert: base64::engine::general_purpose::STANDARD.encode(cert.as_ref()),
            rng,
        })
    }

    /// Signs `meta` (its id set) on `hosts`, setting `meta.seal`.
    pub fn seal(&self, meta: &mut JobMeta, hosts: &[String]) {
        meta.seal = self.sign(&signed_bytes(meta, hosts));
    }

    /// Signs `bytes` (a request of another kind: a relay's, `relay/request.rs`).
    pub fn sign(&self, bytes: &[u8]) -> Option<Seal> {
        self.key.sign(&self.rng, bytes).ok().map(|sig| Seal {
            cert: self.cert.clone(),
            sig: base64::engine::general_purpose::STANDARD.encode(sig.as_ref()),
        })
    }
}

/// Checks that `bytes` were signed (`seal`) by an overlord certificate of
/// the CA below `root`, not revoked.
pub fn verify_bytes(root: &Root, seal: &Seal, bytes: &[u8]) -> Result<(), SealError> {
    check_seal(&crate::settings::credentials(root), seal, bytes)
}

/// Checks that `meta`'s request, on the store's `hosts`, was signed by an
/// overlord certificate of the CA below `root` (not revoked by its CRL).
pub fn verify(root: &Root, meta: &JobMeta, hosts: &[String]) -> Result<(), SealError> {
    verify_with(&crate::settings::credentials(root), meta, hosts)
}

fn verify_with(creds: &Credentials, meta: &JobMeta, hosts: &[String]) -> Result<(), SealError> {
    let seal = meta.seal.as_ref().ok_or(SealError::Unsigned)?;
    check_seal(creds, seal, &signed_bytes(meta, hosts))
}

fn check_seal(creds: &Credentials, seal: &Seal, bytes: &[u8]) -> Result<(), SealError> {
    let b64 = base64::engine::general_purpose::STANDARD;
    let cert = b64
        .decode(&seal.cert)
        .map_err(|e| SealError::Malformed(e.to_string()))?;
    let sig = b64
        .decode(&seal.sig)
        .map_err(|e| SealError::Malformed(e.to_string()))?;
    check_signer(creds, &cert)?;
    let public = public_key(&cert).map_err(SealError::Malformed)?;
    signature::UnparsedPublicKey::new(&signature::ECDSA_P256_SHA256_ASN1, public)
        .verify(bytes, &sig)
        .map_err(|_| SealError::Mismatch)
}

/// Whether `seal` was made with a relay's own key (its certificate has the
/// relay mark): such a signature is worth the relay's segment only.
pub fn signer_is_relay(seal: &Seal) -> bool {
    base64::engine::general_purpose::STANDARD
        .decode(&seal.cert)
        .is_ok_and(|der| common::identity::has_eku_mark(&der, &common::identity::relay_oid_string()))
}

/// Whether `seal` was made with this root's own overlord key (its
/// certificate is the root's): what a warm func of the root signs.
pub fn signed_here(root: &Root, seal: &Seal) -> bool {
    let creds = crate::settings::credentials(root);
    let Some(own) = common::tls::load_certs(&creds.cert, "certificate")
        .ok()
        .and_then(|c| c.into_iter().next())
    else {
        return false;
    };
    base64::engine::general_purpose::STANDARD
        .decode(&seal.cert)
        .is_ok_and(|der| der == own.as_ref())
}

/// This overlord's own name when it is a relay: its certificate's CN, if
/// the certificate carries the relay mark (`certmaster-ca --relay`).
pub fn relay_name(root: &Root) -> Option<String> {
    let creds = crate::settings::credentials(root);
    let der = common::tls::load_certs(&creds.cert, "certificate")
        .ok()?
        .into_iter()
        .next()?;
    if !common::identity::has_eku_mark(der.as_ref(), &common::identity::relay_oid_string()) {
        return None;
    }
    common::identity::PeerIdentity::from_der(der.as_ref())
        .ok()
        .map(|id| id.cn)
}

/// The public key (the subject's key bits) of certificate `der`.
fn public_key(der: &[u8]) -> Result<Vec<u8>, String> {
    let (_, cert) = x509_parser::parse_x509_certificate(der).map_err(|e| e.to_string())?;
    Ok(cert.public_key().subject_public_key.data.to_vec())
}

/// The certificate chains to our CA, is not revoked, and has the overlord mark.
fn check_signer(creds: &Credentials, der: &[u8]) -> Result<(), SealError> {
    let id = common::identity::PeerIdentity::from_der(der).map_err(|e| SealError::Signer(e.to_string()))?;
    if !id.overlord {
        return Err(SealError::Signer(format!("{} carries no overlord mark", id.cn)));
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    for ca in
        common::tls::load_certs(&creds.ca, "CA certificate").map_err(|e| SealError::Signer(e.to_string()))?
    {
        roots.add(ca).map_err(|e| SealError::Signer(e.to_string()))?;
    }
    let crls = common::tls::credential_crls(creds).map_err(|e| SealError::Signer(e.to_string()))?;
    let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
        .with_crls(crls)
        .allow_unknown_revocation_status()
        .build()
        .map_err(|e| SealError::Signer(e.to_string()))?;
    let cert = rustls_pki_types::CertificateDer::from(der.to_vec());
    verifier
        .verify_client_cert(&cert, &[], rustls_pki_types::UnixTime::now())
        .map(|_| ())
        .map_err(|e| SealError::Signer(e.to_string()))
}

/// Hosts in `listed` that the signed request does not name (a store that
/// added hosts to a job or batch).
pub fn unsigned_hosts<'a>(signed: &[String], listed: impl IntoIterator<Item = &'a String>) -> Vec<String> {
    let signed: BTreeSet<&String> = signed.iter().collect();
    listed
        .into_iter()
        .filter(|h| !signed.contains(h))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signed_bytes_ignore_host_order_but_not_the_function() {
        let mut meta = crate::store::JobMeta::new_call("*", "test.ping", vec![], None, 2, (1.0, 1), false);
        meta.id = "x".into();
        let a = signed_bytes(&meta, &["b".into(), "a".into()]);
        assert_eq!(a, signed_bytes(&meta, &["a".into(), "b".into()]));
        meta.function = "command.run".into();
        assert_ne!(a, signed_bytes(&meta, &["a".into(), "b".into()]));
    }
}
