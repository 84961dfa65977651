//! Signing policy: what a CSR asks for never reaches the certificate.

use certs::{authority::csr_name, request, Authority, CertError};
use common::identity::PeerIdentity;
use rcgen::{BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa};
use x509_parser::prelude::{FromDer, X509Certificate};

fn der(pem: &str) -> Vec<u8> {
    x509_parser::pem::Pem::iter_from_buffer(pem.as_bytes())
        .next()
        .unwrap()
        .unwrap()
        .contents
}

#[test]
fn csr_asking_for_ca_and_overlord_gets_neither() {
    let (ca, _) = Authority::create("test-CA").unwrap();
    let key = request::new_key().unwrap();
    let mut params = CertificateParams::new(vec!["evil".to_string()]).unwrap();
    params.distinguished_name = DistinguishedName::new();
    params.distinguished_name.push(DnType::CommonName, "evil");
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let csr = params.serialize_request(&key).unwrap().pem().unwrap();
    let signed = ca.sign_csr(&csr).unwrap();
    let der = der(&signed.cert_pem);
    let (_, cert) = X509Certificate::from_der(&der).unwrap();
    assert!(!cert.is_ca());
    let id = PeerIdentity::from_der(&der).unwrap();
    assert_eq!(id.cn, "evil");
    assert!(!id.overlord, "a CSR must never obtain the overlord mark");
    let eku = cert.extended_key_usage().unwrap().unwrap().value;
    assert!(eku.client_auth && eku.server_auth && eku.other.is_empty());
}

#[test]
fn csr_asking_for_the_overlord_mark_is_refused_or_stripped() {
    let (ca, _) = Authority::create("test-CA").unwrap();
    let key = request::new_key().unwrap();
    let mut params = CertificateParams::new(vec!["sneaky".to_string()]).unwrap();
    params.distinguished_name = DistinguishedName::new();
    params.distinguished_name.push(DnType::CommonName, "sneaky");
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::Other(
        common::identity::OVERLORD_EKU_OID.to_vec(),
    )];
    let csr = params.serialize_request(&key).unwrap().pem().unwrap();
    match ca.sign_csr(&csr) {
        Err(CertError::BadRequest) => {}
        Ok(signed) => assert!(!PeerIdentity::from_der(&der(&signed.cert_pem)).unwrap().overlord),
        Err(other) => panic!("unexpected {other}"),
    }
}

#[test]
fn overlord_cert_carries_the_mark_and_serials_differ() {
    let (ca, _) = Authority::create("test-CA").unwrap();
    let key = request::new_key().unwrap();
    let a = ca.issue_overlord("overlord", &key).unwrap();
    let b = ca.issue_overlord("overlord", &key).unwrap();
    assert!(PeerIdentity::from_der(&der(&a.cert_pem)).unwrap().overlord);
    assert_ne!(
        a.serial, b.serial,
        "same key signed twice still gets distinct serials"
    );
}

#[test]
fn hostile_names_are_refused() {
    let (ca, _) = Authority::create("test-CA").unwrap();
    let key = request::new_key().unwrap();
    for bad in ["../../etc/passwd", "a/b", "", "..", &"x".repeat(300)] {
        assert!(request::csr(bad, &key).is_err(), "{bad:?}");
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name = DistinguishedName::new();
        if !bad.is_empty() {
            params.distinguished_name.push(DnType::CommonName, bad);
        }
        let csr = params.serialize_request(&key).unwrap().pem().unwrap();
        assert!(
            matches!(ca.sign_csr(&csr), Err(CertError::BadName(_) | CertError::NoName)),
            "{bad:?}"
        );
        assert!(csr_name(&csr).is_err());
    }
    assert!(matches!(ca.sign_csr("garbage"), Err(CertError::BadRequest)));
}

#[test]
fn subject_hash_matches_openssl() {
    let (ca, _) = Authority::create("test-CA").unwrap();
    let key = request::new_key().unwrap();
    let signed = ca
        .sign_csr(&request::csr("Web1.Example.com", &key).unwrap())
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.pem");
    std::fs::write(&path, &signed.cert_pem).unwrap();
    let out = std::process::Command::new("openssl")
        .args(["x509", "-noout", "-subject_hash", "-in"])
        .arg(&path)
        .output();
    let Ok(out) = out else {
        panic!("openssl is needed for this check (installed by the Makefile's deps)");
    };
    let hex = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let expected = u32::from_str_radix(&hex, 16).unwrap();
    assert_eq!(
        PeerIdentity::from_der(&der(&signed.cert_pem))
            .unwrap()
            .subject_hash,
        expected
    );
}
