//! `func-swarm`: many simulated minions in one process, for tests and
//! benchmarks at a scale real `funcd` processes cannot reach on one machine
//! (Salt's `minionswarm.py`; DESIGN §17).
//!
//! Each identity is enrolled through the real certmaster like `funcd` (its
//! own key, a CSR, the advertised address) and served with its own signed
//! certificate, chosen by the TLS server name the caller asks for, so the
//! overlord's check that a certificate names the minion it meant to call
//! holds. The wire is the minion's: XML-RPC over mutual TLS for `test.*`,
//! `async.` and `jobs.*`, answered from memory.

mod args;
mod enroll;
mod serve;
mod wire;

pub use args::Args;

use anyhow::Context as _;

/// Binds, enrolls every identity, prints `func-swarm serving N minions on
/// ADDR`, and serves until SIGTERM or SIGINT.
pub async fn run(args: Args) -> anyhow::Result<()> {
    if !common::identity::is_valid_host_name(&format!("{}1", args.prefix)) {
        anyhow::bail!("--prefix {:?} does not make host names", args.prefix);
    }
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    let bound = listener.local_addr()?;
    let started = std::time::Instant::now();
    let ids = enroll::enroll_all(&args, &bound.to_string()).await?;
    let took = started.elapsed();
    let count = ids.identities.len();
    eprintln_safe(&format!(
        "func-swarm: {count} identities ready in {:.1} s ({} enrolled now)",
        took.as_secs_f64(),
        ids.enrolled_now
    ));
    let state = std::sync::Arc::new(serve::Swarm::new(ids)?);
    println_safe(&format!("func-swarm serving {count} minions on {bound}"));
    let shutdown = async {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = async { match term.as_mut() { Some(t) => { t.recv().await; } None => std::future::pending().await } } => {}
        }
    };
    serve::serve(state, listener, shutdown).await;
    Ok(())
}

/// A line on stdout; a closed pipe is not a panic.
fn println_safe(line: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

fn eprintln_safe(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}
