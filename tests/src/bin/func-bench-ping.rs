//! `func-bench-ping`: a benchmark, not a test. Starts a real `funcd` with a
//! fresh PKI and measures `test.ping` calls per second from one client over
//! one keep-alive connection, then from C concurrent connections.
//!
//! `func-bench-ping [CALLS] [CONNECTIONS]` (defaults 20000 and 8).

use std::time::{Duration, Instant};

use common::rpc::client::MinionClient;
use func_tests::fixture::{FuncdProcess, Pki};

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let calls: usize = args.next().map(|a| a.parse()).transpose()?.unwrap_or(20_000);
    let conns: usize = args.next().map(|a| a.parse()).transpose()?.unwrap_or(8);
    let pki = Pki::new();
    let root = pki.minion_root("bench1");
    let minion = FuncdProcess::start(&root, "bench1").map_err(anyhow::Error::msg)?;
    let tls = Pki::client_tls(&pki.overlord());
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
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

        let start = Instant::now();
        let fresh = 500;
        for _ in 0..fresh {
            let mut c = MinionClient::connect(minion.addr, "bench1", tls.clone(), Duration::from_secs(10)).await?;
            c.call("test.ping", vec![]).await?;
        }
        let secs = start.elapsed().as_secs_f64();
        println!("test.ping, new TLS connection per call: {fresh} calls in {secs:.2} s = {:.0} calls/s", fresh as f64 / secs);
        Ok::<_, anyhow::Error>(())
    })?;
    Ok(())
}
