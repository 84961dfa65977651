//! Calls over the wire as the overlord and as other certificates.

use std::collections::BTreeMap;
use std::time::Duration;

use common::rpc::client::{CallError, MinionClient};
use common::Value;
use func_tests::fixture::Pki;

use crate::helper::{remote_error, s, OneMinion};

#[test]
fn test_module_basics() {
    let m = OneMinion::start("m1");
    assert_eq!(m.call("test.ping", vec![]).unwrap(), Value::Integer(1));
    assert_eq!(
        m.call("test.add", vec![Value::Integer(1), Value::Integer(5)])
            .unwrap(),
        Value::Integer(6)
    );
    assert_eq!(m.call("test.add", vec![s("foo"), s("bar")]).unwrap(), s("foobar"));
    assert_eq!(m.call("test.bigint", vec![]).unwrap(), Value::Long(1 << 32));
    assert!(matches!(m.call("test.sleep", vec![s("0")]).unwrap(), Value::Double(t) if t > 1.7e9));
    assert_eq!(
        m.call("test.module_description", vec![]).unwrap(),
        s("Just a very simple example module")
    );
    let Value::Array(methods) = m.call("test.list_methods", vec![]).unwrap() else {
        panic!("list")
    };
    assert!(methods.contains(&s("ping")) && methods.contains(&s("module_version")));
    let Value::Struct(args) = m.call("test.get_method_args", vec![]).unwrap() else {
        panic!("args")
    };
    assert!(args.contains_key("add"));
}

#[test]
fn echo_round_trips_every_type_on_one_keep_alive_connection() {
    let m = OneMinion::start("m1");
    let tls = m.overlord_tls();
    let mut nested = BTreeMap::new();
    nested.insert(
        "list".to_string(),
        Value::Array(vec![Value::Integer(1), s("two"), Value::Nil]),
    );
    nested.insert("".to_string(), Value::Boolean(false));
    let values = vec![
        Value::Integer(-7),
        Value::Long(1 << 40),
        Value::Double(123.456),
        Value::Double(3.7e-32),
        Value::Boolean(true),
        s("<&> \"quotes\" unicode é✓ 漢字"),
        s(""),
        Value::Base64(b"348dshke354ts0d9urgk\x00\xff".to_vec()),
        Value::DateTime("19740105T11:59:00".parse().unwrap()),
        Value::Array(vec![]),
        Value::Struct(BTreeMap::new()),
        Value::Struct(nested.into_iter().filter(|(k, _)| !k.is_empty()).collect()),
        Value::Nil,
    ];
    m.rt.block_on(async {
        let mut c = MinionClient::connect(m.minion.addr, "m1", tls, Duration::from_secs(10))
            .await
            .unwrap();
        for v in values {
            assert_eq!(c.call("test.echo", vec![v.clone()]).await.unwrap(), v);
        }
    });
}

#[test]
fn errors_are_remote_error_values() {
    let m = OneMinion::start("m1");
    let (kind, msg) = remote_error(&m.call("test.explode", vec![]).unwrap()).unwrap();
    assert_eq!(
        (kind.as_str(), msg.as_str()),
        ("exceptions.Exception", "khhhhhhaaaaaan!!!!!!")
    );
    let (kind, _) = remote_error(&m.call("test.does_not_exist", vec![Value::Integer(1)]).unwrap()).unwrap();
    assert_eq!(kind, "func.minion.codes.InvalidMethodException");
    let (kind, _) = remote_error(&m.call("nomodule.ping", vec![]).unwrap()).unwrap();
    assert_eq!(kind, "func.minion.codes.InvalidMethodException");
    let (kind, msg) = remote_error(&m.call("test.sleep", vec![s("1"), s("2")]).unwrap()).unwrap();
    assert_eq!(kind, "TypeError");
    assert_eq!(msg, "sleep() takes exactly 1 argument (2 given)");
    let (kind, msg) = remote_error(&m.call("test.sleep", vec![Value::Array(vec![])]).unwrap()).unwrap();
    assert_eq!(kind, "TypeError");
    assert!(msg.contains("'t'") && msg.contains("array"), "{msg}");
    let (kind, _) = remote_error(&m.call("test.sleep", vec![s("soon")]).unwrap()).unwrap();
    assert_eq!(kind, "ValueError");
    let (kind, _) = remote_error(&m.call("test.add", vec![s("a"), Value::Integer(1)]).unwrap()).unwrap();
    assert_eq!(kind, "TypeError");
}

#[test]
fn every_module_answers() {
    let m = OneMinion::start("m1");
    let Value::Array(mods) = m.call("system.list_modules", vec![]).unwrap() else {
        panic!()
    };
    let names: Vec<String> = mods
        .iter()
        .filter_map(|v| {
            if let Value::String(s) = v {
                Some(s.clone())
            } else {
                None
            }
        })
        .collect();
    assert_eq!(
        names,
        [
            "command", "copyfile", "echo", "fact", "hardware", "jobs", "overlord", "process", "service",
            "system", "test"
        ]
    );
    for module in &names {
        for base in [
            "module_version",
            "module_api_version",
            "module_description",
            "list_methods",
            "get_method_args",
        ] {
            let v = m.call(&format!("{module}.{base}"), vec![]).unwrap();
            assert!(remote_error(&v).is_none(), "{module}.{base}: {v:?}");
        }
    }
    let Value::Array(all) = m.call("system.listMethods", vec![]).unwrap() else {
        panic!()
    };
    assert!(all.contains(&s("system.listMethods")) && all.contains(&s("command.run")));
    assert_eq!(m.call("system.list_methods", vec![]).unwrap(), Value::Array(all));
    let Value::Struct(inv) = m.call("system.inventory", vec![]).unwrap() else {
        panic!()
    };
    assert!(inv.contains_key("copyfile"));

    let run = m
        .call("command.run", vec![s("printf 'a\\001b'; echo err >&2; exit 2")])
        .unwrap();
    assert_eq!(
        run,
        Value::Array(vec![Value::Integer(2), s("a\u{FFFD}b"), s("err\n")]),
        "control characters arrive as valid XML"
    );
    assert_eq!(
        m.call("command.exists", vec![s("/bin/sh")]).unwrap(),
        Value::Boolean(true)
    );

    assert_eq!(
        m.call(
            "copyfile.copyfile",
            vec![
                s("/tmp/func_test_file_dest"),
                Value::Base64(b"this is a func test file".to_vec())
            ]
        )
        .unwrap(),
        Value::Integer(1)
    );
    assert_eq!(
        m.call("copyfile.checksum", vec![s("/tmp/func_test_file_dest")])
            .unwrap(),
        s("b36a8040e44c16605d7784cdf1b3d9ed04ea7f55")
    );
    assert_eq!(
        std::fs::read(m.root.join("tmp/func_test_file_dest")).unwrap(),
        b"this is a func test file",
        "written below the minion's root"
    );
    let (kind, _) = remote_error(
        &m.call(
            "copyfile.copyfile",
            vec![s("/tmp/../../escape"), Value::Base64(vec![1])],
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(kind, "ValueError");

    assert!(matches!(m.call("process.loadavg", vec![]).unwrap(), Value::Array(a) if a.len() >= 3));
    assert!(matches!(m.call("process.info", vec![]).unwrap(), Value::Array(a) if !a.is_empty()));
    assert!(matches!(m.call("process.mem", vec![]).unwrap(), Value::Array(_)));
    let (kind, _) = remote_error(&m.call("process.kill", vec![s("-1")]).unwrap()).unwrap();
    assert_eq!(kind, "ValueError", "kill -1 would signal everything");
    let Value::Struct(hw) = m.call("hardware.info", vec![Value::Boolean(false)]).unwrap() else {
        panic!()
    };
    assert!(hw.contains_key("cpuModel") && hw.contains_key("systemMemory"));

    let status = m.call("service.status", vec![s("func-no-such-service")]).unwrap();
    if std::path::Path::new("/run/systemd/system").is_dir() {
        assert!(matches!(status, Value::Integer(rc) if rc != 0), "{status:?}");
    } else {
        let (_, msg) = remote_error(&status).expect("clear error without systemd");
        assert!(msg.contains("systemd is not running"), "{msg}");
    }
    assert!(matches!(
        m.call("system.grep", vec![s("cpu")]).unwrap(),
        Value::Struct(_)
    ));
}

#[test]
fn other_certificates_need_an_acl() {
    let m = OneMinion::start_with("m1", "", "peer-* = test.ping\n");
    let peer_root = m.pki.minion_root("peer");
    let stranger_root = m.pki.minion_root("stranger");
    let as_cert = |root: &common::paths::Root, name: &str, method: &str| {
        let tls = Pki::client_tls(&m.pki.minion_creds(root, name));
        m.rt.block_on(async {
            let mut c = MinionClient::connect(m.minion.addr, "m1", tls, Duration::from_secs(10)).await?;
            c.call(method, vec![]).await
        })
    };
    assert_eq!(
        as_cert(&peer_root, "peer", "test.ping").unwrap(),
        Value::Integer(1),
        "granted by the ACL"
    );
    match as_cert(&peer_root, "peer", "command.run") {
        Err(CallError::Fault { code: 1, message }) => {
            assert!(message.contains("AccessToMethodDenied"), "{message}")
        }
        other => panic!("expected fault 1, got {other:?}"),
    }
    assert!(matches!(
        as_cert(&stranger_root, "stranger", "test.ping"),
        Err(CallError::Fault { code: 1, .. })
    ));
}

#[test]
fn audit_log_has_one_short_line_per_call() {
    let m = OneMinion::start("m1");
    m.call("test.ping", vec![]).unwrap();
    m.call("test.echo", vec![s(&"x".repeat(100_000))]).unwrap();
    let log = std::fs::read_to_string(m.root.audit_log()).unwrap();
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), 2, "{log}");
    assert!(lines[0].contains("overlord-") && lines[0].contains("test.ping"));
    assert!(lines[1].len() < 500, "arguments are capped in the log");
}

#[test]
fn concurrent_connections_are_all_answered_and_slow_methods_do_not_block() {
    // 200 connections at once from one address: over the default per-address cap.
    let m = OneMinion::start_with("m1", "max_connections_per_address = 256", "");
    let tls = m.overlord_tls();
    let addr = m.minion.addr;
    m.rt.block_on(async {
        let mut slow = MinionClient::connect(addr, "m1", tls.clone(), Duration::from_secs(30))
            .await
            .unwrap();
        // Long enough that the 200 calls cannot be waiting for it; it is abandoned below.
        let sleeper = tokio::spawn(async move { slow.call("test.sleep", vec![Value::Integer(290)]).await });
        let mut tasks = Vec::new();
        for i in 0..200 {
            let tls = tls.clone();
            tasks.push(tokio::spawn(async move {
                let mut c = MinionClient::connect(addr, "m1", tls, Duration::from_secs(60)).await?;
                c.call("test.add", vec![Value::Integer(i), Value::Integer(1)])
                    .await
            }));
        }
        for (i, t) in tasks.into_iter().enumerate() {
            assert_eq!(t.await.unwrap().unwrap(), Value::Integer(i as i32 + 1));
        }
        assert!(
            !sleeper.is_finished(),
            "200 calls were answered while test.sleep(290) still ran"
        );
        sleeper.abort();
    });
}

/// The library starts a working minion in process (`minion::run::run`, what
/// funcd calls after enrolling): its server answers, an async job's result
/// arrives through the notification listener and the sweep, and it stops
/// when its shutdown signal completes.
#[test]
fn a_minion_runs_in_process_through_the_library() {
    use std::sync::Arc;
    let pki = func_tests::fixture::Pki::new();
    let root = pki.minion_root("inproc");
    let config = minion::MinionConfig::load(
        root.clone(),
        minion::config::Overrides {
            name: Some("inproc".into()),
            listen: Some("127.0.0.1:0".parse().unwrap()),
        },
    )
    .unwrap();
    let enroll = minion::enroll::EnrollConfig::load(&root, None).unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let tls = func_tests::fixture::Pki::client_tls(&pki.overlord());
    let answers = rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let m = Arc::new(minion::Minion::with_exe(config, func_tests::fixture::bin("funcd")).unwrap());
        let server = tokio::spawn(minion::run::run(m, listener, enroll, || {}, async {
            let _ = stopped.await;
        }));
        let mut c = MinionClient::connect(addr, "inproc", tls, Duration::from_secs(20))
            .await
            .unwrap();
        let ping = c.call("test.ping", vec![]).await.unwrap();
        let Value::String(job) = c
            .call("async.test.add", vec![Value::Integer(2), Value::Integer(3)])
            .await
            .unwrap()
        else {
            panic!("a job id")
        };
        let mut status = Value::Nil;
        for _ in 0..200 {
            status = c
                .call("jobs.job_status", vec![Value::String(job.clone())])
                .await
                .unwrap();
            if matches!(&status, Value::Array(a) if a[0] == Value::Integer(1)) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let _ = stop.send(());
        let ended = tokio::time::timeout(Duration::from_secs(10), server).await;
        (ping, status, ended.is_ok())
    });
    assert_eq!(answers.0, Value::Integer(1));
    assert_eq!(
        answers.1,
        Value::Array(vec![Value::Integer(1), Value::Integer(5)])
    );
    assert!(answers.2, "the minion stops when its shutdown completes");
    func_tests::fixture::kill_jobs(&root);
}
