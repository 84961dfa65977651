//! `funcd`: parses arguments, reads the config, binds, optionally daemonises
//! (before any runtime exists: tokio must not be forked), then serves.

use std::io::Write;
use std::sync::Arc;

use anyhow::Context as _;
use clap::Parser;
use common::paths::Root;
use minion::cli::Cli;
use minion::config::{MinionConfig, Overrides};
use minion::enroll::{self, EnrollConfig};
use minion::modules::Registry;
use minion::Minion;

fn main() -> std::process::ExitCode {
    // Descriptors inherited from whoever started funcd (a shell, a test
    // harness, a jobserver pipe) stay here but reach no child: not the job
    // zygote, jobs, drop-in modules or commands.
    // SAFETY: only sets close-on-exec on descriptors above stderr.
    unsafe { libc::close_range(3, libc::c_uint::MAX, libc::CLOSE_RANGE_CLOEXEC as libc::c_int) };
    let cli = Cli::parse();
    if cli.job_zygote {
        // Before logging, threads or a runtime: the zygote forks jobs.
        let root = Root::new(cli.root.clone());
        let name = cli.name.clone().unwrap_or_default();
        return std::process::ExitCode::from(minion::jobproc::zygote::serve(&root, &name) as u8);
    }
    // --list-modules prints every module's state itself: only errors are logged.
    let level = cli.log_level.as_deref().or(cli.list_modules.then_some("error"));
    tracing_subscriber::fmt()
        .with_env_filter(common_log_filter(level))
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()) && !cli.daemon)
        .init();
    let root_given = cli.root != std::path::Path::new("/");
    match run(cli) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("funcd: error: {}", said_once(&e));
            let denied = e.chain().any(|c| {
                c.downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::PermissionDenied)
                    || c.to_string().contains("Permission denied")
            });
            if denied && !nix::unistd::geteuid().is_root() && !root_given {
                eprintln!(
                    "funcd: hint: funcd keeps its keys and jobs below / (etc/pki, var/lib/func) and serves root's methods: run it as root (sudo, or the funcd systemd unit), or pass --root DIR for a directory of your own"
                );
            }
            std::process::ExitCode::FAILURE
        }
    }
}

/// The error and its causes, each said once (a cause its context already
/// quotes is not repeated: "…: Permission denied: Permission denied").
fn said_once(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if out.ends_with(&text) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
    }
    out
}

fn run(cli: Cli) -> anyhow::Result<()> {
    if cli.list_modules {
        return list_modules(&cli.root);
    }
    common::private::state_dir(&cli.root, common::private::PUBLIC_DIR_MODE)
        .with_context(|| format!("preparing root {}", cli.root.display()))?;
    let (root, config) = load_config(&cli.root, cli.name, cli.listen)?;
    let enroll_cfg =
        EnrollConfig::load(&root, cli.certmaster).context("reading etc/certmaster/minion.conf")?;
    let listener =
        std::net::TcpListener::bind(config.listen).with_context(|| format!("binding {}", config.listen))?;
    let bound = listener.local_addr().context("reading the bound address")?;
    let advertise = cli
        .advertise
        .unwrap_or_else(|| match bound.ip().is_unspecified() {
            true => format!("{}:{}", config.name, bound.port()),
            false => bound.to_string(),
        });
    // One line on stdout that scripts and tests read to learn the port:
    // "listening on" only when it serves now (already enrolled); otherwise
    // "bound on", and "listening on" follows once enrolled.
    let enrolled_at_start = root.minion_cert(&config.name).exists();
    let _ = match enrolled_at_start {
        true => writeln!(std::io::stdout(), "funcd {} listening on {bound}", config.name),
        false => writeln!(
            std::io::stdout(),
            "funcd {} bound on {bound} (serving once enrolled)",
            config.name
        ),
    };
    std::io::stdout().flush().ok();
    if cli.daemon {
        daemonise(&root)?;
    }
    listener
        .set_nonblocking(true)
        .context("configuring the listener")?;
    // One async thread: a minion's calls are light and its blocking work
    // runs on blocking threads; a second worker only adds thread
    // hand-offs per call (and memory).
    // Room for every connection slot and lingering socket, plus files.
    common::process::raise_open_files();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .max_blocking_threads(minion::limits::blocking_threads(&config.quotas))
        .enable_all()
        .build()
        .context("starting the runtime")?;
    let served = runtime.block_on(async move {
        let listener = tokio::net::TcpListener::from_std(listener).context("registering the listener")?;
        // Bound first, so the advertised address carries the real port.
        enroll::enroll(&root, &config.name, &advertise, &enroll_cfg)
            .await
            .context("enrolling with the certmaster")?;
        let config_name = config.name.clone();
        let minion = Arc::new(Minion::new(config).context("preparing the minion")?);
        let ready = || {
            // Enrolled and about to serve: what systemd's Type=notify waits for.
            tracing::info!(name = %config_name, "enrolled; serving");
            if !enrolled_at_start {
                let _ = writeln!(std::io::stdout(), "funcd {config_name} listening on {bound}");
                std::io::stdout().flush().ok();
            }
            let _ = sd_notify::notify(&[sd_notify::NotifyState::Ready]);
        };
        minion::run::run(minion, listener, enroll_cfg, ready, shutdown_signal())
            .await
            .context("serving")
    });
    // A `jobs.wait_job` call may still be waiting on a blocking thread;
    // dropping the runtime would wait for it. Its caller sees the
    // connection close and asks again (a restarted daemon keeps the job).
    runtime.shutdown_timeout(std::time::Duration::from_secs(2));
    served
}

/// The root (made and canonical) and the minion's configuration, its name checked.
fn load_config(
    dir: &std::path::Path,
    name: Option<String>,
    listen: Option<std::net::SocketAddr>,
) -> anyhow::Result<(Root, MinionConfig)> {
    let root_dir = std::fs::canonicalize(dir).with_context(|| format!("root directory {}", dir.display()))?;
    let root = Root::new(root_dir);
    let overrides = Overrides { name, listen };
    let config = MinionConfig::load(root.clone(), overrides).context("reading the minion configuration")?;
    anyhow::ensure!(
        common::identity::is_valid_host_name(&config.name),
        "minion name {:?} is not a plain host name",
        common::paths::shorten(&config.name)
    );
    anyhow::ensure!(
        !certs::authority::is_reserved_name(&config.name),
        "minion name {:?} is reserved (certmaster, overlord and localhost are never minion names)",
        config.name
    );
    Ok((root, config))
}

/// `--daemon`: logging to var/log/func/funcd.log, the pid in var/run/funcd.pid.
fn daemonise(root: &Root) -> anyhow::Result<()> {
    let log = root.log_dir().join("funcd.log");
    common::private::daemonise_logging_to(&log)
        .with_context(|| format!("daemonising (log {})", log.display()))?;
    let pid_file = root.run_dir().join("funcd.pid");
    common::private::state_dir(&root.run_dir(), common::private::PUBLIC_DIR_MODE)
        .context("preparing var/run")?;
    common::private::write(&pid_file, format!("{}\n", std::process::id()).as_bytes(), false)
        .with_context(|| format!("writing {}", pid_file.display()))?;
    Ok(())
}

/// Completes on SIGTERM or SIGINT.
async fn shutdown_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    match (signal(SignalKind::terminate()), signal(SignalKind::interrupt())) {
        (Ok(mut term), Ok(mut int)) => {
            tokio::select! {
                _ = term.recv() => {},
                _ = int.recv() => {},
            }
        }
        _ => std::future::pending::<()>().await,
    }
    tracing::info!("shutting down");
}

/// `--log-level` if given, else `RUST_LOG`, else info.
fn common_log_filter(level: Option<&str>) -> tracing_subscriber::EnvFilter {
    match level {
        Some(level) => tracing_subscriber::EnvFilter::new(level),
        None => tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
    }
}

/// `--list-modules`: the built-in modules, then every drop-in file below
/// the root with its state (loaded, refused, broken, shadowed, overridden),
/// one per line; described now, as funcd would at a call.
fn list_modules(root: &std::path::Path) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    let builtins = Registry::standard();
    for module in builtins.modules() {
        if writeln!(out, "{}", module.name()).is_err() {
            return Ok(());
        }
    }
    let Ok(dir) = std::fs::canonicalize(root) else {
        return Ok(());
    };
    let root = Root::new(dir);
    let settings = MinionConfig::load(root.clone(), Overrides::default())
        .context("reading the minion configuration")?
        .modules;
    let registry = Registry::with_dropins(root, settings, minion::dropin::exec::Group::Own);
    for s in registry.dropins().status {
        let line = format!("{:<12} {:<10} {}: {}", s.module, s.state, s.shown, s.detail);
        if writeln!(out, "{line}").is_err() {
            break;
        }
    }
    Ok(())
}
