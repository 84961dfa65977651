//! `func-bench-ping`: a benchmark, not a test. Starts a real `funcd` with a
//! fresh PKI and measures `test.ping` calls per second from one client over
//! one keep-alive connection, then from C concurrent connections.
//!
//! Then the same over one connection for trivial drop-in modules (one in
//! POSIX shell, one in Python: the cost of a process per call).
//!
//! `func-bench-ping [CALLS] [CONNECTIONS] [OUT_TSV]` (defaults 20000 and 8);
//! with OUT_TSV the rates are also appended there as rows of the benchmark
//! report (metric, value, unit, ok, note).

// A test and benchmark tool whose report is read by a script or a person.
#![allow(clippy::print_stdout)]

use std::io::Write;
use std::time::{Duration, Instant};

use common::rpc::client::MinionClient;
use func_tests::fixture::{FuncdProcess, Pki};

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let calls: usize = args.next().map(|a| a.parse()).transpose()?.unwrap_or(20_000);
    let conns: usize = args.next().map(|a| a.parse()).transpose()?.unwrap_or(8);
    let mut tsv = match args.next() {
        Some(path) => Some(std::fs::OpenOptions::new().create(true).append(true).open(path)?),
        None => None,
    };
    let mut row = |metric: &str, rate: f64, note: String| -> std::io::Result<()> {
        match tsv.as_mut() {
            Some(f) => writeln!(f, "{metric}\t{rate:.0}\tcalls/s\t1\t{note}"),
            None => Ok(()),
        }
    };
    let pki = Pki::new();
    let root = pki.minion_root("bench1");
    install_trivial_modules(&root)?;
    let minion = FuncdProcess::start(&root, "bench1").map_err(anyhow::Error::msg)?;
    let tls = Pki::client_tls(&pki.overlord());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let mut client = MinionClient::connect(minion.addr, "bench1", tls.clone(), Duration::from_secs(10)).await?;
        for _ in 0..200 {
            client.call("test.ping", vec![]).await?;
        }
        let start = Instant::now();
        for _ in 0..calls {
            client.call("test.ping", vec![]).await?;
        }
        let secs = start.elapsed().as_secs_f64();
        println!("test.ping, 1 client, 1 keep-alive connection: {calls} calls in {secs:.2} s = {:.0} calls/s ({:.0} us/call)", calls as f64 / secs, secs * 1e6 / calls as f64);
        row("keepalive_pings", calls as f64 / secs, format!("{calls} calls, 1 connection"))?;

        let per = calls / conns.max(1);
        let start = Instant::now();
        let mut tasks = Vec::new();
        for _ in 0..conns {
            let tls = tls.clone();
            let addr = minion.addr;
            tasks.push(tokio::spawn(async move {
                let mut c = MinionClient::connect(addr, "bench1", tls, Duration::from_secs(10)).await?;
                for _ in 0..per {
                    c.call("test.ping", vec![]).await?;
                }
                Ok::<_, common::rpc::client::CallError>(())
            }));
        }
        for t in tasks {
            t.await??;
        }
        let secs = start.elapsed().as_secs_f64();
        println!("test.ping, {conns} concurrent keep-alive connections: {} calls in {secs:.2} s = {:.0} calls/s", per * conns, (per * conns) as f64 / secs);
        row("keepalive_pings_concurrent", (per * conns) as f64 / secs, format!("{} calls, {conns} connections", per * conns))?;

        let start = Instant::now();
        let fresh = 500;
        for _ in 0..fresh {
            let mut c = MinionClient::connect(minion.addr, "bench1", tls.clone(), Duration::from_secs(10)).await?;
            c.call("test.ping", vec![]).await?;
        }
        let secs = start.elapsed().as_secs_f64();
        println!("test.ping, new TLS connection per call: {fresh} calls in {secs:.2} s = {:.0} calls/s", fresh as f64 / secs);
        row("new_tls_per_call_pings", fresh as f64 / secs, format!("{fresh} calls"))?;

        for (module, n) in [("bench_sh", 1000), ("bench_py", 50)] {
            let method = format!("{module}.ping");
            let mut client = MinionClient::connect(minion.addr, "bench1", tls.clone(), Duration::from_secs(10)).await?;
            let first = client.call(&method, vec![]).await?;
            anyhow::ensure!(first == common::Value::Integer(1), "{method} answered {first:?}");
            let start = Instant::now();
            for _ in 0..n {
                client.call(&method, vec![]).await?;
            }
            let secs = start.elapsed().as_secs_f64();
            println!("{method} (drop-in), 1 keep-alive connection: {n} calls in {secs:.2} s = {:.0} calls/s ({:.0} us/call)", n as f64 / secs, secs * 1e6 / n as f64);
            row(&format!("keepalive_{module}"), n as f64 / secs, format!("{n} calls, 1 connection"))?;
        }
        Ok::<_, anyhow::Error>(())
    })?;
    Ok(())
}

/// The shell and Python modules the benchmark calls: `ping` answers 1.
const TRIVIAL_SH: &str = "#!/bin/sh\ncase \"$1\" in\n\
    describe) echo '{\"version\": \"1\", \"methods\": {\"ping\": {}}}' ;;\n\
    call) echo '{\"result\": 1}' ;;\nesac\n";
const TRIVIAL_PY: &str = "#!/usr/bin/env python3\nimport json, sys\n\
    if sys.argv[1] == 'describe':\n    print(json.dumps({'version': '1', 'methods': {'ping': {}}}))\n\
    else:\n    json.load(sys.stdin)\n    print(json.dumps({'result': 1}))\n";

fn install_trivial_modules(root: &common::paths::Root) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let dir = root.join("etc/func/modules.d");
    std::fs::create_dir_all(&dir)?;
    for (name, text) in [("bench_sh", TRIVIAL_SH), ("bench_py", TRIVIAL_PY)] {
        std::fs::write(dir.join(name), text)?;
        std::fs::set_permissions(dir.join(name), std::fs::Permissions::from_mode(0o755))?;
    }
    Ok(())
}
