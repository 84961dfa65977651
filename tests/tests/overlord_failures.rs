//! Failure means failure: a command's non-zero exit status is a failed
//! host (output, exit status, `--failhard`, async batches), and one
//! stalled host does not hide the others' results.

use std::time::Duration;

use func_tests::fixture::{wait_until, Fleet};
use serde_json::Value as J;

use crate::helper::{func_json as json, job_id};

#[test]
fn a_non_zero_exit_status_is_a_failed_host() {
    let fleet = Fleet::start(&["db1", "db2", "web1"]);
    let out = fleet.func(&[
        "db1;db2",
        "call",
        "command",
        "run",
        "echo on $(hostname) >/dev/null; exit 3",
    ]);
    assert_eq!(out.code, 1, "{out:?}");
    assert_eq!(
        out.stdout.matches("FAILED: exit status 3").count(),
        2,
        "{}",
        out.stdout
    );
    // The wire result is unchanged: Func's [rc, stdout, stderr].
    let doc = json(&fleet, &["db1", "call", "command", "run", "exit 3"]);
    assert_eq!(doc["db1"], serde_json::json!([3, "", ""]));
    let ok = fleet.func(&["db1", "call", "command", "run", "true"]);
    assert_eq!(ok.code, 0, "{ok:?}");
    // --failhard stops at the first failing command.
    let out = fleet.func(&[
        "*",
        "call",
        "--batch",
        "1",
        "--failhard",
        "command",
        "run",
        "exit 1",
    ]);
    assert_eq!(out.code, 1, "{out:?}");
    let id = job_id(&out.stderr);
    let doc = json(&fleet, &["batch", "status", &id]);
    assert_eq!(doc["halted"], "failhard", "{doc}");
    let states: Vec<&str> = doc["hosts"]
        .as_object()
        .unwrap()
        .values()
        .map(|h| h["state"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(states.iter().filter(|s| **s == "failed").count(), 1, "{doc}");
    assert_eq!(states.iter().filter(|s| **s == "abandoned").count(), 2, "{doc}");
    // So does an async batch.
    let out = fleet.func(&[
        "*",
        "call",
        "--async",
        "--batch",
        "1",
        "--failhard",
        "command",
        "run",
        "exit 1",
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    let id = job_id(&format!("{}{}", out.stdout, out.stderr));
    let mut doc = J::Null;
    assert!(wait_until(Duration::from_secs(60), || {
        doc = json(&fleet, &["batch", "status", &id]);
        doc["complete"] == true
    }));
    assert_eq!(doc["halted"], "failhard", "{doc}");
    let status = fleet.func(&["job_status", &id]);
    assert_eq!(status.code, 1, "{status:?}");
}

#[test]
fn one_stalled_host_does_not_hide_the_others() {
    let mut fleet = Fleet::start(&["m1", "m2", "m3", "m4"]);
    let m4 = nix::unistd::Pid::from_raw(fleet.minion("m4").pid() as i32);
    nix::sys::signal::kill(m4, nix::sys::signal::Signal::SIGSTOP).unwrap();
    let out = fleet.func(&[
        "-t", "60", "*", "call", "--async", "--nopoll", "test", "sleep", "1",
    ]);
    let id = job_id(&out.stdout);
    let mut doc = J::Null;
    let seen = wait_until(Duration::from_secs(20), || {
        doc = json(&fleet, &["job_status", &id]);
        doc["results"].as_object().is_some_and(|r| r.len() == 3)
    });
    nix::sys::signal::kill(m4, nix::sys::signal::Signal::SIGCONT).unwrap();
    assert!(
        seen,
        "the three live hosts' results are there while m4 is stalled: {doc}"
    );
    assert!(doc["waiting"]["m4"].is_string(), "{doc}");
}

/// Runs `bin ARGS` with its stdout read up to the first line and then
/// closed (as `| head -1` does); returns (exit code, stderr).
fn head_1(bin: &str, args: &[&str]) -> (Option<i32>, String) {
    use std::io::{BufRead, Read};
    let mut child = std::process::Command::new(func_tests::fixture::bin(bin))
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("runs");
    let mut first = String::new();
    let mut stdout = std::io::BufReader::new(child.stdout.take().expect("stdout"));
    let _ = stdout.read_line(&mut first);
    drop(stdout);
    let mut stderr = String::new();
    let _ = child.stderr.take().expect("stderr").read_to_string(&mut stderr);
    let status = child.wait().expect("ends");
    (status.code(), stderr)
}

#[test]
fn a_closed_stdout_never_panics_and_leaves_nothing_unexplained() {
    let fleet = Fleet::start(&["m1", "m2", "m3"]);
    let root = fleet.cm.root.dir().to_str().unwrap().to_string();
    let (code, err) = head_1(
        "func",
        &["--root", &root, "*", "call", "command", "run", "seq 1 1000"],
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    // A sync batch whose reader went away runs to its end, recorded as such.
    let (code, err) = head_1(
        "func",
        &["--root", &root, "*", "call", "--batch", "1", "test", "sleep", "1"],
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    let id = job_id(&err);
    let doc = json(&fleet, &["batch", "status", &id]);
    assert_eq!(doc["complete"], true, "{doc}");
    let states: Vec<&str> = doc["hosts"]
        .as_object()
        .unwrap()
        .values()
        .map(|h| h["state"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(states, ["done", "done", "done"], "{doc}");
    let (code, err) = head_1("func", &["--root", &root, "batch", "status", &id, "--follow"]);
    assert_eq!(code, Some(0), "{err}");
    let (code, err) = head_1("certmaster-ca", &["--root", &root, "--list-signed"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn a_closed_stderr_never_panics_either() {
    // `func ... 2>&1 | head -1`: the reader goes away after one line, and
    // the JOB_ID line and the summary go to the closed stderr.
    use std::io::BufRead;
    let fleet = Fleet::start(&["m1", "m2"]);
    let root = fleet.cm.root.dir().to_str().unwrap().to_string();
    for (args, expected) in [
        (vec!["*", "call", "--async", "test", "ping"], 0),
        (vec!["*", "call", "test", "ping"], 0),
        (vec!["*", "call", "test", "explode"], 1),
    ] {
        let (reader, writer) = std::io::pipe().expect("a pipe");
        let mut child = std::process::Command::new(func_tests::fixture::bin("func"))
            .args(["--root", &root])
            .args(&args)
            .stdout(writer.try_clone().expect("dup"))
            .stderr(writer)
            .spawn()
            .expect("runs");
        let mut first = String::new();
        let mut reader = std::io::BufReader::new(reader);
        let _ = reader.read_line(&mut first);
        drop(reader);
        let status = child.wait().expect("ends");
        assert_eq!(status.code(), Some(expected), "{args:?}: first line {first:?}");
    }
}

#[test]
fn targeting_mistakes_and_a_wrong_root_are_said_once_and_clearly() {
    let fleet = Fleet::start(&["m1", "m2"]);
    let out = fleet.func(&["m1;nosuch", "ping"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.stderr.contains("no minion named \"nosuch\""),
        "{}",
        out.stderr
    );
    assert!(out.stdout.contains("m1"), "the others still run: {}", out.stdout);
    let out = fleet.func(&["m1,m2", "ping"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.stderr.contains("';' separates names: 'm1;m2'"),
        "{}",
        out.stderr
    );
    assert_eq!(fleet.func(&["m*", "ping"]).code, 0, "globs that match are fine");
    // A root with no certmaster below it.
    let out = std::process::Command::new(func_tests::fixture::bin("func"))
        .args(["--root", "/nonexistent-func-root", "*", "ping"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1));
    assert!(err.contains("does not exist") && err.contains("--root"), "{err}");
    let out = std::process::Command::new(func_tests::fixture::bin("certmaster-ca"))
        .args(["--root", "/nonexistent-func-root", "--list"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("no certmaster below") && err.contains("--root"),
        "{err}"
    );
    // A user who cannot read the overlord's key hears it once, not per host.
    for d in fleet
        .cm
        .root
        .dir()
        .ancestors()
        .filter(|d| d.starts_with(std::env::temp_dir()) && *d != std::env::temp_dir())
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(d).unwrap().permissions().mode();
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(mode | 0o755)).unwrap();
    }
    let out = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(func_tests::fixture::bin("func"))
        .arg("--root")
        .arg(fleet.cm.root.dir())
        .args(["*", "ping"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.matches("Permission denied").count(), 1, "{err}");
    assert!(err.contains("overlord"), "{err}");
}

/// Starts `func ARGS` (root of `fleet`), waits for its `JOB_ID` line on
/// stderr and for `ready(id)`, presses Ctrl-C; returns (id, code, stderr).
fn interrupt(fleet: &Fleet, args: &[&str], ready: impl Fn(&str) -> bool) -> (String, Option<i32>, String) {
    use std::io::{BufRead, Read};
    let mut child = std::process::Command::new(func_tests::fixture::bin("func"))
        .arg("--root")
        .arg(fleet.cm.root.dir())
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("func runs");
    let mut stderr = std::io::BufReader::new(child.stderr.take().expect("stderr"));
    let mut first = String::new();
    stderr.read_line(&mut first).expect("JOB_ID line");
    let id = job_id(&first);
    assert!(
        wait_until(Duration::from_secs(20), || ready(&id)),
        "work under way"
    );
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let mut rest = String::new();
    let _ = stderr.read_to_string(&mut rest);
    let code = child.wait().expect("func ends").code();
    (id, code, rest)
}

#[test]
fn ctrl_c_says_how_to_follow_stop_or_resume() {
    let fleet = Fleet::start(&["m1", "m2", "m3"]);
    // A sync batch: interrupted, shown as such, resumed by recover.
    let (id, code, err) = interrupt(
        &fleet,
        &["-t", "60", "*", "call", "--batch", "1", "test", "sleep", "2"],
        |id| json(&fleet, &["batch", "status", id])["hosts"]["m1"]["minion_job"].is_string(),
    );
    assert_eq!(code, Some(130), "{err}");
    let quoted = format!("'{id}'");
    for command in ["func batch status", "func batch stop", "func batch recover"] {
        assert!(err.contains(&format!("{command} {quoted}")), "{command}: {err}");
    }
    let doc = json(&fleet, &["batch", "status", &id]);
    assert_eq!(doc["interrupted"], true, "{doc}");
    assert!(
        doc["state"].as_str().unwrap_or("").starts_with("interrupted"),
        "{doc}"
    );
    // It reads as interrupted in the job listing too, with how to resume.
    let list = fleet.func(&["jobs", "list", "--limit", "5"]);
    let row = list
        .stdout
        .lines()
        .find(|l| l.starts_with(&id))
        .unwrap_or_default()
        .to_string();
    assert!(row.contains("interrupted"), "{}", list.stdout);
    assert!(
        list.stdout.contains(&format!("func batch recover '{id}'")),
        "{}",
        list.stdout
    );
    // Once job_status has m1's result, batch status agrees (m1 is no
    // longer shown as active).
    assert!(wait_until(Duration::from_secs(60), || {
        json(&fleet, &["job_status", &id])["results"].get("m1").is_some()
    }));
    let doc = json(&fleet, &["batch", "status", &id]);
    assert_eq!(doc["hosts"]["m1"]["state"], "done", "{doc}");
    let out = fleet.func(&["batch", "recover", &id]);
    assert_eq!(out.code, 0, "{out:?}");
    let mut doc = J::Null;
    assert!(wait_until(Duration::from_secs(60), || {
        doc = json(&fleet, &["batch", "status", &id]);
        doc["complete"] == true
    }));
    for h in ["m1", "m2", "m3"] {
        assert_eq!(doc["hosts"][h]["state"], "done", "{doc}");
    }
    // A polling async call: the job keeps running and can be followed.
    let (id, code, err) = interrupt(
        &fleet,
        &["-t", "60", "*", "call", "--async", "test", "sleep", "2"],
        |id| {
            json(&fleet, &["job_status", id])["waiting"]
                .as_object()
                .is_some_and(|w| w.values().any(|v| v == "running"))
        },
    );
    assert_eq!(code, Some(130), "{err}");
    assert!(err.contains(&format!("func job_status '{id}' --wait")), "{err}");
    let done = json(&fleet, &["-t", "60", "job_status", &id, "--wait"]);
    assert_eq!(done["status"], 1, "{done}");
    assert_eq!(done["results"].as_object().map(|r| r.len()), Some(3), "{done}");
}
