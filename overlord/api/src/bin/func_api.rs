//! `func-api` (DESIGN §14): the overlord's REST API and live events. Parses
//! the command line, then either manages tokens or binds, optionally
//! daemonises (before any runtime starts), and serves `overlord_api`.
//! Like every door, it is also what the engine re-spawns (its worker and
//! job and batch drivers: `overlord::respawned`).

use std::io::Write as _;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use clap::Parser as _;
use common::paths::Root;
use overlord_api::cli::{Cli, Command, TokenCommand};
use overlord_api::{self as api, config::ApiSettings, tokens};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(code) = overlord::respawned::engine_exit(&args) {
        return code;
    }
    let cli = Cli::parse();
    let result = match &cli.command {
        Some(Command::Token(t)) => token(&cli, t),
        None => serve(&cli),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("func-api: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn root_of(cli: &Cli) -> anyhow::Result<Root> {
    let dir =
        std::fs::canonicalize(&cli.root).with_context(|| format!("root directory {}", cli.root.display()))?;
    Ok(Root::new(dir))
}

fn token(cli: &Cli, command: &TokenCommand) -> anyhow::Result<()> {
    let root = root_of(cli)?;
    // Tokens belong to an overlord: no CA below the root is a wrong root
    // (as func says), never a token file written where nothing reads it.
    anyhow::ensure!(
        root.ca_cert().exists(),
        "no overlord below the root {}: {} does not exist. Pass --root DIR (or set FUNC_ROOT) for the overlord's root",
        root.dir().display(),
        root.ca_cert().display()
    );
    let mut out = std::io::stdout().lock();
    match command {
        TokenCommand::Create {
            name,
            admin,
            allow,
            expires,
        } => create_token(&root, &mut out, name, *admin, allow, expires.as_deref()),
        TokenCommand::List => list_tokens(&root, &mut out),
        TokenCommand::Revoke { name } => revoke_token(&root, &mut out, name),
    }
}

/// `token create NAME (--admin | --allow SPEC=METHODS...) [--expires SECS]`:
/// the secret is shown once.
fn create_token(
    root: &Root,
    out: &mut impl std::io::Write,
    name: &str,
    admin: bool,
    allow: &[String],
    expires: Option<&str>,
) -> anyhow::Result<()> {
    let rules = allow
        .iter()
        .map(|a| tokens::Rule::parse(a))
        .collect::<Result<Vec<_>, _>>()
        .map_err(anyhow::Error::msg)?;
    let life = match expires {
        Some(v) => overlord::settings::seconds(v, false)
            .ok()
            .filter(|s| *s <= tokens::MAX_EXPIRES)
            .with_context(|| format!("--expires takes seconds above 0, at most a year, not {v:?}"))?,
        None => tokens::DEFAULT_EXPIRES,
    };
    let (secret, tok) = tokens::create(root, name, admin, rules, life)?;
    let _ = writeln!(
        out,
        "token {} created, expires {}",
        tok.name,
        overlord::store::when::show(tok.expires)
    );
    let _ = writeln!(
        out,
        "it is shown only now; use it as: Authorization: Bearer TOKEN"
    );
    let _ = writeln!(out, "{secret}");
    Ok(())
}

/// `token list`: names, rights, expiry.
fn list_tokens(root: &Root, out: &mut impl std::io::Write) -> anyhow::Result<()> {
    let now = overlord::store::now();
    let all = tokens::list(root)?;
    if all.is_empty() {
        let _ = writeln!(out, "no tokens (func-api token create NAME --admin)");
    }
    for t in all {
        let rights = if t.admin {
            "admin".to_string()
        } else {
            t.allow
                .iter()
                .map(|r| format!("{}={}", r.spec, r.methods.join(",")))
                .collect::<Vec<_>>()
                .join(" ")
        };
        let state = if t.expired(now) { "expired" } else { "expires" };
        let _ = writeln!(
            out,
            "{}  {}  {state} {}",
            overlord::out::shown_line(&t.name),
            overlord::out::shown_line(&rights),
            overlord::store::when::show(t.expires)
        );
    }
    Ok(())
}

/// `token revoke NAME`: the token, and the schedules it owns stop now.
fn revoke_token(root: &Root, out: &mut impl std::io::Write, name: &str) -> anyhow::Result<()> {
    if !tokens::revoke(root, name)? {
        anyhow::bail!("no token named {:?}", common::paths::shorten(name));
    }
    let _ = writeln!(out, "token {name} revoked");
    // Its schedules stop now (a func-api would stop each at its next
    // run); said, so nothing stops silently.
    let reason = format!("its owner's token {name} was revoked: schedule disabled");
    match overlord_schedule::manage::stop_token(&overlord::settings::store(root), root, name, &reason) {
        Ok(stopped) if !stopped.is_empty() => {
            let _ = writeln!(out, "schedules stopped: {}", stopped.join(", "));
        }
        Ok(_) => {}
        Err(e) => {
            eprintln!("the token's schedules could not be stopped now ({e}); each stops at its next run")
        }
    }
    Ok(())
}

fn serve(cli: &Cli) -> anyhow::Result<()> {
    let root = root_of(cli)?;
    // Its errors name the file and the key.
    let mut settings = ApiSettings::load(&root).map_err(anyhow::Error::msg)?;
    if let Some(l) = &cli.listen {
        settings.listen = l.clone();
    }
    init_logging(cli);
    let listener = std::net::TcpListener::bind(&settings.listen)
        .with_context(|| format!("binding {}", settings.listen))?;
    listener.set_nonblocking(true)?;
    let bound = listener.local_addr()?;
    // Made before the line below, so a failure is said at once.
    let api = api::Api::new(root.clone(), settings)?;
    let _ = writeln!(std::io::stdout(), "func-api listening on {bound}");
    let _ = std::io::stdout().flush();
    if cli.daemon {
        let log = root.log_dir().join("func-api.log");
        common::private::daemonise_logging_to(&log)
            .with_context(|| format!("daemonising (log {})", log.display()))?;
    }
    common::process::raise_open_files();
    // A warm func: `func` below this root hands its calls to this service
    // (its pid is the daemon's, so announced after daemonising).
    let announced = overlord::relay::local::announce(&root, bound)
        .map_err(|e| tracing::warn!(error = %e, "func-api is not announced in its root: func calls minions itself"))
        .ok();
    // A long-lived server: one allocator arena for all its threads (see trim.rs).
    api::trim::one_arena();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    let served = runtime.block_on(async move {
        let listener = tokio::net::TcpListener::from_std(listener)?;
        api::serve(Arc::new(api), listener, shutdown()).await
    });
    drop(announced);
    served
}

fn init_logging(cli: &Cli) {
    let filter = match cli.log_level.as_deref() {
        Some(level) => tracing_subscriber::EnvFilter::new(level),
        None => tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
    };
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()) && !cli.daemon)
        .init();
}

async fn shutdown() {
    use tokio::signal::unix::{signal, SignalKind};
    match (signal(SignalKind::terminate()), signal(SignalKind::interrupt())) {
        (Ok(mut t), Ok(mut i)) => {
            tokio::select! { _ = t.recv() => {}, _ = i.recv() => {} }
        }
        _ => std::future::pending::<()>().await,
    }
}
