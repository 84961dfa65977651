//! What users bring from other tools and from `sudo`: listings in natural
//! order, Salt's spellings answered with the right one, typed arguments kept
//! in the job history, "not finished yet" told apart from "failed" by the
//! exit status, and the invoking user recorded under sudo.

use std::process::Command;

use func_tests::fixture::{bin, Fleet};
use serde_json::Value as J;

use crate::helper::{func_json as json, job_id};

#[test]
fn list_minions_is_in_natural_order() {
    let fleet = Fleet::start(&["m10", "m2", "m1"]);
    let out = fleet.func(&["*", "list_minions"]);
    assert_eq!(
        out.stdout.lines().collect::<Vec<_>>(),
        ["m1", "m2", "m10"],
        "{out:?}"
    );
}

#[test]
fn salt_habits_get_the_func_spelling() {
    let fleet = Fleet::start(&["m1"]);
    for (args, hint) in [
        (
            &["*", "call", "command.run", "uptime"][..],
            "try `call command run uptime`",
        ),
        (&["*", "call", "test.ping"][..], "try `call test ping`"),
        (&["*", "test.ping"][..], "func '*' call test ping"),
        (
            &["*", "cmd.run", "uptime"][..],
            "func '*' call command run uptime",
        ),
        (&["job-status", "last"][..], "did you mean job_status?"),
        // Issue 47: Salt's grains are Func's facts; -G with Salt's target;
        // a command line the shell split.
        (&["*", "grains.items"][..], "func '*' call fact items"),
        (&["*", "call", "grains.items"][..], "try `call fact items`"),
        (
            &["-G", "os:Debian", "test.ping"][..],
            "-G os:Debian call test ping",
        ),
        (
            &["*", "call", "command", "run", "ls", "-la", "/"][..],
            "quote it, as in `call command run 'ls -la /'`",
        ),
        (&["jobstatus", "last"][..], "did you mean job_status?"),
    ] {
        let out = fleet.func(args);
        assert_eq!(out.code, 2, "{args:?}: a usage error: {out:?}");
        assert!(out.stderr.contains(hint), "{args:?}: {out:?}");
    }
    let audit = std::fs::read_to_string(fleet.minions[0].root.audit_log()).unwrap_or_default();
    assert!(!audit.contains("command.run.uptime"), "nothing was sent: {audit}");
    assert!(!audit.contains("test.ping"), "nothing was sent: {audit}");
    // Salt's module name: the call is made (a drop-in may carry it), and a
    // failure is followed by the Func name.
    let out = fleet.func(&["m1", "call", "cmd", "run", "uptime"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.stderr.contains("Salt's cmd.run is Func's command.run"),
        "{out:?}"
    );
}

#[test]
fn typed_args_stay_typed_and_running_is_not_failed() {
    let fleet = Fleet::start(&["m1"]);
    let out = fleet.func(&[
        "m1",
        "call",
        "--async",
        "--nopoll",
        "--json-args",
        r#"["hostname"]"#,
        "command",
        "run",
    ]);
    let typed = job_id(&out.stdout);
    let out = fleet.func(&[
        "m1",
        "call",
        "--async",
        "--nopoll",
        "--json-args",
        r#"[3, {"k": [true, 1.5]}]"#,
        "test",
        "echo",
    ]);
    let mixed = job_id(&out.stdout);
    let list = json(&fleet, &["jobs", "list"]);
    let args_of = |id: &str| -> J {
        list["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|j| j["id"] == id)
            .map(|j| j["args"].clone())
            .unwrap_or(J::Null)
    };
    assert_eq!(args_of(&typed), serde_json::json!(["hostname"]), "{list}");
    assert_eq!(
        args_of(&mixed),
        serde_json::json!([3, {"k": [true, 1.5]}]),
        "{list}"
    );

    // A job still running: its own exit status, and words that say so.
    let out = fleet.func(&["m1", "call", "--async", "--nopoll", "test", "sleep", "30"]);
    let id = job_id(&out.stdout);
    let status = fleet.func(&["job_status", &id]);
    assert_eq!(status.code, 3, "not finished yet: {status:?}");
    assert!(status.stdout.starts_with("JOB_STATUS: running ("), "{status:?}");
    assert!(!status.stdout.contains("partial (3)"), "{status:?}");
    assert_eq!(fleet.func(&["jobs", "lookup", &id]).code, 3);
    assert_eq!(
        fleet.func(&["-t", "1", "job_status", &id, "--wait"]).code,
        3,
        "still running at the deadline"
    );
    assert_eq!(fleet.func(&["jobs", "kill", &id]).code, 0);
    let killed = fleet.func(&["job_status", &id]);
    assert_eq!(killed.code, 1, "finished, failed: {killed:?}");
    let done = fleet.func(&["-t", "30", "job_status", &typed, "--wait"]);
    assert_eq!(done.code, 0, "finished, ok: {done:?}");
}

/// Under sudo (root with SUDO_USER) the job and the minion's audit line
/// name the user who ran sudo; anyone else's SUDO_USER is not believed.
#[test]
fn the_invoking_user_is_recorded_under_sudo() {
    let fleet = Fleet::start(&["m1"]);
    let out = Command::new(bin("func"))
        .arg("--root")
        .arg(fleet.cm.root.dir())
        .args(["m1", "call", "--async", "--nopoll", "test", "ping"])
        .env("SUDO_USER", "alice")
        .output()
        .unwrap();
    let id = job_id(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(fleet.func(&["-t", "30", "job_status", &id, "--wait"]).code, 0);
    let list = json(&fleet, &["jobs", "list"]);
    let user = list["jobs"][0]["user"].as_str().unwrap_or_default().to_string();
    let audit = std::fs::read_to_string(fleet.minions[0].root.audit_log()).unwrap();
    if nix::unistd::getuid().is_root() {
        assert_eq!(user, "cli:alice", "{list}");
        assert!(audit.contains("(user cli:alice) test.ping"), "{audit}");
    } else {
        let me = nix::unistd::User::from_uid(nix::unistd::getuid())
            .unwrap()
            .unwrap()
            .name;
        assert_eq!(
            user,
            format!("cli:{me}"),
            "SUDO_USER from a non-root user is not believed: {list}"
        );
        assert!(!audit.contains("alice"), "{audit}");
    }
    let table = fleet.func(&["jobs", "list"]);
    assert!(table.stdout.contains(&user), "{table:?}");
}

#[test]
fn reading_never_creates_a_store() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["jobs", "list"][..],
        &["batch", "list"][..],
        &["jobs", "list", "--json"][..],
    ] {
        let out = Command::new(bin("func"))
            .arg("--root")
            .arg(dir.path())
            .args(args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}: {out:?}");
        if args == ["jobs", "list"] {
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(
                text.contains("no jobs in") && text.contains("var/lib/func/overlord.redb"),
                "{text}"
            );
        }
    }
    assert!(
        !dir.path().join("var/lib/func").exists(),
        "a read created the store"
    );
}

/// Issue 47: what a new user typed, answered clearly.
#[test]
fn intervals_cron_fields_unknown_jobs_and_a_root_without_an_overlord() {
    let fleet = Fleet::start(&["m1"]);
    let out = fleet.func(&[
        "schedule",
        "add",
        "five",
        "--every",
        "5m",
        "--disabled",
        "*",
        "test",
        "ping",
    ]);
    assert_eq!(out.code, 0, "--every takes a unit as --since does: {out:?}");
    let listed = json(&fleet, &["schedule", "list"]);
    assert_eq!(listed["schedules"][0]["every"], 300, "{listed}");
    let out = fleet.func(&[
        "schedule",
        "add",
        "bad",
        "--cron",
        "61 * * * *",
        "*",
        "test",
        "ping",
    ]);
    assert_ne!(out.code, 0, "{out:?}");
    assert!(out.stderr.contains("the minute (0-59) field \"61\""), "{out:?}");
    // A method no target has would fail every run: refused when made.
    let out = fleet.func(&["schedule", "add", "typo", "--every", "60", "*", "test", "pnig"]);
    assert_ne!(out.code, 0, "{out:?}");
    assert!(
        out.stderr.contains("no host the SPEC names has test.pnig"),
        "{out:?}"
    );
    let out = fleet.func(&["jobs", "kill", "nope"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.stderr
            .contains("no job nope (unknown, or expired): nothing to kill"),
        "{out:?}"
    );
    assert!(!out.stdout.contains("lost in space"), "{out:?}");
    let empty = fleet.dir.path().join("no-overlord");
    std::fs::create_dir(&empty).unwrap();
    let out = Command::new(bin("func-api"))
        .args([
            "--root",
            empty.to_str().unwrap(),
            "token",
            "create",
            "x",
            "--admin",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no overlord below the root"));
    assert!(
        !empty.join("var").exists(),
        "no token file written where nothing reads it"
    );
}
