//! Mutual TLS: certificates that must be refused, and the overlord's check
//! of the minion's name.

use std::time::Duration;

use common::rpc::client::{CallError, MinionClient};
use common::tls::Credentials;
use common::Value;
use func_tests::fixture::{bin, Pki};

use crate::helper::OneMinion;

#[test]
fn client_without_certificate_is_refused() {
    let m = OneMinion::start("m1");
    let ca = m.pki.ca_root.ca_cert();
    let mut roots = rustls::RootCertStore::empty();
    for c in common::tls::load_certs(&ca, "CA").unwrap() {
        roots.add(c).unwrap();
    }
    let cfg = rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let result = m.rt.block_on(async {
        let mut c = MinionClient::connect(
            m.minion.addr,
            "m1",
            std::sync::Arc::new(cfg),
            Duration::from_secs(10),
        )
        .await?;
        c.call("test.ping", vec![]).await
    });
    assert!(
        matches!(result, Err(CallError::Tls { .. } | CallError::Http(_))),
        "{result:?}"
    );
}

#[test]
fn certificate_from_another_ca_is_refused() {
    let m = OneMinion::start("m1");
    let foreign = m.pki.dir.path().join("foreign");
    let out = std::process::Command::new(bin("func-testpki"))
        .arg("foreign")
        .arg(&foreign)
        .output()
        .unwrap();
    assert!(out.status.success());
    // Trust the real CA for the server, but present the foreign client cert.
    let creds = Credentials {
        key: foreign.join("client.pem"),
        cert: foreign.join("client.cert"),
        ca: m.pki.ca_root.ca_cert(),
        crl: None,
    };
    let result = m.rt.block_on(async {
        let mut c = MinionClient::connect(
            m.minion.addr,
            "m1",
            Pki::client_tls(&creds),
            Duration::from_secs(10),
        )
        .await?;
        c.call("test.ping", vec![]).await
    });
    assert!(
        matches!(result, Err(CallError::Tls { .. } | CallError::Http(_))),
        "{result:?}"
    );
    assert_eq!(m.call("test.ping", vec![]).unwrap(), Value::Integer(1));
}

#[test]
fn overlord_refuses_a_minion_that_is_not_the_one_it_meant() {
    let m = OneMinion::start("m1");
    let result = m.rt.block_on(async {
        let mut c =
            MinionClient::connect(m.minion.addr, "m2", m.overlord_tls(), Duration::from_secs(10)).await?;
        c.call("test.ping", vec![]).await
    });
    match result {
        Err(CallError::Tls { detail, .. }) => {
            assert!(detail.to_lowercase().contains("certificate"), "{detail}")
        }
        other => panic!("expected a TLS name error, got {other:?}"),
    }
}

#[test]
fn stopping_funcd_ends_the_process() {
    let mut m = OneMinion::start("m1");
    assert!(m.minion.alive());
    m.minion.stop();
    assert!(!m.minion.alive());
}
