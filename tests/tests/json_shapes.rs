//! `--json` for programs: each command's document has one shape in every
//! state (docs/JSON.md), errors are documents too, `--out yaml|txt`, typed
//! arguments, and `--follow` as JSON lines.

use std::time::Duration;

use func_tests::fixture::{wait_until, Fleet};
use serde_json::Value as J;

use crate::helper::{func_json as json, job_id};

/// The keys of an object and the JSON type of each value.
fn shape(doc: &J) -> Vec<(String, &'static str)> {
    let kind = |v: &J| match v {
        J::Null => "null",
        J::Bool(_) => "bool",
        J::Number(_) => "number",
        J::String(_) => "string",
        J::Array(_) => "array",
        J::Object(_) => "object",
    };
    doc.as_object()
        .unwrap_or_else(|| panic!("not an object: {doc}"))
        .iter()
        .map(|(k, v)| (k.clone(), kind(v)))
        .collect()
}

#[test]
fn job_status_has_one_shape_running_partial_finished_unknown() {
    let mut fleet = Fleet::start(&["m1", "m2"]);
    let unknown = json(&fleet, &["job_status", "*-test-ping-1.5"]);
    let out = fleet.func(&["*", "call", "--async", "--nopoll", "test", "sleep", "2"]);
    let id = job_id(&out.stdout);
    let running = json(&fleet, &["job_status", &id]);
    assert!([0, 3].contains(&running["status"].as_i64().unwrap()), "{running}");
    let finished = json(&fleet, &["-t", "30", "job_status", &id, "--wait"]);
    assert_eq!(finished["status"], 1);
    // Partial: one host stopped while the other finishes.
    let m2 = nix::unistd::Pid::from_raw(fleet.minion("m2").pid() as i32);
    let out = fleet.func(&["-t", "60", "*", "call", "--async", "--nopoll", "test", "ping"]);
    let id2 = job_id(&out.stdout);
    nix::sys::signal::kill(m2, nix::sys::signal::Signal::SIGSTOP).unwrap();
    let mut partial = J::Null;
    let seen = wait_until(Duration::from_secs(20), || {
        partial = json(&fleet, &["job_status", &id2]);
        partial["status"] == 3 || partial["status"] == 1
    });
    nix::sys::signal::kill(m2, nix::sys::signal::Signal::SIGCONT).unwrap();
    assert!(seen, "{partial}");
    for doc in [&unknown, &running, &partial, &finished] {
        assert_eq!(shape(doc), shape(&finished), "{doc}");
    }
    assert_eq!(unknown["results"], serde_json::json!({}));
    assert_eq!(unknown["state"], "lost in space");
    fleet.minion("m1").stop();
}

#[test]
fn errors_batches_groups_and_formats_are_documents() {
    let fleet = Fleet::start(&["m1", "m2"]);
    // An error is a document too.
    let out = fleet.func(&["--json", "nohost", "ping"]);
    assert_eq!(out.code, 1);
    let err: J = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(
        shape(&err),
        [
            ("error".to_string(), "string"),
            ("exit_status".to_string(), "number"),
            ("kind".to_string(), "string")
        ]
    );
    // Its kind tells programs a SPEC that matched nothing from other
    // refusals (the Python API reads it instead of the message), in every
    // document format asked for.
    assert_eq!(err["kind"], "no_match", "{err}");
    let usage: J = serde_json::from_str(&fleet.func(&["--json", "*", "call", "test"]).stdout).unwrap();
    assert_eq!(
        (usage["kind"].as_str(), usage["exit_status"].as_i64()),
        (Some("invalid"), Some(2)),
        "{usage}"
    );
    let xml = fleet.func(&["--out", "xmlrpc", "nohost", "ping"]);
    assert_eq!(xml.code, 1);
    assert!(
        xml.stdout.starts_with("<?xml")
            && xml
                .stdout
                .contains("<name>kind</name><value><string>no_match</string>"),
        "{}",
        xml.stdout
    );
    // Batch status: every count key, known or not.
    let out = fleet.func(&["*", "call", "--batch", "1", "test", "ping"]);
    let id = job_id(&out.stderr);
    let known = json(&fleet, &["batch", "status", &id]);
    let unknown = fleet.func(&["--json", "batch", "status", "*-test-ping-1.5"]);
    assert_eq!(unknown.code, 1);
    let unknown: J = serde_json::from_str(&unknown.stdout).unwrap();
    assert_eq!(shape(&known).len(), shape(&unknown).len(), "{known} {unknown}");
    let keys = |d: &J| {
        d["counts"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect::<Vec<_>>()
    };
    assert_eq!(keys(&known), keys(&unknown));
    assert_eq!(keys(&known).len(), 9, "{known}");
    // The listings.
    let minions = json(&fleet, &["*", "list_minions"]);
    assert!(
        minions["m1"]
            .as_str()
            .is_some_and(|a| a.starts_with("127.0.0.1:")),
        "{minions}"
    );
    let batches = json(&fleet, &["batch", "list"]);
    assert!(
        batches[0]["counts"].as_object().is_some_and(|c| c.len() == 9),
        "{batches}"
    );
    let active = json(&fleet, &["jobs", "active"]);
    assert!(
        active["jobs"].is_object() && active["other"].is_array() && active["unreachable"].is_object(),
        "{active}"
    );
    // The page GET /api/v1/jobs answers (one shape for every door), here
    // over the batch and one more job.
    let more = fleet.func(&["m1", "call", "--async", "--nopoll", "test", "ping"]);
    assert_eq!(more.code, 0, "{more:?}");
    let page = json(&fleet, &["jobs", "list"]);
    let jobs = &page["jobs"];
    assert!(page.get("next").is_some(), "{page}");
    for key in [
        "id", "function", "args", "target", "user", "started", "ended", "hosts", "batch", "finished",
        "counts", "outcome",
    ] {
        assert!(jobs[0].get(key).is_some(), "{key}: {jobs}");
    }
    assert_eq!(
        jobs[0]["user"],
        format!("cli:{}", common::process::invoking_user()).as_str()
    );
    assert!(
        jobs[0]["counts"].as_object().is_some_and(|c| c.len() == 5),
        "{jobs}"
    );
    // --limit with more below: `next` names the last row, and --before it
    // gives the rest.
    let first = json(&fleet, &["jobs", "list", "--limit", "1"]);
    assert_eq!(first["jobs"].as_array().map(Vec::len), Some(1), "{first}");
    let next = first["next"].as_str().expect("a next page").to_string();
    assert_eq!(first["jobs"][0]["id"], next.as_str());
    let rest = json(&fleet, &["jobs", "list", "--before", &next]);
    assert_eq!(
        rest["jobs"].as_array().map(Vec::len),
        page["jobs"].as_array().map(|j| j.len() - 1),
        "{rest}"
    );
    assert!(rest["next"].is_null(), "{rest}");
    // Follow as JSON lines.
    let follow = fleet.func(&["--json", "batch", "status", &id, "--follow"]);
    assert!(follow.stdout.lines().count() >= 2, "{follow:?}");
    for line in follow.stdout.lines() {
        let ev: J = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        assert_eq!(ev["job_id"], id.as_str());
    }
    // Stop, recover and group answer with documents.
    let stop = json(&fleet, &["batch", "stop", &id]);
    assert!(
        stop["ok"].is_boolean() && stop["messages"].is_array() && stop["state"].is_string(),
        "{stop}"
    );
    let recover = json(&fleet, &["batch", "recover"]);
    assert_eq!(recover["batches"], serde_json::json!({}), "{recover}");
    let added = json(&fleet, &["*", "group", "--ag", "web"]);
    assert_eq!(
        (&added["ok"], &added["changed"]),
        (&J::Bool(true), &J::Bool(true)),
        "{added}"
    );
    let all = json(&fleet, &["*", "group", "--la"]);
    assert_eq!(all["groups"], serde_json::json!(["web"]));
    // --out txt and yaml.
    let txt = fleet.func(&["--out", "txt", "*", "call", "test", "add", "1", "2"]);
    assert_eq!(txt.stdout, "m1: 3\nm2: 3\n", "{txt:?}");
    let yaml = fleet.func(&["*", "call", "command", "run", "echo hi", "--out", "yaml"]);
    assert_eq!(
        yaml.stdout, "\"m1\":\n  - 0\n  - \"hi\\n\"\n  - \"\"\n\"m2\":\n  - 0\n  - \"hi\\n\"\n  - \"\"\n",
        "{yaml:?}"
    );
    // Typed arguments.
    let typed = json(
        &fleet,
        &[
            "m1",
            "call",
            "command",
            "run",
            "--json-args",
            r#"["echo $FOO", {"FOO": "typed"}]"#,
        ],
    );
    assert_eq!(typed["m1"], serde_json::json!([0, "typed\n", ""]));
    let as_strings = json(&fleet, &["m1", "call", "test", "echo", "5"]);
    assert_eq!(
        as_strings["m1"], "5",
        "without --json-args every argument is a string"
    );
    let out = fleet.func(&["m1", "call", "test", "echo", "--json-args", "{nope"]);
    assert_eq!(out.code, 2, "{out:?}");
}
