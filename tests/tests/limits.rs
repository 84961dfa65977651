//! Hardening II, bounded resources: one caller cannot starve the others
//! (blocking calls, async jobs, request bytes, connection slots), the
//! certmaster cannot be flooded, and the overlord caps what it reads.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use common::paths::Root;
use common::rpc::client::MinionClient;
use common::Value;
use func_tests::fixture::{wait_until, write_file, CertmasterProcess, Fleet, Pki};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::helper::{remote_error, s, OneMinion};

/// The REMOTE_ERROR type of a value, if it is one.
fn error_type(v: &Value) -> Option<String> {
    remote_error(v).map(|(t, _)| t)
}

#[test]
fn one_caller_gets_a_bounded_share_of_blocking_threads_and_sleep_is_capped() {
    let m = OneMinion::start_with("m1", "", "m2-* = test.*\n");
    let m2 = Pki::client_tls(&m.other_caller("m2"));
    let overlord = m.overlord_tls();
    let addr = m.minion.addr;
    m.rt.block_on(async {
        // 40 long calls at once from one certificate.
        let mut sleepers = Vec::new();
        for _ in 0..40 {
            let tls = Arc::clone(&m2);
            sleepers.push(tokio::spawn(async move {
                let mut c = MinionClient::connect(addr, "m1", tls, Duration::from_secs(60))
                    .await
                    .unwrap();
                c.call("test.sleep", vec![Value::Integer(25)]).await
            }));
        }
        // Those over the limit are answered at once, as Busy.
        let mut busy = 0;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(8);
        for task in &mut sleepers {
            if let Ok(Ok(Ok(v))) = tokio::time::timeout_at(deadline, &mut *task).await {
                assert_eq!(error_type(&v).as_deref(), Some("func.minion.Busy"), "{v:?}");
                busy += 1;
            }
        }
        assert_eq!(
            busy,
            40 - 16,
            "max_calls_per_caller = 16 run, the rest are refused"
        );
        // The overlord is served meanwhile.
        let mut c = MinionClient::connect(addr, "m1", overlord, Duration::from_secs(10))
            .await
            .unwrap();
        let out = c.call("command.run", vec![s("echo served")]).await.unwrap();
        assert_eq!(out, Value::Array(vec![Value::Integer(0), s("served\n"), s("")]));
        for t in sleepers {
            t.abort();
        }
    });
    let capped = m.call("test.sleep", vec![Value::Integer(400)]).unwrap();
    assert_eq!(error_type(&capped).as_deref(), Some("ValueError"), "{capped:?}");
}

#[test]
fn async_jobs_and_kept_bytes_are_capped_per_caller() {
    let m = OneMinion::start_with(
        "m1",
        "max_jobs_per_caller = 3\nmax_job_bytes_per_caller = 100000",
        "m2-* = test.*, jobs.*\n",
    );
    let m2 = m.other_caller("m2");
    let submit = |method: &str, args: Vec<Value>| m.call_as(&m2, &format!("async.{method}"), args).unwrap();
    let ids: Vec<Value> = (0..3)
        .map(|_| submit("test.sleep", vec![Value::Integer(60)]))
        .collect();
    assert!(ids.iter().all(|v| matches!(v, Value::String(_))), "{ids:?}");
    let refused = submit("test.sleep", vec![Value::Integer(60)]);
    let (kind, message) = remote_error(&refused).expect("refused");
    assert!(
        kind == "func.minion.Busy" && message.contains("max_jobs_per_caller"),
        "{message}"
    );
    assert!(
        matches!(m.call("async.test.ping", vec![]).unwrap(), Value::String(_)),
        "the overlord's own quota is apart"
    );
    for id in &ids {
        m.call_as(&m2, "jobs.kill_job", vec![id.clone()]).unwrap();
    }
    let finished = |id: &Value| matches!(m.call_as(&m2, "jobs.job_status", vec![id.clone()]), Ok(Value::Array(a)) if a[0] == Value::Integer(1));
    assert!(wait_until(Duration::from_secs(20), || ids.iter().all(finished)));
    // Kept bytes: requests and results of 30 kB each.
    let big = s(&"x".repeat(30_000));
    let first = submit("test.echo", vec![big.clone()]);
    assert!(wait_until(Duration::from_secs(20), || finished(&first)));
    let second = submit("test.echo", vec![big]);
    assert!(matches!(second, Value::String(_)), "{second:?}");
    assert!(wait_until(Duration::from_secs(20), || finished(&second)));
    let Value::Array(status) = m.call_as(&m2, "jobs.job_status", vec![second]).unwrap() else {
        panic!("status")
    };
    let (kind, message) = remote_error(&status[1]).expect("the result over the quota is dropped");
    assert!(
        kind == "func.minion.Busy" && message.contains("max_job_bytes_per_caller"),
        "{message}"
    );
    // The dropped result took its request with it: 60 kB are kept now.
    let third = submit("test.echo", vec![s(&"x".repeat(45_000))]);
    let (_, message) = remote_error(&third).expect("no room for another request");
    assert!(message.contains("max_job_bytes_per_caller"), "{message}");
    // Results arriving together cannot overshoot the quota either.
    let fresh = OneMinion::start_with(
        "m1",
        "max_job_bytes_per_caller = 100000",
        "m2-* = test.*, jobs.*\n",
    );
    let m2 = fresh.other_caller("m2");
    let ids: Vec<Value> = std::thread::scope(|scope| {
        let calls: Vec<_> = (0..8)
            .map(|_| {
                let m2 = m2.clone();
                let fresh = &fresh;
                scope.spawn(move || {
                    fresh
                        .call_as(&m2, "async.test.echo", vec![s(&"y".repeat(12_000))])
                        .unwrap()
                })
            })
            .collect();
        calls.into_iter().map(|c| c.join().unwrap()).collect()
    });
    for id in ids.iter().filter(|v| matches!(v, Value::String(_))) {
        assert!(wait_until(Duration::from_secs(20), || {
            matches!(fresh.call_as(&m2, "jobs.job_status", vec![id.clone()]), Ok(Value::Array(a)) if a[0] == Value::Integer(1))
        }));
    }
    let probe = fresh
        .call_as(&m2, "async.test.echo", vec![s(&"z".repeat(150_000))])
        .unwrap();
    let (_, message) = remote_error(&probe).expect("over the quota");
    let kept: u64 = message
        .split("keeps ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{message}"));
    assert!(kept <= 100_000, "kept {kept} bytes with a quota of 100000");
}

/// A TLS connection as `creds` that writes `head`, then holds the
/// connection open without finishing the body; returns what the minion
/// answers within `wait` (empty if nothing).
async fn partial_request(
    addr: SocketAddr,
    tls: Arc<rustls::ClientConfig>,
    head: Vec<u8>,
    wait: Duration,
) -> String {
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let name = rustls::pki_types::ServerName::try_from("m1").unwrap();
    let mut stream = tokio_rustls::TlsConnector::from(tls)
        .connect(name, tcp)
        .await
        .unwrap();
    stream.write_all(&head).await.unwrap();
    stream.flush().await.unwrap();
    let mut out = vec![0u8; 4096];
    match tokio::time::timeout(wait, stream.read(&mut out)).await {
        Ok(Ok(n)) => String::from_utf8_lossy(&out[..n]).into_owned(),
        _ => String::new(),
    }
}

fn head(method: &str, declared: usize, sent: usize) -> Vec<u8> {
    let mut req = format!(
        "POST /RPC2 HTTP/1.1\r\nHost: m1\r\nContent-Type: text/xml\r\nContent-Length: {declared}\r\n\r\n<methodCall><methodName>{method}</methodName><params><param><value><string>"
    )
    .into_bytes();
    req.resize(req.len() + sent, b'x');
    req
}

#[test]
fn the_acl_and_the_byte_budget_are_decided_before_a_body_is_buffered() {
    let m = OneMinion::start_with(
        "m1",
        "max_request_bytes_others = 1000000\nbody_timeout = 2",
        "m2-* = test.*, command.run\n",
    );
    let m2 = Pki::client_tls(&m.other_caller("m2"));
    let addr = m.minion.addr;
    let overlord = m.overlord_tls();
    m.rt.block_on(async {
        // A 15 MB body for a method the ACL denies: refused as soon as the
        // name has arrived, while the client is still "sending".
        let answer = partial_request(
            addr,
            Arc::clone(&m2),
            head("copyfile.copyfile", 15_000_000, 1000),
            Duration::from_secs(10),
        )
        .await;
        assert!(answer.contains("AccessToMethodDenied"), "{answer:?}");
        // One allowed call holds 600 kB of the 1 MB budget while it runs; a
        // second cannot get its bytes and is refused at the body deadline.
        let tls = Arc::clone(&m2);
        let holder = tokio::spawn(async move {
            let mut c = MinionClient::connect(addr, "m1", tls, Duration::from_secs(30))
                .await
                .unwrap();
            // Six 100 kB variables: one argument may not pass 128 kB.
            let env = (0..6)
                .map(|i| (format!("V{i}"), s(&"x".repeat(100_000))))
                .collect();
            c.call("command.run", vec![s("sleep 8"), Value::Struct(env)])
                .await
        });
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let second = partial_request(
            addr,
            Arc::clone(&m2),
            head("test.echo", 900_000, 600_000),
            Duration::from_secs(20),
        )
        .await;
        assert!(second.contains("request bytes in flight"), "{second:?}");
        // The overlord's budget is its own.
        let mut c = MinionClient::connect(addr, "m1", overlord, Duration::from_secs(10))
            .await
            .unwrap();
        let echoed = c.call("test.echo", vec![s(&"y".repeat(800_000))]).await.unwrap();
        assert_eq!(echoed, s(&"y".repeat(800_000)));
        holder.abort();
    });
}

/// A TCP connection from `source` (another loopback address) to `to`.
fn connect_from(rt: &tokio::runtime::Runtime, source: &str, to: SocketAddr) -> std::io::Result<TcpStream> {
    let stream = rt.block_on(async {
        let socket = tokio::net::TcpSocket::new_v4()?;
        socket.bind(format!("{source}:0").parse().expect("address"))?;
        socket.connect(to).await
    })?;
    let std = stream.into_std()?;
    std.set_nonblocking(false)?;
    Ok(std)
}

/// Whether the server closes `conn` (EOF or reset) within `wait`.
fn closed_by_server(conn: &mut TcpStream, wait: Duration) -> bool {
    conn.set_read_timeout(Some(wait)).unwrap();
    let mut b = [0u8; 1];
    match conn.read(&mut b) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => !matches!(
            e.kind(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
        ),
    }
}

#[test]
fn idle_connections_from_one_address_cannot_take_every_slot() {
    let m = OneMinion::start_with("m1", "max_connections = 80\nhandshake_timeout = 2", "");
    let addr = m.minion.addr;
    let idle: Vec<TcpStream> = (0..100)
        .filter_map(|_| connect_from(&m.rt, "127.0.0.2", addr).ok())
        .collect();
    assert_eq!(idle.len(), 100);
    // The overlord, from another address, is served while they are held.
    assert_eq!(m.call("test.ping", vec![]).unwrap(), Value::Integer(1));
    // Those over the per-address cap were closed at once, the rest after
    // the pre-handshake deadline.
    let mut idle = idle;
    let closed = idle
        .iter_mut()
        .map(|c| closed_by_server(c, Duration::from_secs(10)))
        .filter(|closed| *closed)
        .count();
    assert_eq!(closed, 100, "every idle connection is closed by the minion");
}

#[test]
fn idle_connections_from_many_addresses_give_way_to_a_real_client() {
    // Under the per-address cap from each address, enough in all to take
    // every slot, and a handshake deadline long enough to starve a client
    // that had to wait for it.
    let m = OneMinion::start_with("m1", "max_connections = 60\nhandshake_timeout = 30", "");
    let addr = m.minion.addr;
    let mut idle = Vec::new();
    for source in ["127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"] {
        for _ in 0..25 {
            idle.push(connect_from(&m.rt, source, addr).expect("connect"));
        }
    }
    let tls = m.overlord_tls();
    let answer = m.rt.block_on(async move {
        let mut c = MinionClient::connect(addr, "m1", tls, Duration::from_secs(5)).await?;
        c.call("test.ping", vec![]).await
    });
    assert_eq!(
        answer.unwrap(),
        Value::Integer(1),
        "the oldest idle connection gave its slot"
    );
    drop(idle);
}

#[test]
fn the_certmaster_bounds_slow_sockets_pending_requests_and_what_it_stores() {
    let dir = tempfile::Builder::new().prefix("func-flood-").tempdir().unwrap();
    let root = Root::new(dir.path().join("certmaster"));
    write_file(
        &root.certmaster_conf(),
        "[main]\nmax_pending_per_address = 5\nhandshake_timeout = 1\n",
    );
    let cm = CertmasterProcess::start(&root, false).unwrap();
    let addr = cm.daemon.addr;
    // Idle sockets from one address: closed at once past the cap, the rest
    // after the first-byte deadline; get_crl from elsewhere is answered.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut idle: Vec<TcpStream> = (0..40)
        .filter_map(|_| connect_from(&rt, "127.0.0.2", addr).ok())
        .collect();
    let crl = post_plain(addr, &common::xmlrpc::encode_call("get_crl", vec![], 4).unwrap());
    assert!(crl.contains("BEGIN X509 CRL"), "{crl}");
    let closed = idle
        .iter_mut()
        .map(|c| closed_by_server(c, Duration::from_secs(10)))
        .filter(|closed| *closed)
        .count();
    assert_eq!(closed, 40);
    // Pending requests from one address are capped; a padded request is
    // stored re-encoded; no address is recorded for a name never signed.
    let mut answers = Vec::new();
    for i in 0..8 {
        let csr = certs::request::csr(&format!("flood{i}"), &certs::request::new_key().unwrap()).unwrap();
        let padded = format!("{csr}{}", " ".repeat(40_000));
        let info = Value::Struct([("address".to_string(), s("10.9.9.9:1"))].into_iter().collect());
        let body = common::xmlrpc::encode_call("wait_for_cert", vec![s(&padded), info], 4).unwrap();
        answers.push(post_plain(addr, &body));
    }
    assert!(
        answers[..5].iter().all(|a| !a.contains("faultCode")),
        "{:?}",
        &answers[..5]
    );
    assert!(
        answers[5..]
            .iter()
            .all(|a| a.contains("too many pending requests")),
        "{:?}",
        &answers[5..]
    );
    let (_, listed, _) = cm.ca(&["--list"]);
    assert_eq!(listed.lines().count(), 5, "{listed}");
    for entry in std::fs::read_dir(root.pending_csrs_dir()).unwrap() {
        let len = entry.unwrap().metadata().unwrap().len();
        assert!(len < 4096, "stored re-encoded, not as sent ({len} bytes)");
    }
    let addrs = std::fs::read_dir(root.signed_certs_dir())
        .map(|d| d.count())
        .unwrap_or(0);
    assert_eq!(addrs, 0, "no .addr for names never signed");
}

/// An XML-RPC POST over plain HTTP; the raw answer.
fn post_plain(addr: SocketAddr, body: &str) -> String {
    let mut tcp = TcpStream::connect(addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    write!(
        tcp,
        "POST /RPC2 HTTP/1.1\r\nHost: cm\r\nContent-Type: text/xml\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut out = String::new();
    let _ = tcp.read_to_string(&mut out);
    out
}

#[test]
fn the_overlord_caps_what_it_reads_from_one_minion() {
    let fleet = Fleet::start(&["m1", "m2"]);
    write_file(
        &fleet.cm.root.overlord_conf(),
        "[main]\nmax_response_size = 100000\n",
    );
    let out = fleet.func(&[
        "m*",
        "call",
        "command",
        "run",
        "head -c 300000 /dev/zero | tr '\\0' x",
    ]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stdout.contains("max_response_size"), "{}", out.stdout);
    let small = fleet.func(&["m*", "call", "command", "run", "echo fits"]);
    assert_eq!(small.code, 0, "{small:?}");
}
