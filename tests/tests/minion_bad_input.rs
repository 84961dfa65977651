//! Hostile and broken input: the minion answers with a clear error, never
//! panics, never echoes the body, and keeps serving.

use common::Value;
use func_tests::fixture::{bin, Pki};

use crate::helper::{post, status, OneMinion};

fn fault_code(resp: &[u8]) -> Option<i32> {
    let text = String::from_utf8_lossy(resp);
    let body = text.split("\r\n\r\n").nth(1)?;
    match common::xmlrpc::decode_response(body.as_bytes(), &Default::default()).ok()? {
        Err(f) => Some(f.code()),
        Ok(_) => None,
    }
}

#[test]
fn malformed_truncated_and_non_utf8_bodies_get_faults() {
    let m = OneMinion::start("m1");
    let secret = "SECRET-PAYLOAD-0123456789";
    let resp = m.raw(
        post(
            format!("<methodCall><methodName>test.ping</methodName><params><param><value><string>{secret}")
                .as_bytes(),
        ),
        false,
    );
    assert_eq!(status(&resp), 200);
    assert_eq!(fault_code(&resp), Some(common::xmlrpc::FAULT_PARSE));
    assert!(
        !String::from_utf8_lossy(&resp).contains(secret),
        "the body is never echoed"
    );

    let resp = m.raw(post(b"not xml at all <<<"), false);
    assert_eq!(fault_code(&resp), Some(common::xmlrpc::FAULT_PARSE));

    let resp = m.raw(
        post(b"<methodCall><methodName>test.\xff\xfe</methodName></methodCall>"),
        false,
    );
    assert_eq!(fault_code(&resp), Some(common::xmlrpc::FAULT_ENCODING));

    // Content-Length promises more than arrives, then the client stops sending.
    let mut req = b"POST /RPC2 HTTP/1.1\r\nHost: m\r\nContent-Length: 500\r\n\r\n".to_vec();
    req.extend_from_slice(b"<methodCall><methodName>test.ping");
    let resp = m.raw(req, true);
    assert!(
        resp.is_empty() || status(&resp) == 400,
        "{}",
        String::from_utf8_lossy(&resp)
    );

    assert_eq!(
        m.call("test.ping", vec![]).unwrap(),
        Value::Integer(1),
        "still serving"
    );
}

#[test]
fn deep_nesting_is_refused_without_crashing() {
    let m = OneMinion::start("m1");
    let depth = 10_000;
    let body = format!(
        "<methodCall><methodName>test.echo</methodName><params><param>{}<value><int>1</int></value>{}</param></params></methodCall>",
        "<value><array><data>".repeat(depth),
        "</data></array></value>".repeat(depth)
    );
    let resp = m.raw(post(body.as_bytes()), false);
    assert_eq!(
        fault_code(&resp),
        Some(common::xmlrpc::FAULT_PARSE),
        "{}",
        String::from_utf8_lossy(&resp[..resp.len().min(300)])
    );
    assert!(m.minion.pid() > 0);
    assert_eq!(m.call("test.ping", vec![]).unwrap(), Value::Integer(1));
}

#[test]
fn bodies_over_the_limit_get_413_and_a_closed_connection() {
    let m = OneMinion::start_with("m1", "max_request_size = 65536", "");
    let big = vec![b'x'; 100_000];
    // Declared too large: refused before reading.
    let resp = m.raw(post(&big), false);
    assert_eq!(status(&resp), 413);
    assert!(String::from_utf8_lossy(&resp)
        .to_lowercase()
        .contains("connection: close"));
    // Chunked without a length: refused once the limit is crossed.
    let mut req = b"POST /RPC2 HTTP/1.1\r\nHost: m\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    for _ in 0..10 {
        req.extend_from_slice(format!("{:x}\r\n", 10_000).as_bytes());
        req.extend_from_slice(&[b' '; 10_000]);
        req.extend_from_slice(b"\r\n");
    }
    req.extend_from_slice(b"0\r\n\r\n");
    let resp = m.raw(req, false);
    assert_eq!(status(&resp), 413);
    // Under the limit still works.
    assert_eq!(
        m.call("test.echo", vec![Value::String("y".repeat(60_000))])
            .unwrap(),
        Value::String("y".repeat(60_000))
    );
}

#[test]
fn wrong_paths_and_verbs() {
    let m = OneMinion::start("m1");
    let resp = m.raw(
        b"GET /RPC2 HTTP/1.1\r\nHost: m\r\nConnection: close\r\n\r\n".to_vec(),
        false,
    );
    assert_eq!(status(&resp), 405);
    let resp = m.raw(
        b"POST /other HTTP/1.1\r\nHost: m\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_vec(),
        false,
    );
    assert_eq!(status(&resp), 404);
    let body =
        b"<?xml version='1.0'?><methodCall><methodName>test.ping</methodName><params></params></methodCall>";
    let mut req = format!(
        "POST / HTTP/1.1\r\nHost: m\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    req.extend_from_slice(body);
    let resp = m.raw(req, false);
    assert_eq!(status(&resp), 200);
    assert!(String::from_utf8_lossy(&resp).contains("<i4>1</i4>"));
}

#[test]
fn a_client_that_never_finishes_its_headers_is_cut_off() {
    let m = OneMinion::start_with("m1", "header_timeout = 0.5", "");
    // No terminating blank line: the minion must give up and close.
    let resp = m.raw(b"POST /RPC2 HTTP/1.1\r\nHost: m\r\nX-Slow: ".to_vec(), false);
    assert!(
        resp.is_empty() || status(&resp) == 408,
        "{}",
        String::from_utf8_lossy(&resp)
    );
    assert_eq!(m.call("test.ping", vec![]).unwrap(), Value::Integer(1));
}

#[test]
fn funcd_without_credentials_or_with_bad_config_exits_with_a_clear_error() {
    let pki = Pki::new();
    let empty = pki.dir.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let out = std::process::Command::new(bin("funcd"))
        .arg("--root")
        .arg(&empty)
        .args(["--name", "m9", "--listen", "127.0.0.1:0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("could not locate the certmaster") && err.contains("--certmaster"),
        "{err}"
    );

    let root = pki.minion_root("m8");
    func_tests::fixture::write_file(&root.minion_conf(), "[main]\nlisten_port = many\n");
    let out = std::process::Command::new(bin("funcd"))
        .arg("--root")
        .arg(root.dir())
        .args(["--name", "m8"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("listen_port"));

    let out = std::process::Command::new(bin("funcd"))
        .args(["--root", "/proc/func-cannot-create", "--name", "m8"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));

    let out = std::process::Command::new(bin("funcd"))
        .arg("--root")
        .arg(&empty)
        .args(["--name", "../etc/x", "--listen", "127.0.0.1:0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a plain host name"));

    let out = std::process::Command::new(bin("funcd"))
        .args(["--listen", "not-an-address"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "usage errors exit 2");

    let out = std::process::Command::new(bin("funcd"))
        .arg("--list-modules")
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout)
        .lines()
        .any(|l| l == "copyfile"));
}
