//! `--batch`: sliding windows over real minions, sync and async, failhard,
//! liveness at the deadline, stop, stop --kill, and recovery after the
//! driver is killed.

use std::process::{Command, Stdio};
use std::time::Duration;

use func_tests::fixture::{bin, wait_until, Fleet};
use serde_json::Value as J;

use crate::helper::{func_json as json, job_id};

fn batch_status(fleet: &Fleet, id: &str) -> J {
    json(fleet, &["batch", "status", id])
}

fn wait_complete(fleet: &Fleet, id: &str) -> J {
    let mut doc = J::Null;
    assert!(
        wait_until(Duration::from_secs(60), || {
            doc = batch_status(fleet, id);
            doc["complete"] == true
        }),
        "batch completes: {doc}"
    );
    doc
}

/// `(started, ended)` of every finished job of `method` on the minions.
fn job_intervals(fleet: &Fleet, method: &str) -> Vec<(String, f64, f64)> {
    let doc = json(fleet, &["*", "call", "jobs", "list_jobs"]);
    let mut out = Vec::new();
    for (host, jobs) in doc.as_object().unwrap() {
        for j in jobs.as_array().unwrap() {
            if j["method"] == method {
                out.push((
                    host.clone(),
                    j["started"].as_f64().unwrap(),
                    j["ended"].as_f64().unwrap_or(f64::MAX),
                ));
            }
        }
    }
    out
}

fn max_overlap(intervals: &[(String, f64, f64)]) -> usize {
    intervals
        .iter()
        .map(|(_, s, _)| intervals.iter().filter(|(_, s2, e2)| s2 <= s && s < e2).count())
        .max()
        .unwrap_or(0)
}

#[test]
fn sync_batch_keeps_the_window_and_sizes_by_percent() {
    let fleet = Fleet::start(&["m1", "m2", "m3", "m4", "m5", "m6"]);
    let out = fleet.func(&["-t", "30", "*", "call", "--batch", "2", "test", "sleep", "1"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        out.stdout.lines().filter(|l| l.ends_with(':')).count(),
        6,
        "{}",
        out.stdout
    );
    let runs = job_intervals(&fleet, "test.sleep");
    assert_eq!(runs.len(), 6, "each host ran once: {runs:?}");
    assert_eq!(
        max_overlap(&runs),
        2,
        "never more than 2 in flight, and 2 at some point: {runs:?}"
    );
    let id = job_id(&out.stderr);
    let doc = batch_status(&fleet, &id);
    assert_eq!(
        (doc["size"].as_u64(), doc["counts"]["done"].as_u64()),
        (Some(2), Some(6))
    );
    // job_status and jobs list see the batch as one job.
    let status = json(&fleet, &["job_status", &id]);
    assert_eq!(status["status"], 1);
    assert_eq!(status["results"].as_object().unwrap().len(), 6);
    // 50% of 5 → 2.
    let out = fleet.func(&[
        "-t", "30", "-e", "m6", "*", "call", "--batch", "50%", "--async", "test", "ping",
    ]);
    let doc = wait_complete(&fleet, &job_id(&out.stdout));
    assert_eq!(doc["size"], 2);
    let list = fleet.func(&["batch", "list"]).stdout;
    assert!(
        list.contains("batch 2 (async)") && list.contains("complete"),
        "{list}"
    );
    for bad in [
        &["*", "call", "--batch", "0", "test", "ping"][..],
        &["*", "call", "--batch", "x%", "test", "ping"],
        &["*", "call", "--failhard", "test", "ping"],
        &["*", "call", "--batch", "2", "--batch-wait", "-1", "test", "ping"],
        &["batch", "status"],
        &["batch", "stop", "x", "--frob"],
    ] {
        assert_eq!(fleet.func(bad).code, 2, "{bad:?}");
    }
}

#[test]
fn failhard_stops_after_the_first_failure_and_exit_is_nonzero() {
    let fleet = Fleet::start(&["m1", "m2", "m3"]);
    let out = fleet.func(&["*", "call", "--batch", "1", "--failhard", "test", "explode"]);
    assert_eq!(out.code, 1, "{out:?}");
    // Hosts never sent are abandoned, not failed.
    assert!(
        out.stderr
            .contains("3 hosts: 0 ok, 1 failed (m1), 2 abandoned (m2, m3)"),
        "{}",
        out.stderr
    );
    let doc = batch_status(&fleet, &job_id(&out.stderr));
    assert_eq!(doc["halted"], "failhard");
    assert_eq!(doc["hosts"]["m1"]["state"], "failed");
    assert_eq!(doc["hosts"]["m2"]["state"], "abandoned");
    assert_eq!(
        job_intervals(&fleet, "test.explode").len(),
        1,
        "nothing dispatched after the failure"
    );
}

#[test]
fn a_running_job_outlives_its_deadline_but_a_hung_host_times_out() {
    let mut fleet = Fleet::start(&["m1", "m2"]);
    // Both jobs outlive -t 1; both minions confirm they still run them.
    let out = fleet.func(&["-t", "1", "*", "call", "--batch", "2", "test", "sleep", "3"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(!out.stdout.contains("ERROR"), "{}", out.stdout);
    // Now m2 hangs (SIGSTOP) after its job was dispatched.
    let mut child = Command::new(bin("func"))
        .arg("--root")
        .arg(fleet.cm.root.dir())
        .args([
            "--json", "-t", "2", "*", "call", "--batch", "2", "test", "sleep", "5",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("func starts");
    let mut first = String::new();
    let stderr = child.stderr.take().expect("stderr");
    // Kept open until func ends, so its later stderr writes never hit a closed pipe.
    let mut stderr = std::io::BufReader::new(stderr);
    std::io::BufRead::read_line(&mut stderr, &mut first).expect("JOB_ID line");
    let id = job_id(&first);
    // Hang m2 once the driver has its minion job id (the dispatch answered).
    assert!(wait_until(Duration::from_secs(20), || batch_status(&fleet, &id)
        ["hosts"]["m2"]["minion_job"]
        .is_string()));
    let m2 = nix::unistd::Pid::from_raw(fleet.minion("m2").pid() as i32);
    nix::sys::signal::kill(m2, nix::sys::signal::Signal::SIGSTOP).unwrap();
    let out = child.wait_with_output().expect("func ends");
    drop(stderr);
    nix::sys::signal::kill(m2, nix::sys::signal::Signal::SIGCONT).unwrap();
    assert_eq!(out.status.code(), Some(1));
    let doc = batch_status(&fleet, &id);
    assert_eq!(doc["hosts"]["m1"]["state"], "done", "{doc}");
    assert_eq!(doc["hosts"]["m2"]["state"], "timeout", "{doc}");
}

#[test]
fn async_batch_stop_drains_and_stop_kill_leaves_nothing_running() {
    let fleet = Fleet::start(&["m1", "m2", "m3"]);
    let out = fleet.func(&[
        "-t", "30", "*", "call", "--batch", "1", "--async", "test", "sleep", "2",
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    let id = job_id(&out.stdout);
    assert!(wait_until(Duration::from_secs(20), || batch_status(&fleet, &id)
        ["counts"]["active"]
        == 1));
    let out = fleet.func(&["batch", "stop", &id]);
    assert_eq!(out.code, 0, "{out:?}");
    let doc = wait_complete(&fleet, &id);
    assert_eq!(doc["halted"], "stopped");
    assert_eq!(doc["counts"]["done"], 1, "the in-flight host finished: {doc}");
    assert_eq!(doc["counts"]["abandoned"], 2, "{doc}");

    let out = fleet.func(&[
        "-t", "30", "*", "call", "--batch", "2", "--async", "test", "sleep", "60",
    ]);
    let id = job_id(&out.stdout);
    assert!(wait_until(Duration::from_secs(20), || batch_status(&fleet, &id)
        ["counts"]["active"]
        == 2));
    let out = fleet.func(&["batch", "stop", &id, "--kill"]);
    // If the driver is gone, its own words are in driver.log: shown with the failure.
    let driver_log =
        || std::fs::read_to_string(fleet.cm.root.log_dir().join("driver.log")).unwrap_or_default();
    assert_eq!(out.code, 0, "{out:?}\ndriver.log:\n{}", driver_log());
    let doc = wait_complete(&fleet, &id);
    assert_eq!(doc["counts"]["killed"], 2, "{doc}");
    assert!(
        wait_until(Duration::from_secs(10), || {
            let running = json(&fleet, &["*", "call", "jobs", "running"]);
            running
                .as_object()
                .unwrap()
                .values()
                .all(|v| v.as_array().is_some_and(|a| a.is_empty()))
        }),
        "nothing left running"
    );
}

#[test]
fn jobs_kill_of_a_batch_stops_it_as_batch_stop_kill_does() {
    // `func jobs kill` of a batch (as func-api's kill): the driver starts
    // no more hosts, those in flight are killed, nothing is left running.
    let fleet = Fleet::start(&["m1", "m2", "m3"]);
    let out = fleet.func(&[
        "-t", "30", "*", "call", "--batch", "1", "--async", "test", "sleep", "60",
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    let id = job_id(&out.stdout);
    assert!(wait_until(Duration::from_secs(20), || batch_status(&fleet, &id)
        ["counts"]["active"]
        == 1));
    let out = fleet.func(&["jobs", "kill", &id]);
    assert_eq!(out.code, 0, "{out:?}");
    let doc = wait_complete(&fleet, &id);
    assert_eq!(doc["counts"]["killed"], 1, "{doc}");
    assert_eq!(doc["counts"]["abandoned"], 2, "no other host was started: {doc}");
    assert!(doc["state"].as_str().unwrap().starts_with("halted"), "{doc}");
}

#[test]
fn a_killed_driver_is_noticed_and_recover_finishes_without_running_any_host_twice() {
    let fleet = Fleet::start(&["m1", "m2", "m3", "m4"]);
    let out = fleet.func(&[
        "-t", "30", "*", "call", "--batch", "1", "--async", "test", "sleep", "1",
    ]);
    let id = job_id(&out.stdout);
    assert!(wait_until(Duration::from_secs(30), || batch_status(&fleet, &id)
        ["counts"]["done"]
        == 1));
    let pid = batch_status(&fleet, &id)["driver_pid"]
        .as_i64()
        .expect("driver pid");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    assert!(wait_until(Duration::from_secs(10), || batch_status(&fleet, &id)
        ["driver_alive"]
        == false));
    let status = fleet.func(&["batch", "status", &id]);
    assert!(status.stdout.contains("driver gone"), "{status:?}");
    assert!(fleet.func(&["batch", "list"]).stdout.contains("driver gone"));
    let out = fleet.func(&["batch", "recover"]);
    assert!(out.stdout.contains("resumed"), "{out:?}");
    let doc = wait_complete(&fleet, &id);
    assert_eq!(doc["counts"]["pending"], 0);
    let runs = job_intervals(&fleet, "test.sleep");
    for m in ["m1", "m2", "m3", "m4"] {
        assert!(
            runs.iter().filter(|(h, _, _)| h == m).count() <= 1,
            "{m} ran at most once: {runs:?}"
        );
    }
    assert!(runs.len() >= 3, "{runs:?}");
    let events = std::fs::read_to_string(fleet.cm.root.log_dir().join("batch-events.log")).unwrap();
    assert!(
        events.contains("\"recover\"") && events.contains("\"complete\""),
        "{events}"
    );
}

/// `func batch recover` raced against batches that have just started (and
/// two recovers against each other): a live driver, even one that has not
/// run yet, is never taken over, so no batch gets two drivers and no host
/// runs twice.
#[test]
fn recover_raced_against_starting_batches_never_runs_a_host_twice() {
    const ROUNDS: usize = 12;
    let fleet = Fleet::start(&["m1"]);
    let root = fleet.cm.root.dir().to_path_buf();
    let func = |args: &[&str]| {
        Command::new(bin("func"))
            .arg("--root")
            .arg(&root)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("func runs")
    };
    let mut ids = Vec::new();
    for round in 0..ROUNDS {
        let out = fleet.func(&[
            "-t", "30", "*", "call", "--batch", "1", "--async", "test", "sleep", "1",
        ]);
        assert_eq!(out.code, 0, "{out:?}");
        let id = job_id(&out.stdout);
        // Two recovers at once, right after the start; a status in between.
        let a = func(&["batch", "recover", &id]);
        let b = func(&["batch", "recover", "last"]);
        if round % 3 == 0 {
            let status = batch_status(&fleet, &id);
            assert!(
                status["driver_alive"] == true || status["complete"] == true,
                "a starting driver never looks gone: {status}"
            );
        }
        for child in [a, b] {
            let out = child.wait_with_output().unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success() && !text.contains("resumed"),
                "round {round}: nothing to recover while the driver lives: {text} {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        ids.push(id);
    }
    for id in &ids {
        let doc = wait_complete(&fleet, id);
        assert_eq!(doc["counts"]["done"], 1, "{doc}");
    }
    let runs = job_intervals(&fleet, "test.sleep");
    assert_eq!(runs.len(), ROUNDS, "one test.sleep per batch: {runs:?}");
    let events = std::fs::read_to_string(fleet.cm.root.log_dir().join("batch-events.log")).unwrap();
    for id in &ids {
        let mine: Vec<J> = events
            .lines()
            .filter_map(|l| serde_json::from_str::<J>(l).ok())
            .filter(|e| e["job_id"] == id.as_str())
            .collect();
        let count = |what: &str| mine.iter().filter(|e| e["event"] == what).count();
        assert_eq!(
            (count("new"), count("complete"), count("recover")),
            (1, 1, 0),
            "one driver per batch: {mine:?}"
        );
    }
    let driver_log = std::fs::read_to_string(fleet.cm.root.log_dir().join("driver.log")).unwrap_or_default();
    assert!(
        !driver_log.contains("another driver"),
        "no second driver even started: {driver_log}"
    );
}

#[test]
fn a_window_wider_than_the_hosts_says_so() {
    let fleet = Fleet::start(&["m1", "m2", "m3"]);
    let out = fleet.func(&["*", "call", "--batch", "150%", "test", "ping"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout.contains("batch of 3 over 3 hosts") || out.stderr.contains("batch of 3 over 3 hosts"),
        "{out:?}"
    );
}

/// Issue 46: whoever can write the store resets a finished `command.run`
/// host to pending (the batch made to look orphaned) and an administrator
/// runs `func batch recover`. The minion learns the signed request's
/// identity with the call and refuses a second run of it: the host is not
/// run twice, and the batch says why.
#[test]
fn a_host_the_store_reset_to_pending_is_not_run_twice() {
    use overlord::batch::record::BatchRecord;
    use overlord::store::JobStore as _;
    let fleet = Fleet::start(&["m1", "m2"]);
    let marker = fleet.dir.path().join("ran");
    let command = format!("echo x >> {}", marker.display());
    let out = fleet.func(&[
        "-t", "30", "*", "call", "--batch", "1", "--async", "command", "run", &command,
    ]);
    let id = job_id(&out.stdout);
    let doc = wait_complete(&fleet, &id);
    assert_eq!(doc["counts"]["done"], 2, "{doc}");
    let runs = || {
        std::fs::read_to_string(&marker)
            .unwrap_or_default()
            .lines()
            .count()
    };
    assert_eq!(runs(), 2);
    let store = overlord::settings::store(&fleet.cm.root);
    let changed = store
        .change_batch_with(&id, &mut |bytes| {
            let mut r = BatchRecord::decode(bytes).ok()?;
            r.state.ended.remove("m1");
            r.state.pending.push_back("m1".into());
            r.minion_jobs.remove("m1");
            r.complete = false;
            r.driver = None;
            Some(r.encode())
        })
        .unwrap();
    assert!(changed);
    drop(store);
    let out = fleet.func(&["batch", "recover"]);
    assert!(out.stdout.contains("resumed"), "{out:?}");
    let doc = wait_complete(&fleet, &id);
    assert_eq!(doc["hosts"]["m1"]["state"], "refused", "{doc}");
    let why = doc["hosts"]["m1"]["reason"].as_str().unwrap_or_default();
    assert!(why.contains("already ran here"), "{doc}");
    assert_eq!(runs(), 2, "m1 did not run the command again");
    let status = fleet.func(&["batch", "status", &id]);
    assert!(
        status.stdout.contains("m1: refused") && status.stdout.contains("already ran here"),
        "{status:?}"
    );
    assert_ne!(status.code, 0, "a refused host is no success: {status:?}");
}
