//! The CA: creation, loading, and signing under a fixed policy.
//!
//! A CSR only contributes its public key and its common name. Everything else
//! (validity, serial, CA flag, key usages, EKUs, SAN) is set here, so a
//! request can never obtain CA rights or the overlord mark.

use rcgen::{
    BasicConstraints, CertificateParams, CertificateSigningRequestParams, DistinguishedName, DnType,
    ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair, KeyUsagePurpose, SerialNumber,
};
use ring::rand::{SecureRandom, SystemRandom};
use time::{Duration, OffsetDateTime};
use x509_parser::prelude::{FromDer, X509Certificate};

use crate::{CertError, Result};

/// Validity of minion and overlord certificates (Func: 10 years).
const LEAF_DAYS: i64 = 3650;
/// Validity of the CA certificate.
const CA_DAYS: i64 = 7300;

/// A loaded CA: its certificate (PEM) and an issuer holding its key.
pub struct Authority {
    cert_pem: String,
    issuer: Issuer<'static, KeyPair>,
}

/// A certificate the CA issued.
#[derive(Debug, Clone)]
pub struct Signed {
    pub name: String,
    pub cert_pem: String,
    /// Serial number, big-endian bytes.
    pub serial: Vec<u8>,
}

impl Authority {
    /// Creates a new self-signed CA named `cn`. Returns the CA and its key PEM.
    pub fn create(cn: &str) -> Result<(Self, String)> {
        let key = KeyPair::generate()?;
        let mut params = CertificateParams::default();
        params.distinguished_name = DistinguishedName::new();
        params.distinguished_name.push(DnType::CommonName, cn);
        params
            .distinguished_name
            .push(DnType::OrganizationName, "certmaster");
        params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        set_validity(&mut params, CA_DAYS);
        params.serial_number = Some(random_serial()?);
        let cert = params.self_signed(&key)?;
        let key_pem = key.serialize_pem();
        let issuer = Issuer::new(params, key);
        Ok((
            Self {
                cert_pem: cert.pem(),
                issuer,
            },
            key_pem,
        ))
    }

    /// Loads a CA from its certificate and key PEM.
    pub fn load(cert_pem: &str, key_pem: &str) -> Result<Self> {
        let key = KeyPair::from_pem(key_pem)?;
        let issuer = Issuer::from_ca_cert_pem(cert_pem, key)?;
        Ok(Self {
            cert_pem: cert_pem.to_string(),
            issuer,
        })
    }

    /// The CA certificate, PEM.
    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    /// Signs a minion's CSR under the fixed policy. The name is the CSR's CN,
    /// which must be a plain host name.
    pub fn sign_csr(&self, csr_pem: &str) -> Result<Signed> {
        let csr = CertificateSigningRequestParams::from_pem(csr_pem).map_err(|_| CertError::BadRequest)?;
        let name = csr_common_name(&csr)?;
        let params = leaf_params(
            &name,
            &[
                ExtendedKeyUsagePurpose::ServerAuth,
                ExtendedKeyUsagePurpose::ClientAuth,
            ],
        )?;
        self.sign(name, params, &csr.public_key)
    }

    /// Issues the certmaster's own TLS server certificate (server auth only).
    pub fn issue_server(&self, name: &str, key: &KeyPair) -> Result<Signed> {
        let params = leaf_params(name, &[ExtendedKeyUsagePurpose::ServerAuth])?;
        self.sign(name.to_string(), params, key)
    }

    /// Issues a TLS server certificate for a service on this host (func-api,
    /// a relay): CN `names[0]`, every name a subject alternative name (an IP
    /// address becomes an IP SAN), and the service mark, which clients of a
    /// service require and no minion certificate has.
    pub fn issue_service(&self, names: &[String], key: &KeyPair) -> Result<Signed> {
        let first = names.first().cloned().unwrap_or_else(|| "localhost".into());
        let purposes = [
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::Other(common::identity::SERVICE_EKU_OID.to_vec()),
        ];
        let mut params = leaf_params(&first, &purposes)?;
        params.subject_alt_names = names
            .iter()
            .map(|n| match n.parse::<std::net::IpAddr>() {
                Ok(ip) => Ok(rcgen::SanType::IpAddress(ip)),
                Err(_) => n.clone().try_into().map(rcgen::SanType::DnsName),
            })
            .collect::<std::result::Result<_, _>>()?;
        self.sign(first, params, key)
    }

    /// A CRL listing `revoked` (serial, revocation time), PEM. Its CRL
    /// number is the time in ns, and always above `previous` (the number of
    /// the CRL it replaces): minions refuse a CRL numbered lower than theirs.
    pub fn crl(&self, revoked: &[(Vec<u8>, OffsetDateTime)], previous: Option<u128>) -> Result<String> {
        let now = OffsetDateTime::now_utc();
        let number = u128::try_from(now.unix_timestamp_nanos())
            .unwrap_or(0)
            .max(previous.map_or(0, |p| p.saturating_add(1)));
        let params = rcgen::CertificateRevocationListParams {
            this_update: now - Duration::minutes(5),
            next_update: now + Duration::days(365),
            crl_number: SerialNumber::from_slice(&number.to_be_bytes()[4..]),
            issuing_distribution_point: None,
            revoked_certs: revoked
                .iter()
                .map(|(serial, at)| rcgen::RevokedCertParams {
                    serial_number: SerialNumber::from_slice(serial),
                    revocation_time: *at,
                    reason_code: None,
                    invalidity_date: None,
                })
                .collect(),
            key_identifier_method: rcgen::KeyIdMethod::Sha256,
        };
        Ok(params.signed_by(&self.issuer)?.pem()?)
    }

    /// Issues the overlord's client certificate for `key`: client auth plus the
    /// overlord mark, which no CSR can obtain.
    pub fn issue_overlord(&self, name: &str, key: &KeyPair) -> Result<Signed> {
        let purposes = [
            ExtendedKeyUsagePurpose::ClientAuth,
            ExtendedKeyUsagePurpose::Other(common::identity::OVERLORD_EKU_OID.to_vec()),
        ];
        let params = leaf_params(name, &purposes)?;
        self.sign(name.to_string(), params, key)
    }

    /// Issues a relay's own overlord certificate for `key`: client auth, the
    /// overlord mark (the relay calls its segment's minions) and the relay
    /// mark (no relay runs a request a relay signed), CN `name`.
    pub fn issue_relay(&self, name: &str, key: &KeyPair) -> Result<Signed> {
        let purposes = [
            ExtendedKeyUsagePurpose::ClientAuth,
            ExtendedKeyUsagePurpose::Other(common::identity::OVERLORD_EKU_OID.to_vec()),
            ExtendedKeyUsagePurpose::Other(common::identity::RELAY_EKU_OID.to_vec()),
        ];
        let params = leaf_params(name, &purposes)?;
        self.sign(name.to_string(), params, key)
    }

    fn sign(
        &self,
        name: String,
        params: CertificateParams,
        key: &impl rcgen::PublicKeyData,
    ) -> Result<Signed> {
        let serial = params
            .serial_number
            .as_ref()
            .map(|s| s.to_bytes())
            .unwrap_or_default();
        let cert = params.signed_by(key, &self.issuer)?;
        Ok(Signed {
            name,
            cert_pem: cert.pem(),
            serial,
        })
    }
}

/// The common name a CSR asks for, if it is a plain host name.
pub fn csr_name(csr_pem: &str) -> Result<String> {
    let csr = CertificateSigningRequestParams::from_pem(csr_pem).map_err(|_| CertError::BadRequest)?;
    csr_common_name(&csr)
}

/// A CSR's name (a plain host name) and raw public key; the signature is checked.
pub fn csr_info(csr_pem: &str) -> Result<(String, Vec<u8>)> {
    use rcgen::PublicKeyData;
    let csr = CertificateSigningRequestParams::from_pem(csr_pem).map_err(|_| CertError::BadRequest)?;
    Ok((csr_common_name(&csr)?, csr.public_key.der_bytes().to_vec()))
}

/// The fingerprint an administrator compares before signing: SHA-256 of the
/// request's public key, as OpenSSL prints digests (`AB:CD:...`). funcd logs
/// it for its own key; `certmaster-ca --list` shows it for each request.
pub fn key_fingerprint(public_key: &[u8]) -> String {
    common::identity::fingerprint_sha256(public_key)
}

/// The subject CN of a PEM certificate.
pub fn cert_common_name(cert_pem: &str) -> Result<String> {
    let der = rustls_pem::first_der(cert_pem).ok_or(CertError::BadCertificate)?;
    common::identity::PeerIdentity::from_der(&der)
        .map(|id| id.cn)
        .map_err(|_| CertError::BadCertificate)
}

/// The raw public key of a PEM certificate (comparable with [`csr_info`]'s).
pub fn cert_public_key(cert_pem: &str) -> Result<Vec<u8>> {
    let der = rustls_pem::first_der(cert_pem).ok_or(CertError::BadCertificate)?;
    let (_, cert) = X509Certificate::from_der(&der).map_err(|_| CertError::BadCertificate)?;
    Ok(cert.public_key().subject_public_key.data.to_vec())
}

/// The CRL number of a PEM CRL (0 when it has none), and its `thisUpdate`
/// as a Unix time; `None` if it cannot be parsed.
pub fn crl_order(pem: &str) -> Option<(u128, i64)> {
    let der = rustls_pem::first_der(pem)?;
    let (_, crl) = x509_parser::revocation_list::CertificateRevocationList::from_der(&der).ok()?;
    let number = crl
        .crl_number()
        .map(|n| n.to_bytes_be())
        .filter(|b| b.len() <= 16)
        .map(|b| b.iter().fold(0u128, |acc, x| (acc << 8) | u128::from(*x)))
        .unwrap_or(0);
    Some((number, crl.last_update().timestamp()))
}

/// Whether the PEM CRL `crl` lists the serial of the PEM certificate `cert`.
pub fn crl_revokes(crl: &str, cert: &str) -> bool {
    let (Some(der), Ok(serial)) = (rustls_pem::first_der(crl), cert_serial(cert)) else {
        return false;
    };
    x509_parser::revocation_list::CertificateRevocationList::from_der(&der).is_ok_and(|(_, crl)| {
        crl.iter_revoked_certificates()
            .any(|r| r.raw_serial() == serial.as_slice())
    })
}

/// DER bytes of the first PEM block of `pem`.
pub fn pem_to_der(pem: &str) -> Option<Vec<u8>> {
    rustls_pem::first_der(pem)
}

/// The name a request asks for, as it spells it (validated): compared with
/// the names already enrolled to refuse one that differs only in case.
pub fn csr_requested_name(csr_pem: &str) -> Result<String> {
    let csr = CertificateSigningRequestParams::from_pem(csr_pem).map_err(|_| CertError::BadRequest)?;
    csr_spelled_name(&csr)
}

/// The canonical (lower-case) name a request is signed for.
fn csr_common_name(csr: &CertificateSigningRequestParams) -> Result<String> {
    // One canonical name (DESIGN §5): host names ignore case, so the
    // certificate, its files and every list name the lower-case form.
    Ok(csr_spelled_name(csr)?.to_ascii_lowercase())
}

fn csr_spelled_name(csr: &CertificateSigningRequestParams) -> Result<String> {
    let name = dn_text(csr.params.distinguished_name.get(&DnType::CommonName)).ok_or(CertError::NoName)?;
    if !common::identity::is_valid_host_name(&name) {
        return Err(CertError::BadName(common::paths::shorten(&name)));
    }
    if is_reserved_name(&name) {
        return Err(CertError::Reserved(name));
    }
    if is_ip_literal(&name) {
        return Err(CertError::IpLiteral(name));
    }
    Ok(name)
}

/// Whether `name` reads as an IPv4 address in any of the forms resolvers
/// accept (`127.0.0.1`, `127.1`, `2130706433`): only digits and dots. A
/// minion named so would be taken for whatever listens at that address.
pub fn is_ip_literal(name: &str) -> bool {
    let name = name.strip_suffix('.').unwrap_or(name);
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_digit() || b == b'.')
}

/// Names no minion may get, in any letter case (host names ignore case):
/// `certmaster` is what minions check the CA's server by, `overlord` is the
/// identity of the administrator's certificate in ACL keys, audit lines and
/// job ownership, and `localhost` is never a remote host.
pub const RESERVED_NAMES: [&str; 3] = ["certmaster", "overlord", "localhost"];

/// Whether `name` is one of [`RESERVED_NAMES`] (ignoring case and a trailing dot).
pub fn is_reserved_name(name: &str) -> bool {
    let name = name.strip_suffix('.').unwrap_or(name);
    RESERVED_NAMES.iter().any(|r| r.eq_ignore_ascii_case(name))
}

fn dn_text(v: Option<&rcgen::DnValue>) -> Option<String> {
    match v? {
        rcgen::DnValue::Utf8String(s) => Some(s.clone()),
        rcgen::DnValue::PrintableString(s) => Some(s.as_str().to_string()),
        rcgen::DnValue::Ia5String(s) => Some(s.as_str().to_string()),
        rcgen::DnValue::TeletexString(s) => Some(s.as_str().to_string()),
        _ => None,
    }
}

fn leaf_params(name: &str, purposes: &[ExtendedKeyUsagePurpose]) -> Result<CertificateParams> {
    let mut params = CertificateParams::new(vec![name.to_string()])?;
    params.distinguished_name = DistinguishedName::new();
    params.distinguished_name.push(DnType::CommonName, name);
    params.is_ca = IsCa::ExplicitNoCa;
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = purposes.to_vec();
    params.use_authority_key_identifier_extension = true;
    params.serial_number = Some(random_serial()?);
    set_validity(&mut params, LEAF_DAYS);
    Ok(params)
}

fn set_validity(params: &mut CertificateParams, days: i64) {
    let now = OffsetDateTime::now_utc();
    params.not_before = now - Duration::hours(1);
    params.not_after = now + Duration::days(days);
}

fn random_serial() -> Result<SerialNumber> {
    let mut bytes = [0u8; 16];
    SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| CertError::Rcgen(rcgen::Error::RingUnspecified))?;
    bytes[0] &= 0x7f;
    bytes[0] |= 0x01; // never a leading zero byte, so the DER length is stable
    Ok(SerialNumber::from_slice(&bytes))
}

/// Serial number (big-endian) of a PEM certificate.
pub fn cert_serial(cert_pem: &str) -> Result<Vec<u8>> {
    let der = rustls_pem::first_der(cert_pem).ok_or(CertError::BadCertificate)?;
    let (_, cert) = X509Certificate::from_der(&der).map_err(|_| CertError::BadCertificate)?;
    Ok(cert.raw_serial().to_vec())
}

mod rustls_pem {
    /// DER bytes of the first PEM block.
    pub(super) fn first_der(pem: &str) -> Option<Vec<u8>> {
        let parsed = x509_parser::pem::Pem::iter_from_buffer(pem.as_bytes())
            .next()?
            .ok()?;
        Some(parsed.contents)
    }
}
