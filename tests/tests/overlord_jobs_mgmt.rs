//! `func jobs list | lookup | active | kill` against real minions.

use std::time::Duration;

use func_tests::fixture::{wait_until, Fleet};
use serde_json::Value as J;

use crate::helper::{job_id, processes};

fn json(fleet: &Fleet, args: &[&str]) -> J {
    let mut full = vec!["--json"];
    full.extend_from_slice(args);
    let out = fleet.func(&full);
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"))
}

#[test]
fn list_lookup_and_missing_with_hosts_down_before_and_after_dispatch() {
    let mut fleet = Fleet::start(&["m1", "m2", "m3", "m4"]);
    fleet.minion("m3").stop();
    let id = job_id(
        &fleet
            .func(&["*", "call", "--async", "--nopoll", "test", "sleep", "2"])
            .stdout,
    );
    // Wait until the driver has dispatched (m3 failed, the rest running), then lose m4.
    assert!(wait_until(Duration::from_secs(30), || {
        let doc = json(&fleet, &["jobs", "lookup", &id, "--missing"]);
        doc.as_object()
            .is_some_and(|m| m.len() == 3 && m.values().all(|v| v == "running"))
    }));
    fleet.minion("m4").stop();
    let out = fleet.func(&["-t", "8", "job_status", &id, "--wait"]);
    assert_eq!(
        out.code, 3,
        "m4 never answers, so the job is not finished: {out:?}"
    );
    let missing = json(&fleet, &["jobs", "lookup", &id, "--missing"]);
    let missing = missing.as_object().unwrap();
    assert_eq!(missing.keys().collect::<Vec<_>>(), ["m4"]);
    assert!(
        missing["m4"].as_str().unwrap().starts_with("unreachable"),
        "{missing:?}"
    );
    let lookup = json(&fleet, &["jobs", "lookup", &id]);
    assert_eq!(lookup["status"], 3);
    assert!(lookup["results"]["m1"].as_f64().is_some());
    assert_eq!(lookup["results"]["m3"][0], "REMOTE_ERROR");
    // A second job, to filter on.
    let out = fleet.func(&["-t", "30", "m1;m2", "call", "--async", "test", "add", "1", "2"]);
    assert_eq!(out.code, 0, "{out:?}");
    let list = json(&fleet, &["jobs", "list"]);
    let rows = list["jobs"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["function"], "test.add", "newest first");
    assert_eq!(rows[1]["id"], id.as_str());
    let counts = &rows[1]["counts"];
    assert_eq!(rows[1]["hosts"], 4, "{list}");
    assert_eq!(
        (counts["ok"].as_u64(), counts["pending"].as_u64()),
        (Some(2), Some(1)),
        "{list}"
    );
    assert_eq!(
        counts["failed"].as_u64().unwrap_or(0) + counts["unreachable"].as_u64().unwrap_or(0),
        1,
        "{list}"
    );
    assert_eq!(
        (rows[1]["outcome"].as_str(), rows[1]["finished"].as_bool()),
        (Some("running"), Some(false))
    );
    let only = |args: &[&str]| -> Vec<String> {
        let mut full = vec!["jobs", "list"];
        full.extend_from_slice(args);
        json(&fleet, &full)["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["function"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(only(&["--function", "test.s*"]), ["test.sleep"]);
    assert_eq!(only(&["--target", "m1;m2"]), ["test.add"]);
    assert_eq!(only(&["--limit", "1"]), ["test.add"]);
    assert_eq!(only(&["--since", "1h"]).len(), 2);
    assert!(only(&["--until", "2000-01-01"]).is_empty());
    let table = fleet.func(&["jobs", "list"]).stdout;
    assert!(table.starts_with("JOB_ID"), "{table}");
    assert!(table.contains("2 ok, 1 unreachable, 1 pending"), "{table}");
    for bad in [
        &["jobs", "list", "--since", "yesterday"][..],
        &["jobs", "list", "--limit", "0"],
        &["jobs", "list", "--bogus"],
        &["jobs", "lookup"],
        &["jobs", "kill", "x", "--signal", "NOPE"],
        &["jobs", "frob"],
    ] {
        assert_eq!(fleet.func(bad).code, 2, "{bad:?}");
    }
}

#[test]
fn active_groups_running_hosts_by_job() {
    let fleet = Fleet::start(&["m1", "m2", "m3"]);
    let id = job_id(
        &fleet
            .func(&["*", "call", "--async", "--nopoll", "test", "sleep", "5"])
            .stdout,
    );
    let mut doc = J::Null;
    assert!(
        wait_until(Duration::from_secs(30), || {
            doc = json(&fleet, &["jobs", "active"]);
            doc["jobs"][&id]["running"]
                .as_array()
                .is_some_and(|r| r.len() == 3)
        }),
        "{doc}"
    );
    assert_eq!(doc["jobs"][&id]["running"], serde_json::json!(["m1", "m2", "m3"]));
    assert_eq!(doc["jobs"][&id]["returned"], serde_json::json!([]));
    let text = fleet.func(&["jobs", "active", "m1"]).stdout;
    assert!(text.contains(&id) && text.contains("running (1): m1"), "{text}");
    let out = fleet.func(&["-t", "30", "job_status", &id, "--wait"]);
    assert_eq!(out.code, 0);
    let text = fleet.func(&["jobs", "active"]).stdout;
    assert!(text.starts_with("no jobs running"), "{text}");
}

#[test]
fn kill_ends_the_whole_process_group_and_the_job_collapses_as_killed() {
    let fleet = Fleet::start(&["m1", "m2"]);
    let out = fleet.func(&[
        "*",
        "call",
        "--async",
        "--nopoll",
        "command",
        "run",
        "sleep 173 & sleep 173",
    ]);
    let id = job_id(&out.stdout);
    assert!(
        wait_until(Duration::from_secs(30), || processes(&["sleep", "173"]) == 4),
        "two sleeps per host"
    );
    let out = fleet.func(&["--json", "jobs", "kill", &id]);
    assert_eq!(out.code, 0, "{out:?}");
    let doc: J = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(doc["status"], 1);
    for host in ["m1", "m2"] {
        let err = &doc["results"][host];
        assert_eq!(err[1], "func.minion.JobDied", "{doc}");
        assert!(
            err[2].as_str().unwrap().contains("killed: SIGKILL sent by"),
            "{doc}"
        );
    }
    assert!(
        wait_until(Duration::from_secs(10), || processes(&["sleep", "173"]) == 0),
        "no sleep left behind (Salt #26490)"
    );
    let out = fleet.func(&["jobs", "kill", &id]);
    assert_eq!(out.code, 0, "killing a finished job is a no-op: {out:?}");
    assert_eq!(fleet.func(&["jobs", "kill", "*-nope-nope-1.0"]).code, 1);
}
