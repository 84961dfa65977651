//! Attacks on the overlord side (Hardening III): a minion's data forging
//! the administrator's screen, absurd timeouts, a transmit request moving
//! func to another root, a rogue minion inflating func's memory.

use std::process::{Command, Stdio};

use func_tests::fixture::{bin, Fleet};

/// No raw control, C1, bidi or separator character, and no line at
/// column 0 but the real host's header (`m1:`, or `m1: value` in txt).
fn inert(text: &str, host: &str) {
    let hazard = |c: char| {
        matches!(c, '\u{0}'..='\u{8}' | '\u{b}'..='\u{1f}' | '\u{7f}'..='\u{9f}' | '\u{61c}'
            | '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{2060}'..='\u{2069}' | '\u{feff}')
    };
    assert!(
        !text.chars().any(hazard),
        "raw control characters reach the terminal: {text:?}"
    );
    for line in text.lines() {
        assert!(
            line == format!("{host}:")
                || line.starts_with(&format!("{host}: "))
                || line.starts_with(' ')
                || line.is_empty(),
            "a forged line {line:?} in {text:?}"
        );
    }
}

#[test]
fn a_minions_data_cannot_forge_the_screen() {
    let fleet = Fleet::start(&["m1"]);
    let hostile = serde_json::json!([{
        "k\nm2:\n    - all good": "x\n\rm2:\n\r    1",
        "csi\u{9b}2J": "bidi \u{202e}olleh \u{2028}m2: \u{85}m2:",
    }])
    .to_string();
    for out in [&[][..], &["--out", "txt"][..]] {
        let mut args = vec!["m1", "call", "--json-args", &hostile];
        args.extend_from_slice(out);
        args.extend(["test", "echo"]);
        let run = fleet.func(&args);
        assert_eq!(run.code, 0, "{run:?}");
        inert(&run.stdout, "m1");
        if out.is_empty() {
            assert!(
                run.stdout.contains("\\n") && run.stdout.contains("\\u{9b}"),
                "escaped, not dropped: {}",
                run.stdout
            );
        } else {
            assert_eq!(
                run.stdout.lines().count(),
                1,
                "txt: one line per host: {}",
                run.stdout
            );
        }
    }
    // A REMOTE_ERROR message with line breaks and CR (a drop-in's error).
    let dir = fleet.minions[0].root.join("etc/func/modules.d");
    std::fs::create_dir_all(&dir).unwrap();
    let module = dir.join("forge");
    std::fs::write(
        &module,
        "#!/bin/sh\ncase \"$1\" in\ndescribe) echo '{\"version\": \"1\", \"methods\": {\"run\": {}}}' ;;\n\
         call) printf '{\"error\": {\"type\": \"X\\\\nm2:\", \"message\": \"boom\\\\n\\\\rm2:\\\\n    1 \\\\u202e\"}}' ;;\nesac\n",
    )
    .unwrap();
    std::fs::set_permissions(&module, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let run = fleet.func(&["m1", "call", "forge", "run"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stdout.contains("boom"), "{run:?}");
    inert(&run.stdout, "m1");
    // --out xmlrpc (for programs): the same characters as references.
    let run = fleet.func(&[
        "--out",
        "xmlrpc",
        "m1",
        "call",
        "--json-args",
        &hostile,
        "test",
        "echo",
    ]);
    assert!(
        !run.stdout.contains('\u{9b}') && !run.stdout.contains('\u{202e}') && !run.stdout.contains('\r'),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("&#x9b;") && run.stdout.contains("&#x202e;"),
        "{}",
        run.stdout
    );
    // JSON stays a document with the same data, written inertly.
    let run = fleet.func(&["--json", "m1", "call", "--json-args", &hostile, "test", "echo"]);
    assert!(
        !run.stdout.contains('\u{9b}') && !run.stdout.contains('\u{202e}'),
        "{}",
        run.stdout
    );
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(
        doc["m1"]["csi\u{9b}2J"],
        "bidi \u{202e}olleh \u{2028}m2: \u{85}m2:"
    );
}

#[test]
fn absurd_timeouts_are_usage_errors_never_a_panic() {
    let fleet = Fleet::start(&["m1"]);
    for args in [
        &["-t", "1e308", "*", "ping"][..],
        &["*", "call", "-t", "1e308", "test", "ping"][..],
        &[
            "*",
            "call",
            "--batch",
            "1",
            "--batch-wait",
            "1e308",
            "test",
            "ping",
        ][..],
        &["-t", "inf", "job_status", "last"][..],
    ] {
        let out = fleet.func(args);
        assert_eq!(out.code, 2, "{args:?}: {out:?}");
        assert!(
            out.stderr.contains("30 days") && !out.stderr.contains("panicked"),
            "{out:?}"
        );
    }
    let out = transmit(
        &fleet,
        r#"{"clients": "*", "module": "test", "method": "ping", "timeout": 1e308}"#,
    );
    assert_eq!(out.0, 2, "{out:?}");
    assert!(out.1.contains("30 days"), "{out:?}");
}

fn transmit(fleet: &Fleet, request: &str) -> (i32, String) {
    let mut child = Command::new(bin("func"))
        .arg("--root")
        .arg(fleet.cm.root.dir())
        .arg("transmit")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), request.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn a_transmit_request_cannot_move_func_to_another_root() {
    let fleet = Fleet::start(&["m1"]);
    let elsewhere = fleet.dir.path().join("elsewhere");
    let x = elsewhere.to_str().unwrap();
    for request in [
        serde_json::json!({"command": ["jobs", "list", "--root", x]}),
        serde_json::json!({"command": ["m1", "ping", "--root", x]}),
        serde_json::json!({"command": ["jobs", "list", format!("--root={x}")]}),
    ] {
        let (code, answer) = transmit(&fleet, &request.to_string());
        assert_eq!(code, 2, "{request}: {answer}");
        assert!(answer.contains("cannot choose the root"), "{answer}");
    }
    assert!(!elsewhere.exists(), "nothing written below the request's root");
}

/// A rogue minion (a TLS server with m1's key and certificate) that
/// answers every call with 60 MiB of empty `<value>` items, under
/// `max_response_size`: func refuses the answer before decoding it (that
/// cost ~9 bytes of memory per byte) and its peak RSS stays bounded.
#[test]
fn a_rogue_minions_huge_answer_keeps_funcs_memory_bounded() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut fleet = Fleet::start(&["m1"]);
    let m1 = fleet.minion("m1");
    let (addr, root) = (m1.addr, m1.root.clone());
    m1.stop();
    let creds = common::tls::Credentials {
        key: root.minion_key("m1"),
        cert: root.minion_cert("m1"),
        ca: root.minion_ca_cert(),
        crl: None,
    };
    let tls = std::sync::Arc::new(common::tls::server_config(&creds, Vec::new()).unwrap());
    let mut body = b"<?xml version=\"1.0\"?><methodResponse><params><param><value><array><data>".to_vec();
    let items = 60 * 1024 * 1024 / 15;
    body.reserve(items * 15 + 64);
    for _ in 0..items {
        body.extend_from_slice(b"<value></value>");
    }
    body.extend_from_slice(b"</data></array></value></param></params></methodResponse>");
    let body = std::sync::Arc::new(body);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let listener = rt
        .block_on(tokio::net::TcpListener::bind(addr))
        .expect("m1's port is free again");
    let served = body.clone();
    rt.spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            let acceptor = tokio_rustls::TlsAcceptor::from(tls.clone());
            let body = served.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let mut seen = Vec::new();
                let mut buf = [0u8; 4096];
                while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
                    match tls.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => seen.extend_from_slice(&buf[..n]),
                    }
                }
                let head = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/xml\r\nContent-Length: {}\r\n\r\n",
                    body.len()
                );
                let _ = tls.write_all(head.as_bytes()).await;
                let _ = tls.write_all(&body).await;
                let _ = tls.shutdown().await;
            });
        }
    });
    // func run by a Python parent that reports its children's peak RSS
    // (func and its worker processes, all reaped).
    let script = "import json, resource, subprocess, sys\n\
                  r = subprocess.run(sys.argv[1:], capture_output=True)\n\
                  print(json.dumps({'code': r.returncode, 'stdout': r.stdout.decode(errors='replace'), \
                  'maxrss_kib': resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}))";
    let out = Command::new("python3")
        .args(["-c", script])
        .arg(bin("func"))
        .arg("--root")
        .arg(fleet.cm.root.dir())
        .args(["--forks", "1", "-t", "60", "m1", "call", "test", "ping"])
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let stdout = report["stdout"].as_str().unwrap_or_default();
    let head: String = stdout.chars().take(300).collect();
    assert_eq!(report["code"], 1, "the host fails: {head}");
    assert!(stdout.contains("values"), "and says why: {head}");
    let peak_mib = report["maxrss_kib"].as_u64().unwrap() / 1024;
    eprintln!("func's peak RSS against a 60 MiB answer of empty values: {peak_mib} MiB");
    assert!(
        peak_mib < 200,
        "func's memory stays bounded: {peak_mib} MiB (was ~520 MiB)"
    );
    drop(rt);
}
