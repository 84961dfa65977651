//! A large fleet that starts at once, from one address (as minions behind
//! one NAT, or a test fleet on loopback), enrolls and answers promptly: the
//! certmaster's per-address cap closes most first attempts, and the minions'
//! retries must not fall into lock-step backoff that leaves one waiting for
//! a minute.

use std::time::{Duration, Instant};

use common::paths::Root;
use func_tests::fixture::{wait_until, CertmasterProcess, FuncdProcess};

const K: usize = 100;

#[test]
fn a_hundred_minions_started_at_once_all_enroll_and_answer() {
    let dir = tempfile::Builder::new()
        .prefix("func-fleet100-")
        .tempdir()
        .unwrap();
    // A tight per-address cap (default 16) so most first attempts are
    // turned away, as with a larger fleet behind one address.
    let cm_root = Root::new(dir.path().join("certmaster"));
    func_tests::fixture::write_file(
        &cm_root.dir().join("etc/certmaster/certmaster.conf"),
        "[main]\nmax_connections_per_address = 2\n",
    );
    let cm = CertmasterProcess::start(&cm_root, true).expect("certmaster starts");
    let started = Instant::now();
    let minions: Vec<FuncdProcess> = (1..=K)
        .map(|i| {
            let name = format!("m{i}");
            let root = Root::new(dir.path().join(&name));
            FuncdProcess::start_with(&root, &name, &["--certmaster", &cm.addr()]).expect("funcd starts")
        })
        .collect();
    let missing = || -> Vec<String> {
        minions
            .iter()
            .filter(|m| !m.root.minion_cert(&m.name).exists())
            .map(|m| m.name.clone())
            .collect()
    };
    let all = wait_until(Duration::from_secs(60), || missing().is_empty());
    let took = started.elapsed();
    assert!(all, "not enrolled after {took:?}: {:?}", missing());
    let retries: Vec<usize> = minions
        .iter()
        .map(|m| m.daemon.stderr_so_far().matches("retrying").count())
        .collect();
    eprintln!(
        "all {K} enrolled in {took:?}; retries per minion: max {:?}, total {}",
        retries.iter().max(),
        retries.iter().sum::<usize>()
    );
    let out = std::process::Command::new(func_tests::fixture::bin("func"))
        .arg("--root")
        .arg(cm.root.dir())
        .args(["-t", "30", "--json", "*", "ping"])
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    let answered = doc
        .as_object()
        .map_or(0, |o| o.values().filter(|v| **v == 1).count());
    assert_eq!(
        answered,
        K,
        "every minion answers (enrolled in {took:?}): {}",
        String::from_utf8_lossy(&out.stderr)
    );
}
