//! Hardening I, identity: names a minion must never get, CRLs that cannot
//! be rolled back, and an overlord that refuses a revoked minion
//! certificate answering at the right address.

use std::io::{Read, Write};
use std::time::Duration;

use common::paths::Root;
use common::rpc::client::{CallError, MinionClient};
use common::Value;
use func_tests::fixture::{bin, wait_until, write_file, CertmasterProcess, Fleet, FuncdProcess, Pki};

const PATIENCE: Duration = Duration::from_secs(30);

/// `wait_for_cert(csr)` over the certmaster's plain HTTP, as Func's
/// Python requester sends it; the raw answer.
fn wait_for_cert(cm: &CertmasterProcess, csr: &str) -> String {
    let body = common::xmlrpc::encode_call("wait_for_cert", vec![Value::String(csr.into())], 16).unwrap();
    let mut tcp = std::net::TcpStream::connect(cm.daemon.addr).unwrap();
    tcp.set_read_timeout(Some(PATIENCE)).unwrap();
    write!(
        tcp,
        "POST /RPC2 HTTP/1.1\r\nHost: certmaster\r\nContent-Type: text/xml\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut out = String::new();
    tcp.read_to_string(&mut out).unwrap();
    out
}

#[test]
fn the_certmaster_never_signs_reserved_names_in_any_case() {
    let dir = tempfile::Builder::new().prefix("func-id-").tempdir().unwrap();
    let cm = CertmasterProcess::start(&Root::new(dir.path().join("certmaster")), true).unwrap();
    for name in ["certmaster", "CERTMASTER", "Overlord", "localhost", "LOCALHOST"] {
        let csr = certs::request::csr(name, &certs::request::new_key().unwrap()).unwrap();
        let answer = wait_for_cert(&cm, &csr);
        assert!(
            answer.contains("faultCode") && answer.contains("reserved"),
            "{name}: {answer}"
        );
    }
    let signed = std::fs::read_dir(cm.root.signed_certs_dir())
        .map(|d| d.count())
        .unwrap_or(0);
    let pending = std::fs::read_dir(cm.root.pending_csrs_dir())
        .map(|d| d.count())
        .unwrap_or(0);
    assert_eq!((signed, pending), (0, 0), "nothing signed, nothing stored");
    // funcd refuses the names itself too.
    let out = std::process::Command::new(bin("funcd"))
        .args(["--root"])
        .arg(dir.path().join("x"))
        .args([
            "--name",
            "Certmaster",
            "--listen",
            "127.0.0.1:0",
            "--certmaster",
            &cm.addr(),
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("reserved"),
        "{out:?}"
    );
}

/// Whether `m1` refuses `caller`'s certificate in the TLS handshake (a
/// certificate it accepts gets an ACL fault instead).
fn refused_in_tls(
    rt: &tokio::runtime::Runtime,
    m1: &FuncdProcess,
    caller: &common::tls::Credentials,
) -> bool {
    let tls = Pki::client_tls(caller);
    let result = rt.block_on(async {
        let mut c = MinionClient::connect(m1.addr, "m1", tls, Duration::from_secs(10)).await?;
        c.call("test.ping", vec![]).await
    });
    !matches!(result, Err(CallError::Fault { .. }) | Ok(_))
}

#[test]
fn a_minion_refuses_an_older_crl_from_whoever_answers_as_the_certmaster() {
    let dir = tempfile::Builder::new().prefix("func-crl-").tempdir().unwrap();
    let cm_root = Root::new(dir.path().join("certmaster"));
    let mut cm = CertmasterProcess::start(&cm_root, true).unwrap();
    let start = |name: &str| {
        let root = Root::new(dir.path().join(name));
        write_file(
            &root.certmaster_minion_conf(),
            "[main]\ncrl_refresh = 0.2\nenroll_retry_max = 0.3\n",
        );
        let m = FuncdProcess::start_with(&root, name, &["--certmaster", &cm.addr()]).unwrap();
        assert!(
            wait_until(PATIENCE, || root.minion_cert(name).exists()),
            "{name} enrolled"
        );
        m
    };
    let (m1, m2) = (start("m1"), start("m2"));
    let m2_creds = Pki::new().minion_creds(&m2.root, "m2");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    assert!(
        wait_until(PATIENCE, || !refused_in_tls(&rt, &m1, &m2_creds)),
        "m2 accepted at first"
    );
    // The certmaster's state now, with its older CRL, kept aside.
    let old = dir.path().join("old-certmaster");
    assert!(std::process::Command::new("cp")
        .arg("-a")
        .arg(cm_root.dir())
        .arg(&old)
        .status()
        .unwrap()
        .success());
    let (code, _, err) = cm.ca(&["--clean", "m2"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        wait_until(PATIENCE, || refused_in_tls(&rt, &m1, &m2_creds)),
        "m2 revoked"
    );
    // Someone answers in the certmaster's place with the old, validly signed CRL.
    let addr = cm.addr();
    cm.daemon.stop();
    let _impostor = CertmasterProcess::start_at(&Root::new(&old), true, &addr).unwrap();
    assert!(
        wait_until(PATIENCE, || m1.daemon.stderr_so_far().contains("CRL refused")),
        "the older CRL is refused: {}",
        m1.daemon.stderr_so_far()
    );
    assert!(refused_in_tls(&rt, &m1, &m2_creds), "m2 stays revoked");
}

#[test]
fn the_overlord_refuses_a_revoked_minion_certificate_at_the_minions_address() {
    let fleet = Fleet::start(&["m1"]);
    let old_addr = fleet.minions[0].addr.to_string();
    let (code, _, err) = fleet.cm.ca(&["--clean", "m1"]);
    assert_eq!(code, 0, "{err}");
    // m1 re-enrolls with a new key, but its old, revoked certificate is
    // what answers at the address the overlord calls.
    let root = Root::new(fleet.dir.path().join("m1-new"));
    let _new = FuncdProcess::start_with(
        &root,
        "m1",
        &["--certmaster", &fleet.cm.addr(), "--advertise", &old_addr],
    )
    .unwrap();
    assert!(wait_until(PATIENCE, || root.minion_cert("m1").exists()));
    let out = fleet.func(&["m1", "call", "command", "run", "echo pwned"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(!out.stdout.contains("pwned"), "{out:?}");
    let audit = std::fs::read_to_string(fleet.minions[0].root.audit_log()).unwrap_or_default();
    assert!(
        !audit.contains("command.run"),
        "the revoked minion never got the call: {audit}"
    );
}
