//! Output for people: blocks stream as hosts end, a summary on stderr names
//! who failed and how, progress names the hosts awaited, colour only on a
//! terminal and never with NO_COLOR, host names in natural order.

use std::process::Command;

use func_tests::fixture::{bin, Fleet};

use crate::helper::job_id;

/// `func ARGS` under a pseudo-terminal (`script`), with `env`; all it wrote.
fn on_terminal(fleet: &Fleet, args: &[&str], env: &[(&str, &str)]) -> String {
    let mut line = format!(
        "{} --root '{}'",
        bin("func").display(),
        fleet.cm.root.dir().display()
    );
    for a in args {
        line.push_str(&format!(" '{a}'"));
    }
    let out = Command::new("script")
        .args(["-qec", &line, "/dev/null"])
        .env_remove("NO_COLOR")
        .envs(env.iter().copied())
        .output()
        .expect("script runs");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn summary_names_who_failed_and_how() {
    let mut fleet = Fleet::start(&["m1", "m2", "m3", "m4"]);
    fleet.minion("m3").stop();
    let m4 = nix::unistd::Pid::from_raw(fleet.minion("m4").pid() as i32);
    nix::sys::signal::kill(m4, nix::sys::signal::Signal::SIGSTOP).unwrap();
    let out = fleet.func(&["-t", "2", "*", "call", "test", "ping"]);
    nix::sys::signal::kill(m4, nix::sys::signal::Signal::SIGCONT).unwrap();
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.stderr
            .contains("4 hosts: 2 ok, 1 unreachable (m3), 1 timed out (m4)"),
        "{}",
        out.stderr
    );
    let out = fleet.func(&["m1;m2;nosuch", "call", "test", "explode"]);
    assert!(
        out.stderr
            .contains("2 hosts: 0 ok, 2 failed (m1, m2), 1 unknown (nosuch)"),
        "{}",
        out.stderr
    );
    assert!(
        !out.stdout.contains('\x1b') && !out.stderr.contains('\x1b'),
        "no colour when piped"
    );
    let quiet = fleet.func(&["-q", "m1", "call", "test", "explode"]);
    assert!(
        !quiet.stderr.contains("hosts:") && !quiet.stderr.contains("host:"),
        "{}",
        quiet.stderr
    );
}

#[test]
fn colour_and_progress_only_on_a_terminal() {
    let fleet = Fleet::start(&["m1", "m2"]);
    let shown = on_terminal(&fleet, &["m1", "call", "test", "explode"], &[]);
    assert!(
        shown.contains("\x1b[31m"),
        "failures stand out on a terminal: {shown:?}"
    );
    let plain = on_terminal(&fleet, &["m1", "call", "test", "explode"], &[("NO_COLOR", "1")]);
    assert!(
        !plain.contains("\x1b[31m") && plain.contains("ERROR"),
        "{plain:?}"
    );
    let waited = on_terminal(
        &fleet,
        &["-t", "30", "*", "call", "--async", "test", "sleep", "1"],
        &[("NO_COLOR", "1")],
    );
    assert!(
        waited.contains("2 hosts left: m1, m2"),
        "progress names who is awaited: {waited:?}"
    );
}

#[test]
fn listings_use_natural_order() {
    let fleet = Fleet::start(&["m10", "m2", "m1"]);
    let out = fleet.func(&["*", "call", "--async", "--nopoll", "test", "ping"]);
    let id = job_id(&out.stdout);
    let done = fleet.func(&["-t", "30", "job_status", &id, "--wait"]);
    let hosts: Vec<&str> = done.stdout.lines().filter(|l| l.ends_with(':')).collect();
    assert_eq!(hosts, ["m1:", "m2:", "m10:"], "{}", done.stdout);
}

#[test]
fn job_ids_are_printed_quoted_and_last_names_the_newest() {
    let fleet = Fleet::start(&["m1", "m2"]);
    let out = fleet.func(&["*", "call", "--async", "--nopoll", "test", "ping"]);
    let line = out.stdout.trim();
    assert!(
        line.starts_with("JOB_ID: '*-test-ping-") && line.ends_with('\''),
        "{line}"
    );
    let id = job_id(&out.stdout);
    let done = crate::helper::func_json(&fleet, &["-t", "30", "job_status", "last", "--wait"]);
    assert_eq!(done["job_id"], id.as_str(), "{done}");
    assert_eq!(done["status"], 1, "{done}");
    let looked = fleet.func(&["jobs", "lookup", "last"]);
    assert_eq!(looked.code, 0, "{looked:?}");
    let doc = crate::helper::func_json(&fleet, &["m1", "call", "--async", "--nopoll", "test", "ping"]);
    assert!(
        doc["job_id"]
            .as_str()
            .is_some_and(|j| j.starts_with("m1-test-ping-")),
        "{doc}"
    );
    let batch = fleet.func(&["*", "call", "--batch", "1", "test", "ping"]);
    let batch_id = job_id(&batch.stderr);
    let status = crate::helper::func_json(&fleet, &["batch", "status", "last"]);
    assert_eq!(status["job_id"], batch_id.as_str(), "the newest batch: {status}");
}

#[test]
fn job_commands_say_what_is_true() {
    let fleet = Fleet::start(&["m1", "m2"]);
    let out = fleet.func(&["*", "call", "--async", "--nopoll", "test", "sleep", "1"]);
    let id = job_id(&out.stdout);
    // Not polled: listed as last recorded, and said to be so.
    let rows = crate::helper::func_json(&fleet, &["jobs", "list"])["jobs"].clone();
    assert_eq!(rows[0]["id"], id.as_str());
    assert_eq!(
        (rows[0]["outcome"].as_str(), rows[0]["finished"].as_bool()),
        (Some("running"), Some(false)),
        "{rows}"
    );
    let table = fleet.func(&["jobs", "list"]).stdout;
    assert!(
        table.contains("running?") && table.contains("func job_status ID"),
        "{table}"
    );
    let done = fleet.func(&["-t", "30", "job_status", &id, "--wait"]);
    assert_eq!(done.code, 0, "{done:?}");
    let rows = crate::helper::func_json(&fleet, &["jobs", "list"])["jobs"].clone();
    assert_eq!(
        (rows[0]["outcome"].as_str(), rows[0]["finished"].as_bool()),
        (Some("ok"), Some(true)),
        "{rows}"
    );
    let kill = fleet.func(&["jobs", "kill", &id]);
    assert_eq!(kill.code, 0, "{kill:?}");
    assert!(
        kill.stdout.contains("already finished: nothing to kill"),
        "{}",
        kill.stdout
    );
    let missing = fleet.func(&["jobs", "lookup", &id, "--missing"]);
    assert!(
        missing
            .stdout
            .contains("nothing missing: all 2 hosts have answered"),
        "{}",
        missing.stdout
    );
}
