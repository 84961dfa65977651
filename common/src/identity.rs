//! Who a certificate names: its subject CN, the OpenSSL subject-name hash Func
//! uses in ACL keys (`<cn>-<hash>`, printed in decimal as pyOpenSSL did), and
//! whether it carries the overlord mark that only the CA sets.

use x509_parser::prelude::{FromDer, X509Certificate};

/// Extended-key-usage purpose that marks the overlord's client certificate.
/// It lives under the `2.25` arc (ITU-T X.667: OIDs anyone may derive from a
/// UUID, no registration); the certmaster never copies EKUs from a request,
/// so a CSR cannot obtain it.
pub const OVERLORD_EKU_OID: &[u64] = &[2, 25, 319_420_217_785_612_201];

/// Extended-key-usage purpose that marks a service's server certificate
/// (func-api, a relay): a client talking to a service requires it, so a
/// minion's certificate (which never has it: the certmaster never copies
/// EKUs from a request) cannot pass for a relay or for func-api.
pub const SERVICE_EKU_OID: &[u64] = &[2, 25, 319_420_217_785_612_202];

/// Extended-key-usage purpose that marks a relay's own overlord
/// certificate (DESIGN §17): with the overlord mark, so that the relay
/// calls its segment's minions, and this one, so that no other relay runs
/// a request it signed (authority stays with the top overlord).
pub const RELAY_EKU_OID: &[u64] = &[2, 25, 319_420_217_785_612_203];

/// Dotted form of [`RELAY_EKU_OID`].
pub fn relay_oid_string() -> String {
    dotted(RELAY_EKU_OID)
}

/// Dotted form of [`OVERLORD_EKU_OID`].
pub fn overlord_oid_string() -> String {
    dotted(OVERLORD_EKU_OID)
}

/// Dotted form of [`SERVICE_EKU_OID`].
pub fn service_oid_string() -> String {
    dotted(SERVICE_EKU_OID)
}

fn dotted(oid: &[u64]) -> String {
    oid.iter().map(u64::to_string).collect::<Vec<_>>().join(".")
}

/// Whether the DER certificate carries the extended-key-usage mark `dotted_oid`.
pub fn has_eku_mark(der: &[u8], dotted_oid: &str) -> bool {
    X509Certificate::from_der(der)
        .ok()
        .and_then(|(_, cert)| eku_marks(&cert, dotted_oid))
        .unwrap_or(false)
}

fn eku_marks(cert: &X509Certificate<'_>, dotted_oid: &str) -> Option<bool> {
    let eku = cert.extended_key_usage().ok().flatten()?;
    Some(eku.value.other.iter().any(|oid| oid.to_id_string() == dotted_oid))
}

/// The identity a peer certificate asserts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerIdentity {
    /// Subject common name.
    pub cn: String,
    /// OpenSSL `X509_subject_name_hash` of the subject.
    pub subject_hash: u32,
    /// Whether the certificate carries the overlord EKU mark.
    pub overlord: bool,
}

impl PeerIdentity {
    /// Reads the identity from a DER certificate.
    pub fn from_der(der: &[u8]) -> Result<Self, IdentityError> {
        let (_, cert) = X509Certificate::from_der(der).map_err(|_| IdentityError::Unparsable)?;
        let cn = cert
            .subject()
            .iter_common_name()
            .next()
            .and_then(|a| a.as_str().ok())
            .ok_or(IdentityError::NoCommonName)?
            .to_string();
        let overlord = eku_marks(&cert, &overlord_oid_string()).unwrap_or(false);
        Ok(Self {
            cn,
            subject_hash: subject_name_hash(&cert),
            overlord,
        })
    }

    /// Func's ACL key: `<cn>-<subject hash in decimal>`.
    pub fn acl_key(&self) -> String {
        format!("{}-{}", self.cn, self.subject_hash)
    }
}

/// Whether `name` is a plain host name that may name a minion: 1 to 253
/// characters of letters, digits, `-`, `_` and `.`, no empty label, no label
/// starting with `-`. This keeps names safe as file names (`<name>.cert`).
pub fn is_valid_host_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
}

/// SHA-256 fingerprint of a DER certificate as OpenSSL prints it
/// (`openssl x509 -noout -fingerprint -sha256`): upper-case hex pairs joined by `:`.
pub fn fingerprint_sha256(der: &[u8]) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, der);
    digest
        .as_ref()
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// Whether two fingerprints are equal, ignoring case, `:` and an optional
/// `sha256:`/`SHA256 `/`SHA256 Fingerprint=` prefix, so a value pasted from
/// OpenSSL or from the certmaster's start-up line matches.
pub fn fingerprints_match(a: &str, b: &str) -> bool {
    let norm = |s: &str| -> String {
        let s = s.trim();
        let s = s.rsplit('=').next().unwrap_or(s).trim();
        // As the certmaster prints it ("SHA256 2A:..."), or "sha256:2A...".
        let s = match s.get(..6) {
            Some(head) if head.eq_ignore_ascii_case("sha256") => s[6..].trim_start_matches([':', ' ', '\t']),
            _ => s,
        };
        s.chars()
            .filter(|c| c.is_ascii_hexdigit())
            .map(|c| c.to_ascii_uppercase())
            .collect()
    };
    let (a, b) = (norm(a), norm(b));
    a.len() == 64 && a == b
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum IdentityError {
    #[error("certificate cannot be parsed")]
    Unparsable,
    #[error("certificate subject has no common name")]
    NoCommonName,
}

/// OpenSSL's `X509_NAME_hash` (SHA-1 based, OpenSSL ≥ 1.0): SHA-1 over the
/// canonical encoding of the subject, first four bytes as a little-endian u32.
///
/// The canonical encoding (`x509_name_canon`) is every RDN as a DER `SET` of
/// `SEQUENCE { type, UTF8String value }` where string values are trimmed, have
/// inner whitespace runs folded to one space and ASCII lower-cased; the SETs
/// are concatenated without the outer `SEQUENCE` header.
pub fn subject_name_hash(cert: &X509Certificate<'_>) -> u32 {
    let mut canon = Vec::new();
    for rdn in cert.subject().iter() {
        let mut entries: Vec<Vec<u8>> = rdn
            .iter()
            .map(|atv| {
                let mut oid = Vec::new();
                der_tlv(&mut oid, 0x06, atv.attr_type().as_bytes());
                let value = match atv.as_str() {
                    Ok(s) => {
                        let mut v = Vec::new();
                        der_tlv(&mut v, 0x0c, canonical_string(s).as_bytes());
                        v
                    }
                    Err(_) => {
                        let mut v = Vec::new();
                        let tag = u8::try_from(atv.attr_value().tag().0).unwrap_or(0x04) & 0x1f;
                        der_tlv(&mut v, tag, atv.as_slice());
                        v
                    }
                };
                let mut seq = Vec::new();
                der_tlv(&mut seq, 0x30, &[oid, value].concat());
                seq
            })
            .collect();
        entries.sort();
        der_tlv(&mut canon, 0x31, &entries.concat());
    }
    let digest = ring::digest::digest(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY, &canon);
    let d = digest.as_ref();
    u32::from_le_bytes([d[0], d[1], d[2], d[3]])
}

/// OpenSSL's `asn1_string_canon` for an already-UTF-8 value.
fn canonical_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut pending_space = false;
    for c in s.trim_matches(is_c_space).chars() {
        if is_c_space(c) {
            pending_space = true;
            continue;
        }
        if pending_space {
            out.push(' ');
            pending_space = false;
        }
        out.push(c.to_ascii_lowercase());
    }
    out
}

fn is_c_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\x0b' | '\x0c' | '\r')
}

fn der_tlv(out: &mut Vec<u8>, tag: u8, content: &[u8]) {
    out.push(tag);
    let len = content.len();
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes = len.to_be_bytes();
        let first = bytes.iter().position(|b| *b != 0).unwrap_or(bytes.len() - 1);
        out.push(0x80 | (bytes.len() - first) as u8);
        out.extend_from_slice(&bytes[first..]);
    }
    out.extend_from_slice(content);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_strings_fold_case_and_space() {
        assert_eq!(canonical_string("  Web1.Example.COM "), "web1.example.com");
        assert_eq!(canonical_string("a \t\n b"), "a b");
    }

    #[test]
    fn host_names() {
        for ok in ["m1", "web-1.example.com", "db_2", "127.0.0.1", &"a".repeat(63)] {
            assert!(is_valid_host_name(ok), "{ok}");
        }
        for bad in [
            "",
            "a/b",
            "..",
            "a..b",
            ".a",
            "-a",
            "a b",
            "a\0",
            &"a".repeat(64),
            &format!("{}.b", "a.".repeat(130)),
        ] {
            assert!(!is_valid_host_name(bad), "{bad}");
        }
    }

    #[test]
    fn fingerprints_compare_loosely() {
        let fp = fingerprint_sha256(b"x");
        assert_eq!(fp.len(), 95);
        assert!(fingerprints_match(&fp, &fp.replace(':', "").to_lowercase()));
        assert!(fingerprints_match(&format!("sha256 Fingerprint={fp}"), &fp));
        assert!(
            fingerprints_match(&format!("SHA256 {fp}"), &fp),
            "as the certmaster prints it"
        );
        assert!(fingerprints_match(&format!("sha256:{fp}"), &fp));
        assert!(!fingerprints_match(&fp, &fingerprint_sha256(b"y")));
        assert!(!fingerprints_match("", ""));
    }

    #[test]
    fn long_der_lengths() {
        let mut out = Vec::new();
        der_tlv(&mut out, 0x04, &[0u8; 300]);
        assert_eq!(&out[..4], &[0x04, 0x82, 0x01, 0x2c]);
    }

    #[test]
    fn garbage_is_an_error() {
        assert_eq!(
            PeerIdentity::from_der(b"not a cert"),
            Err(IdentityError::Unparsable)
        );
    }
}
