//! `certmaster`: the CA daemon. Parses arguments, creates the CA on first
//! start, binds, optionally daemonises (before any runtime), then serves.

use std::io::Write;
use std::sync::Arc;

use anyhow::Context;
use certmaster_server::cli::CertmasterCli as Cli;
use certmaster_server::daemon::{Certmaster, CertmasterConfig};
use clap::Parser;
use common::paths::Root;

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(match cli.log_level.as_deref() {
            Some(level) => tracing_subscriber::EnvFilter::new(level),
            None => tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        })
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()) && !cli.daemon)
        .init();
    match run(cli) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("certmaster: error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    common::private::state_dir(&cli.root, common::private::PUBLIC_DIR_MODE)
        .with_context(|| format!("root directory {}", cli.root.display()))?;
    let root = Root::new(std::fs::canonicalize(&cli.root).context("resolving the root")?);
    let config =
        CertmasterConfig::load(root.clone(), cli.listen, cli.autosign).context("reading certmaster.conf")?;
    let cm = Certmaster::open(config).context("preparing the CA")?;
    let listener = std::net::TcpListener::bind(cm.config.listen)
        .with_context(|| format!("binding {}", cm.config.listen))?;
    let bound = listener.local_addr()?;
    // One line on stdout that scripts and tests read to learn the port.
    let _ = writeln!(
        std::io::stdout(),
        "certmaster listening on {bound} (CA fingerprint SHA256 {}{})",
        cm.ca_fingerprint,
        if cm.config.autosign { ", autosign" } else { "" }
    );
    std::io::stdout().flush().ok();
    if cli.daemon {
        let log = root.log_dir().join("certmaster.log");
        common::private::daemonise_logging_to(&log)
            .with_context(|| format!("daemonising (log {})", log.display()))?;
        common::private::state_dir(&root.run_dir(), common::private::PUBLIC_DIR_MODE)?;
        common::private::write(
            &root.run_dir().join("certmaster.pid"),
            format!("{}\n", std::process::id()).as_bytes(),
            false,
        )?;
    }
    listener.set_nonblocking(true)?;
    // Room for every connection slot and lingering socket, plus files.
    common::process::raise_open_files();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::from_std(listener)?;
        // The CA is loaded and the port bound: what Type=notify waits for.
        let _ = sd_notify::notify(&[sd_notify::NotifyState::Ready]);
        certmaster_server::daemon::serve(Arc::new(cm), listener, shutdown())
            .await
            .context("serving")
    })
}

/// Completes on SIGTERM or SIGINT.
async fn shutdown() {
    use tokio::signal::unix::{signal, SignalKind};
    match (signal(SignalKind::terminate()), signal(SignalKind::interrupt())) {
        (Ok(mut t), Ok(mut i)) => {
            tokio::select! { _ = t.recv() => {}, _ = i.recv() => {} }
        }
        _ => std::future::pending::<()>().await,
    }
}
