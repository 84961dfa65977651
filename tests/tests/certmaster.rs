//! Enrollment end to end: a real `certmaster` and real `funcd` processes,
//! each with its own root, and `certmaster-ca` acting on the store.

use std::net::SocketAddr;
use std::time::Duration;

use common::paths::Root;
use common::rpc::client::{CallError, MinionClient};
use common::tls::Credentials;
use common::Value;
use func_tests::fixture::{wait_until, write_file, CertmasterProcess, FuncdProcess, Pki};

/// Generous bound for polled conditions (never a timing assertion).
const PATIENCE: Duration = Duration::from_secs(30);

struct Setup {
    dir: tempfile::TempDir,
    cm: CertmasterProcess,
    rt: tokio::runtime::Runtime,
}

impl Setup {
    fn new(autosign: bool) -> Self {
        let dir = tempfile::Builder::new().prefix("func-cm-").tempdir().unwrap();
        let cm = CertmasterProcess::start(&Root::new(dir.path().join("certmaster")), autosign)
            .expect("certmaster starts");
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        Self { dir, cm, rt }
    }

    fn root(&self, name: &str) -> Root {
        Root::new(self.dir.path().join(name))
    }

    /// Starts funcd NAME (root below the temp dir) enrolling with the certmaster.
    fn minion(&self, name: &str, crl_refresh: Option<&str>) -> FuncdProcess {
        let root = self.root(name);
        if let Some(every) = crl_refresh {
            write_file(
                &root.certmaster_minion_conf(),
                &format!("[main]\ncrl_refresh = {every}\nenroll_retry_max = 0.3\n"),
            );
        } else {
            write_file(&root.certmaster_minion_conf(), "[main]\nenroll_retry_max = 0.3\n");
        }
        FuncdProcess::start_with(&root, name, &["--certmaster", &self.cm.addr()]).expect("funcd starts")
    }

    fn call_as(
        &self,
        creds: &Credentials,
        addr: SocketAddr,
        name: &str,
        method: &str,
    ) -> Result<Value, CallError> {
        let tls = Pki::client_tls(creds);
        self.rt.block_on(async {
            let mut c = MinionClient::connect(addr, name, tls, Duration::from_secs(10)).await?;
            c.call(method, vec![]).await
        })
    }

    /// Polls until the overlord gets `1` from `test.ping` on the minion.
    fn serves(&self, m: &FuncdProcess) -> bool {
        wait_until(PATIENCE, || {
            matches!(
                self.call_as(&self.cm.overlord(), m.addr, &m.name, "test.ping"),
                Ok(Value::Integer(1))
            )
        })
    }
}

#[test]
fn autosign_enrolls_three_minions_that_then_serve_and_are_recorded() {
    let s = Setup::new(true);
    let minions: Vec<FuncdProcess> = ["m1", "m2", "m3"].iter().map(|n| s.minion(n, None)).collect();
    for m in &minions {
        assert!(s.serves(m), "{} serves after enrolling", m.name);
        let recorded =
            std::fs::read_to_string(s.cm.root.signed_certs_dir().join(format!("{}.addr", m.name))).unwrap();
        assert_eq!(
            recorded.trim(),
            m.addr.to_string(),
            "advertised address recorded for the overlord"
        );
        assert!(m.root.minion_ca_cert().exists());
    }
    let (code, out, _) = s.cm.ca(&["--list-signed"]);
    assert_eq!((code, out.as_str()), (0, "m1\nm2\nm3\n"));
    let (code, out, _) = s.cm.ca(&["--list-cert-hash", "m1"]);
    assert_eq!(code, 0);
    assert!(
        out.starts_with("m1-") && out.trim().split('-').nth(1).unwrap().parse::<u32>().is_ok(),
        "{out}"
    );
}

#[test]
fn without_autosign_a_minion_waits_until_signed() {
    let s = Setup::new(false);
    let mut m = s.minion("m1", None);
    assert!(
        wait_until(PATIENCE, || s.cm.ca(&["--list"]).1.starts_with("m1  ")),
        "request shows in --list"
    );
    assert!(m.alive(), "funcd keeps waiting");
    assert!(!m.root.minion_cert("m1").exists());
    let (code, _, err) = s.cm.ca(&["--sign", "nomatch"]);
    assert_eq!(code, 1);
    assert!(err.contains("No match for nomatch to sign"), "{err}");
    let (code, out, _) = s.cm.ca(&["--sign", "m*"]);
    assert_eq!(code, 0);
    assert!(out.contains("signed - cert located at"), "{out}");
    assert!(s.serves(&m));
    assert_eq!(s.cm.ca(&["--list"]).1, "No certificates to sign\n");
}

#[test]
fn clean_then_reenroll_with_a_new_key() {
    let s = Setup::new(true);
    let mut m = s.minion("m1", None);
    assert!(s.serves(&m));
    let old_cert = std::fs::read_to_string(m.root.minion_cert("m1")).unwrap();
    m.stop();
    let (code, out, _) = s.cm.ca(&["--clean", "m1"]);
    assert_eq!(code, 0);
    assert!(out.contains("Cleaning out") && out.contains("m1.cert"), "{out}");
    let (code, _, err) = s.cm.ca(&["--clean", "m1"]);
    assert_eq!(code, 1);
    assert!(err.contains("No match for m1 to clean up"));
    for f in [m.root.minion_key("m1"), m.root.minion_cert("m1")] {
        std::fs::remove_file(f).unwrap();
    }
    let m = s.minion("m1", None);
    assert!(s.serves(&m));
    assert_ne!(
        std::fs::read_to_string(m.root.minion_cert("m1")).unwrap(),
        old_cert
    );
}

#[test]
fn a_second_key_for_an_enrolled_name_is_refused() {
    let s = Setup::new(true);
    let m = s.minion("m1", None);
    assert!(s.serves(&m));
    // Another host (another root, another key) claims the name m1.
    let impostor_root = Root::new(s.dir.path().join("impostor"));
    let mut impostor =
        FuncdProcess::start_with(&impostor_root, "m1", &["--certmaster", &s.cm.addr()]).expect("starts");
    let (code, err) = impostor
        .daemon
        .exit_within(PATIENCE)
        .expect("the impostor gives up");
    assert_eq!(code, Some(1));
    assert!(err.contains("--clean m1"), "{err}");
    assert!(!impostor_root.minion_cert("m1").exists());
    assert!(s.serves(&m), "the real m1 is untouched");
}

/// Issue 46: with m1 enrolled and autosign on, a funcd named `M1` with a
/// new key was signed (file names compared with case), then passed ACLs
/// `m1-* = …` and TLS checks for m1, which ignore case.
#[test]
fn a_name_in_another_letter_case_is_refused() {
    let s = Setup::new(true);
    let m = s.minion("m1", None);
    assert!(s.serves(&m));
    let impostor_root = Root::new(s.dir.path().join("impostor"));
    let mut impostor =
        FuncdProcess::start_with(&impostor_root, "M1", &["--certmaster", &s.cm.addr()]).expect("starts");
    let (code, err) = impostor
        .daemon
        .exit_within(PATIENCE)
        .expect("the impostor gives up");
    assert_eq!(code, Some(1));
    assert!(err.contains("letter case"), "{err}");
    assert!(!impostor_root.minion_cert("M1").exists());
    assert!(s.serves(&m), "the real m1 is untouched");
}

#[test]
fn a_pinned_fingerprint_must_match() {
    let s = Setup::new(true);
    let root = s.root("m1");
    let wrong = ["AB"; 32].join(":");
    write_file(
        &root.certmaster_minion_conf(),
        &format!("[main]\nca_fingerprint = {wrong}\n"),
    );
    let mut m = FuncdProcess::start_with(&root, "m1", &["--certmaster", &s.cm.addr()]).unwrap();
    let (code, err) = m.daemon.exit_within(PATIENCE).expect("refuses and exits");
    assert_eq!(code, Some(1));
    assert!(err.contains("not the pinned one"), "{err}");
    assert!(!root.minion_cert("m1").exists() && !root.minion_ca_cert().exists());

    let right = s.cm.fingerprint().to_lowercase().replace(':', "");
    write_file(
        &root.certmaster_minion_conf(),
        &format!("[main]\nca_fingerprint = {right}\n"),
    );
    let m = FuncdProcess::start_with(&root, "m1", &["--certmaster", &s.cm.addr()]).unwrap();
    assert!(s.serves(&m), "the right pin (any case, no colons) enrolls");
}

#[test]
fn a_cleaned_certificate_is_refused_after_the_next_crl_fetch() {
    let s = Setup::new(true);
    write_file(&s.root("m1").acl_dir().join("peers.acl"), "m2-* = test.ping\n");
    let m1 = s.minion("m1", Some("0.2"));
    let m2 = s.minion("m2", Some("0.2"));
    assert!(s.serves(&m1) && s.serves(&m2));
    let m2_creds = Credentials {
        key: m2.root.minion_key("m2"),
        cert: m2.root.minion_cert("m2"),
        ca: m2.root.minion_ca_cert(),
        crl: None,
    };
    assert_eq!(
        s.call_as(&m2_creds, m1.addr, "m1", "test.ping").unwrap(),
        Value::Integer(1),
        "granted by the ACL"
    );
    assert_eq!(s.cm.ca(&["--clean", "m2"]).0, 0);
    let refused = wait_until(PATIENCE, || {
        s.call_as(&m2_creds, m1.addr, "m1", "test.ping").is_err()
    });
    assert!(
        refused,
        "m1 refuses the cleaned m2 certificate once it has the new CRL"
    );
    assert!(
        m1.root.minion_crl().exists(),
        "the CRL is kept for the next start"
    );
    assert!(s.serves(&m1), "the overlord is unaffected");
    // Issue 47: the revoked minion says so (it only said "new CRL installed").
    assert!(
        wait_until(PATIENCE, || m2
            .daemon
            .stderr_so_far()
            .contains("own certificate is revoked")),
        "{}",
        m2.daemon.stderr_so_far()
    );
    assert!(!m1.daemon.stderr_so_far().contains("own certificate is revoked"));
}

#[test]
fn certmaster_ca_usage_and_missing_ca() {
    let s = Setup::new(false);
    let (code, _, _) = s.cm.ca(&[]);
    assert_eq!(code, 2, "no action is a usage error");
    let empty = s.dir.path().join("nothing");
    let out = std::process::Command::new(func_tests::fixture::bin("certmaster-ca"))
        .arg("--root")
        .arg(&empty)
        .args(["--sign", "x"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("start the certmaster once"));
    assert_eq!(
        s.cm.ca(&["--list"]),
        (0, "No certificates to sign\n".into(), String::new())
    );
    let key = std::fs::metadata(s.cm.root.ca_key()).unwrap();
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&key.permissions()) & 0o777,
        0o600
    );
}

#[test]
fn enrollment_is_verified_by_fingerprint() {
    let s = Setup::new(false);
    let m = s.minion("m1", None);
    let mut listed = String::new();
    assert!(wait_until(PATIENCE, || {
        listed = s.cm.ca(&["--list"]).1;
        listed.starts_with("m1  ")
    }));
    let fp = listed.split_whitespace().nth(1).unwrap().to_string();
    assert_eq!(fp.len(), 95, "SHA-256 as AB:CD:...: {listed}");
    // The minion said the same fingerprint in its log.
    assert!(
        wait_until(PATIENCE, || m.daemon.stderr_so_far().contains(&fp)),
        "{}",
        m.daemon.stderr_so_far()
    );
    let wrong = "00:".repeat(31) + "00";
    let (code, _, err) = s.cm.ca(&["--sign", "m1", "--fingerprint", &wrong]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("not signed"), "{err}");
    assert!(!s.cm.root.signed_certs_dir().join("m1.cert").exists());
    // Pasted in another form (lower case, no colons) it still matches.
    let loose = fp.replace(':', "").to_lowercase();
    let (code, out, err) = s.cm.ca(&["--sign", "m1", "--fingerprint", &loose]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("signed"), "{out}");
    assert!(s.serves(&m));
    let log = m.daemon.stderr_so_far();
    assert!(
        log.matches("waiting to be signed").count() <= 1,
        "said once, not at every retry: {log}"
    );
    assert!(
        log.matches("first contact with the certmaster is not pinned")
            .count()
            <= 1,
        "{log}"
    );
}

/// The quick start's `minion.conf` block (docs/INSTALL.md), as written (a `# comment`
/// after the value), with the fingerprint pasted as the certmaster printed
/// it (`SHA256 2A:...`): funcd reads it and enrolls.
#[test]
fn the_readmes_minion_conf_block_works_as_written() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/INSTALL.md")).unwrap();
    let after = readme
        .split("In `/etc/certmaster/minion.conf`:")
        .nth(1)
        .expect("the quick start names minion.conf");
    let block = after
        .split("```ini\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("an ini block follows");
    assert!(
        block.contains("AB:CD:..."),
        "the block shows a placeholder fingerprint: {block}"
    );
    let s = Setup::new(true);
    let (host, port) =
        s.cm.addr()
            .rsplit_once(':')
            .map(|(h, p)| (h.to_string(), p.to_string()))
            .unwrap();
    let printed = s.cm.fingerprint();
    let conf = block
        .replace("cm.example.com", &host)
        .replace("AB:CD:...", &printed)
        + &format!("certmaster_port = {port}\n");
    assert!(
        conf.contains(&format!("SHA256 {printed}")),
        "pasted as printed: {conf}"
    );
    let root = s.root("m1");
    write_file(&root.certmaster_minion_conf(), &conf);
    let m = FuncdProcess::start(&root, "m1").unwrap();
    assert!(s.serves(&m), "the quick start's block enrolls: {conf}");
}
