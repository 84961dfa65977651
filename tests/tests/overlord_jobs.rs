//! `func ... call --async`, `--nopoll`, `job_status` and `--jobstatus`
//! against a real certmaster and real minions.

use std::process::Command;

use func_tests::fixture::{bin, write_file, Fleet};
use serde_json::Value as J;

use crate::helper::job_id;

fn status_json(fleet: &Fleet, args: &[&str]) -> (i32, J) {
    let mut full = vec!["--json"];
    full.extend_from_slice(args);
    let out = fleet.func(&full);
    let doc = serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"));
    (out.code, doc)
}

#[test]
fn async_nopoll_then_job_status_wait_then_answers_from_the_store() {
    let mut fleet = Fleet::start(&["m1", "m2", "m3", "m4", "m5"]);
    let out = fleet.func(&["*", "call", "test", "sleep", "1", "--async", "--nopoll"]);
    assert_eq!(out.code, 0, "{out:?}");
    let id = job_id(&out.stdout);
    assert!(id.starts_with("*-test-sleep-"), "{id}");
    let (code, early) = status_json(&fleet, &["job_status", &id]);
    assert_eq!(code, 3, "not finished yet: its own exit status");
    assert!([0, 3].contains(&early["status"].as_i64().unwrap()), "{early}");
    let (code, done) = status_json(&fleet, &["-t", "60", "job_status", &id, "--wait"]);
    assert_eq!(code, 0, "{done}");
    assert_eq!(done["status"], 1);
    let results = done["results"].as_object().unwrap();
    assert_eq!(results.len(), 5);
    assert!(
        results.values().all(|v| v.as_f64().is_some_and(|t| t > 1.7e9)),
        "{done}"
    );
    // Finished: answered from the store, even with every minion gone.
    for m in ["m1", "m2", "m3", "m4", "m5"] {
        fleet.minion(m).stop();
    }
    let (code, again) = status_json(&fleet, &["job_status", &id]);
    assert_eq!((code, &again["results"]), (0, &done["results"]));
    // The alias of Func's CLI.
    let out = fleet.func(&["*", "call", "--jobstatus", &id]);
    assert_eq!(out.code, 0);
    assert!(
        out.stdout
            .starts_with("JOB_STATUS: finished (1): 5 of 5 hosts finished"),
        "{}",
        out.stdout
    );
    let (code, lost) = status_json(&fleet, &["job_status", "*-test-ping-1.5"]);
    assert_eq!(
        (code, lost["status"].as_i64(), &lost["results"]),
        (1, Some(2), &serde_json::json!({}))
    );
}

#[test]
fn a_minion_down_at_dispatch_is_an_error_and_the_others_are_fine() {
    let mut fleet = Fleet::start(&["m1", "m2", "m3"]);
    fleet.minion("m2").stop();
    let out = fleet.func(&["-t", "30", "*", "call", "--async", "test", "add", "1", "2"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stderr.contains("JOB_ID: "), "{}", out.stderr);
    let blocks: Vec<&str> = out.stdout.lines().collect();
    for m in ["m1", "m3"] {
        let at = blocks
            .iter()
            .position(|l| *l == format!("{m}:"))
            .expect("host printed");
        assert_eq!(blocks[at + 1], "    3");
    }
    let at = blocks.iter().position(|l| *l == "m2:").expect("m2 printed");
    assert!(blocks[at + 1].contains("ERROR (socket.error)"), "{}", out.stdout);
    let (code, doc) = status_json(&fleet, &["job_status", &job_id(&out.stderr)]);
    assert_eq!((code, doc["status"].as_i64()), (1, Some(1)));
}

#[test]
fn fifty_concurrent_async_calls_get_distinct_ids_and_all_finish() {
    let fleet = Fleet::start(&["m1", "m2"]);
    let root = fleet.cm.root.dir().to_path_buf();
    let children: Vec<_> = (0..50)
        .map(|_| {
            Command::new(bin("func"))
                .arg("--root")
                .arg(&root)
                .args(["*", "call", "--async", "--nopoll", "test", "ping"])
                .stdout(std::process::Stdio::piped())
                .spawn()
                .expect("func starts")
        })
        .collect();
    let mut ids: Vec<String> = children
        .into_iter()
        .map(|c| {
            let out = c.wait_with_output().expect("func ends");
            assert!(out.status.success());
            job_id(&String::from_utf8_lossy(&out.stdout))
        })
        .collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 50, "distinct ids");
    for id in &ids {
        let (code, doc) = status_json(&fleet, &["-t", "60", "job_status", id, "--wait"]);
        assert_eq!(code, 0, "{doc}");
        assert_eq!(doc["results"], serde_json::json!({"m1": 1, "m2": 1}));
    }
}

#[test]
fn finished_jobs_expire_after_keep_jobs_and_bad_usage_exits_2() {
    let fleet = Fleet::start(&["m1"]);
    write_file(&fleet.cm.root.overlord_conf(), "[main]\nkeep_jobs = 1\n");
    let out = fleet.func(&["-t", "30", "m1", "call", "--async", "test", "ping"]);
    assert_eq!(out.code, 0, "{out:?}");
    let id = job_id(&out.stderr);
    assert!(
        func_tests::fixture::wait_until(std::time::Duration::from_secs(20), || {
            status_json(&fleet, &["job_status", &id]).1["status"] == 2
        }),
        "expired a second after it finished"
    );
    for bad in [
        &["job_status"][..],
        &["job_status", "a", "b"],
        &["job_status", "x", "--frob"],
        &["m1", "call", "--nopoll", "test", "ping"],
        &["m1", "call", "--jobstatus"],
    ] {
        assert_eq!(fleet.func(bad).code, 2, "{bad:?}");
    }
}

#[test]
fn force_async_methods_run_as_jobs() {
    let fleet = Fleet::start(&["m1"]);
    write_file(
        &fleet.cm.root.async_methods_conf(),
        "[main]\nforce_async = command.run, test.sleep\n",
    );
    let out = fleet.func(&["m1", "call", "--nopoll", "test", "sleep", "0"]);
    assert_eq!(out.code, 0, "{out:?}");
    let id = job_id(&out.stdout);
    let (code, doc) = status_json(&fleet, &["-t", "30", "job_status", &id, "--wait"]);
    assert_eq!((code, doc["status"].as_i64()), (0, Some(1)));
}

/// Issue 49: while a func-api serves the root, an async job's driver hands
/// its dispatch (`async.M.m`) to it, which calls the minions over its kept
/// connections with the job's signed request identity: a minion still runs
/// the request at most once. Whoever can write the store resets a finished
/// host to pending and runs the driver again: the minion refuses it
/// (already ran here), and the command did not run twice.
#[test]
fn a_job_dispatched_through_func_api_still_runs_once_per_host() {
    use overlord::store::JobStore as _;
    let fleet = Fleet::start(&["m1", "m2"]);
    let root = fleet.cm.root.dir().to_path_buf();
    let mut api = func_tests::fixture::Daemon::spawn(
        "func-api",
        &[
            "--root".as_ref(),
            root.as_os_str(),
            "--listen".as_ref(),
            "127.0.0.1:0".as_ref(),
        ],
    )
    .expect("func-api starts");
    let announced = fleet.cm.root.run_dir().join("func-api.json");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !announced.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "func-api never announced itself"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let marker = fleet.dir.path().join("ran");
    let command = format!("echo x >> {}", marker.display());
    let runs = || {
        std::fs::read_to_string(&marker)
            .unwrap_or_default()
            .lines()
            .count()
    };
    let out = fleet.func(&[
        "-t", "30", "*", "call", "--async", "--nopoll", "command", "run", &command,
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    let id = job_id(&out.stdout);
    let (code, done) = status_json(&fleet, &["-t", "60", "job_status", &id, "--wait"]);
    assert_eq!(code, 0, "{done}");
    assert_eq!(runs(), 2);
    let audit = std::fs::read_to_string(fleet.cm.root.log_dir().join("api-audit.log")).unwrap_or_default();
    assert!(
        audit.contains(&format!("relay {id} async.command.run (Now) for cli:")),
        "the driver did not hand its dispatch to func-api: {audit}"
    );
    let store = overlord::settings::store(&fleet.cm.root);
    store
        .write_tx(&mut |tx| {
            let pending = overlord::store::HostEntry::pending();
            tx.put_hosts(&id, &std::collections::BTreeMap::from([("m1", pending)]))
        })
        .unwrap();
    drop(store);
    let driver = Command::new(bin("func"))
        .args(["__driver", "--root"])
        .arg(&root)
        .arg(&id)
        .output()
        .expect("the driver runs");
    assert!(driver.status.success(), "{driver:?}");
    let (_, again) = status_json(&fleet, &["-t", "60", "job_status", &id, "--wait"]);
    let m1 = again["results"]["m1"].to_string();
    assert!(m1.contains("already ran here"), "{again}");
    assert_eq!(runs(), 2, "m1 did not run the command again");
    api.stop();
}
