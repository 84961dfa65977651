//! Hardening I, callers limited by an ACL: each test performs an attack
//! that worked before the fix (a minion certificate reading and killing
//! the overlord's jobs, `system.grep` escaping the ACL, a forged audit
//! line, an ACL key matching a look-alike name) and checks it fails now.

use std::time::Duration;

use common::rpc::client::CallError;
use common::Value;
use func_tests::fixture::wait_until;

use crate::helper::{post, s, OneMinion};

fn ints(v: &Value) -> Vec<i64> {
    match v {
        Value::Array(a) => a
            .iter()
            .map(|x| match x {
                Value::Integer(i) => i64::from(*i),
                Value::Long(l) => *l,
                _ => i64::MIN,
            })
            .collect(),
        _ => vec![],
    }
}

fn string(v: Value) -> String {
    match v {
        Value::String(s) => s,
        other => panic!("expected a string, got {other:?}"),
    }
}

#[test]
fn another_caller_cannot_see_wait_on_or_kill_the_overlords_jobs() {
    let m = OneMinion::start_with("m1", "", "m2-* = test.*, command.run, jobs.*\n");
    let m2 = m.other_caller("m2");
    let secret = m
        .call("async.command.run", vec![s("sleep 30; echo password=hunter2")])
        .map(string)
        .unwrap();
    let unknown = "1700000000.123456-minion";
    // Every jobs.* answer about the overlord's job is exactly the answer
    // about an id that never existed.
    for (method, extra) in [
        ("jobs.job_status", vec![]),
        ("jobs.wait_job", vec![Value::Integer(0)]),
        ("jobs.find_job", vec![]),
        ("jobs.kill_job", vec![]),
        ("jobs.term_job", vec![]),
        ("jobs.signal_job", vec![s("KILL")]),
    ] {
        let ask = |id: &str| {
            let mut params = vec![s(id)];
            params.extend(extra.clone());
            let answer = m.call_as(&m2, method, params).unwrap();
            format!("{answer:?}").replace(id, "ID")
        };
        assert_eq!(ask(&secret), ask(unknown), "{method}");
    }
    assert_eq!(
        m.call_as(&m2, "jobs.running", vec![]).unwrap(),
        Value::Array(vec![])
    );
    assert_eq!(
        m.call_as(&m2, "jobs.list_jobs", vec![]).unwrap(),
        Value::Array(vec![])
    );
    // The overlord's job was not killed and is still the overlord's to see.
    assert_eq!(
        ints(&m.call("jobs.job_status", vec![s(&secret)]).unwrap()),
        vec![0, -1],
        "still running"
    );
    // m2 sees and manages its own jobs; the overlord sees both.
    let own = m
        .call_as(&m2, "async.test.sleep", vec![s("30")])
        .map(string)
        .unwrap();
    let Value::Array(running) = m.call_as(&m2, "jobs.running", vec![]).unwrap() else {
        panic!("running")
    };
    assert_eq!(running.len(), 1);
    assert!(format!("{running:?}").contains(&own));
    let Value::Array(all) = m.call("jobs.running", vec![]).unwrap() else {
        panic!("running")
    };
    assert_eq!(all.len(), 2, "the overlord sees every job");
    let killed = string(m.call_as(&m2, "jobs.kill_job", vec![s(&own)]).unwrap());
    assert!(killed.contains("sent SIGKILL"), "{killed}");
    assert!(wait_until(Duration::from_secs(20), || {
        ints(&m.call_as(&m2, "jobs.job_status", vec![s(&own)]).unwrap()).first() == Some(&1)
    }));
    let killed = string(m.call("jobs.kill_job", vec![s(&secret)]).unwrap());
    assert!(
        killed.contains("sent SIGKILL"),
        "the overlord manages all: {killed}"
    );
}

#[test]
fn system_grep_runs_only_the_modules_the_caller_may_call() {
    let m = OneMinion::start_with("m1", "", "m2-* = system.*\n");
    let m2 = m.other_caller("m2");
    // funcd itself is always in `ps aux`.
    let word = s("funcd");
    let Value::Struct(as_overlord) = m.call("system.grep", vec![word.clone()]).unwrap() else {
        panic!("grep")
    };
    assert!(as_overlord.contains_key("process.info"), "{as_overlord:?}");
    let denied = m.call_as(&m2, "process.grep", vec![word.clone()]);
    assert!(
        matches!(denied, Err(CallError::Fault { code: 1, .. })),
        "{denied:?}"
    );
    let Value::Struct(as_m2) = m.call_as(&m2, "system.grep", vec![word]).unwrap() else {
        panic!("grep")
    };
    assert!(as_m2.keys().all(|k| !k.starts_with("process.")), "{as_m2:?}");
}

#[test]
fn method_names_are_printable_and_one_call_is_one_audit_line() {
    let m = OneMinion::start_with("m1", "", "m2-* = *\n");
    let m2 = m.other_caller("m2");
    let audit = m.root.audit_log();
    let lines = || {
        std::fs::read_to_string(&audit)
            .unwrap_or_default()
            .lines()
            .count()
    };
    assert_eq!(m.call("test.ping", vec![]).unwrap(), Value::Integer(1));
    let before = lines();
    let forged = "test.ping\n2026-01-01T00:00:00Z 10.0.0.1 overlord-1 command.run called with ('rm -rf /')";
    for name in [forged, "test.ping\u{1b}[2K", "test ping", "tést.ping"] {
        let e = m.call_as(&m2, name, vec![]);
        assert!(
            matches!(e, Err(CallError::Fault { code: -32600, .. })),
            "{name:?}: {e:?}"
        );
    }
    // Raw, so no client-side escaping helps: a newline inside <methodName>.
    let body =
        format!("<?xml version=\"1.0\"?><methodCall><methodName>{forged}</methodName><params/></methodCall>");
    let reply = String::from_utf8_lossy(&m.raw(post(body.as_bytes()), false)).into_owned();
    assert!(reply.contains("faultCode") && reply.contains("-32600"), "{reply}");
    // Arguments with line breaks are escaped in the one line they get.
    let tricky = s("a\nb\r\u{2028}c\\");
    assert_eq!(m.call_as(&m2, "test.echo", vec![tricky.clone()]).unwrap(), tricky);
    let text = std::fs::read_to_string(&audit).unwrap();
    assert_eq!(lines(), before + 1, "{text}");
    let last = text.lines().last().unwrap();
    assert!(
        last.contains("test.echo called with ('a\\nb\\r\\u{2028}c\\\\')"),
        "{last}"
    );
    assert!(!text.contains("rm -rf"), "{text}");
}

#[test]
fn an_acl_key_names_a_host_not_a_prefix() {
    let m = OneMinion::start_with("m1", "", "m2-* = test.*\n");
    let (m2, evil) = (m.other_caller("m2"), m.other_caller("m2-evil"));
    assert_eq!(m.call_as(&m2, "test.ping", vec![]).unwrap(), Value::Integer(1));
    let e = m.call_as(&evil, "test.ping", vec![]);
    assert!(matches!(e, Err(CallError::Fault { code: 1, .. })), "{e:?}");
}
