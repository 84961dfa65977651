//! `func-bench-seal ROOT [N]`: a benchmark helper, not a test. What signing
//! a job request costs (DESIGN §9, `overlord::seal`): signing when a job
//! is accepted and verifying when its driver starts, for requests of 1,
//! 100 and 10,000 hosts, each timed over N rounds (default 200) with the
//! overlord credentials of ROOT (a certmaster's root). Prints a Markdown
//! table of microseconds per operation.

// A test and benchmark tool whose report is read by a script or a person.
#![allow(clippy::print_stdout)]

use std::time::Instant;

use anyhow::Context;
use common::paths::Root;
use overlord::store::JobMeta;

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let root = Root::new(args.next().context("usage: func-bench-seal ROOT [N]")?);
    let n: usize = args.next().map(|v| v.parse()).transpose()?.unwrap_or(200).max(1);
    println!("| request | sign (µs) | verify (µs) |");
    println!("|---|---:|---:|");
    for hosts in [1usize, 100, 10_000] {
        let names: Vec<String> = (0..hosts).map(|i| format!("minion{i}.example.org")).collect();
        let mut meta = JobMeta::new_call("*", "test.ping", vec![], None, hosts, (30.0, 1), false);
        meta.id = "bench-test-ping-1.0".into();
        let begun = Instant::now();
        let mut signer = None;
        for _ in 0..n {
            // Loading the key is part of accepting a job (each `func` does it once).
            let s = overlord::seal::Signer::load(&root).context("the overlord key below ROOT")?;
            s.seal(&mut meta, &names);
            signer = Some(s);
        }
        let sign = begun.elapsed().as_secs_f64() * 1e6 / n as f64;
        drop(signer);
        let begun = Instant::now();
        for _ in 0..n {
            overlord::seal::verify(&root, &meta, &names).context("verifying")?;
        }
        let verify = begun.elapsed().as_secs_f64() * 1e6 / n as f64;
        println!(
            "| {hosts} host{} | {sign:.0} | {verify:.0} |",
            if hosts == 1 { "" } else { "s" }
        );
    }
    Ok(())
}
