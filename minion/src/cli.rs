//! `funcd`'s command line (clap), in the library so that the man page and
//! shell completions are generated from the same definition.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Parser;

/// The Func minion daemon.
#[derive(Parser, Debug)]
#[command(
    name = "funcd",
    version,
    about = "Func minion: serves module methods over XML-RPC on HTTPS with mutual TLS"
)]
pub struct Cli {
    /// Read and write only below this directory.
    #[arg(long, env = common::paths::ROOT_ENV, default_value = "/")]
    pub root: PathBuf,
    /// Minion name (certificate CN); default: minion_name from minion.conf, else the host name.
    #[arg(long)]
    pub name: Option<String>,
    /// Address to listen on (port 0 picks a free port); default from minion.conf, else 0.0.0.0:51234.
    #[arg(long)]
    pub listen: Option<SocketAddr>,
    /// Certmaster to enroll with (default from etc/certmaster/minion.conf, else certmaster:51235).
    #[arg(long, value_name = "HOST:PORT")]
    pub certmaster: Option<String>,
    /// Address the overlord should call this minion at (default: the bound address, or NAME:PORT).
    #[arg(long, value_name = "HOST:PORT")]
    pub advertise: Option<String>,
    /// Stay in the foreground (the default).
    #[arg(long, conflicts_with = "daemon")]
    pub foreground: bool,
    /// Detach from the terminal and write var/run/funcd.pid below the root.
    #[arg(long)]
    pub daemon: bool,
    /// Print the built-in modules, then each drop-in module file below the
    /// root with its state (loaded, refused, broken, shadowed, overridden), and exit.
    #[arg(long)]
    pub list_modules: bool,
    /// Internal: the job zygote, which forks async jobs for the daemon
    /// (the daemon starts it; see minion::jobs::zygote).
    #[arg(long, hide = true)]
    pub job_zygote: bool,
    /// Log level: error, warn, info, debug or trace (default: RUST_LOG, else info).
    #[arg(long, value_name = "LEVEL", value_parser = ["error", "warn", "info", "debug", "trace"])]
    pub log_level: Option<String>,
}
