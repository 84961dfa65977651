//! The command lines of `certmaster` and `certmaster-ca` (clap), in the
//! library so that man pages and shell completions are generated from the
//! same definitions.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{ArgGroup, Parser};

/// The Func certificate authority daemon.
#[derive(Parser, Debug)]
#[command(
    name = "certmaster",
    version,
    about = "Func certmaster: signs minion certificates (XML-RPC on port 51235)"
)]
pub struct CertmasterCli {
    /// Read and write only below this directory.
    #[arg(long, env = common::paths::ROOT_ENV, default_value = "/")]
    pub root: PathBuf,
    /// Address to listen on (port 0 picks a free port); default 0.0.0.0:51235.
    #[arg(long)]
    pub listen: Option<SocketAddr>,
    /// Sign every valid request at once.
    #[arg(long)]
    pub autosign: bool,
    /// Stay in the foreground (the default).
    #[arg(long, conflicts_with = "daemon")]
    pub foreground: bool,
    /// Detach and write var/run/certmaster.pid below the root.
    #[arg(long)]
    pub daemon: bool,
    /// Log level: error, warn, info, debug or trace (default: RUST_LOG, else info).
    #[arg(long, value_name = "LEVEL", value_parser = ["error", "warn", "info", "debug", "trace"])]
    pub log_level: Option<String>,
}

/// The certmaster's administration tool.
#[derive(Parser, Debug)]
#[command(
    name = "certmaster-ca",
    version,
    about = "Manage Func certificate requests and certificates"
)]
#[command(group(ArgGroup::new("action").required(true).args(["list", "sign", "clean", "list_signed", "list_cert_hash", "relay"])))]
pub struct CertmasterCaCli {
    /// Read and write only below this directory.
    #[arg(long, env = common::paths::ROOT_ENV, default_value = "/")]
    pub root: PathBuf,
    /// List pending requests with the fingerprint of each (compare it with the one funcd logged).
    #[arg(short, long)]
    pub list: bool,
    /// Sign pending requests matching NAME or GLOB.
    #[arg(short, long, num_args = 1.., value_name = "NAME|GLOB")]
    pub sign: Vec<String>,
    /// With --sign: sign only if the request's fingerprint is FP (the one funcd logged).
    #[arg(long, value_name = "FP", requires = "sign")]
    pub fingerprint: Option<String>,
    /// Remove pending requests and signed certificates matching NAME or GLOB, and revoke the certificates.
    #[arg(short, long, num_args = 1.., value_name = "NAME|GLOB")]
    pub clean: Vec<String>,
    /// List signed certificates (optionally matching GLOBs).
    #[arg(long, num_args = 0.., value_name = "GLOB")]
    pub list_signed: Option<Vec<String>>,
    /// Print `<cn>-<subject hash>` ACL keys of signed certificates.
    #[arg(long, num_args = 0.., value_name = "GLOB")]
    pub list_cert_hash: Option<Vec<String>>,
    /// Make the credentials of relay NAME (its own overlord key, worth its segment only, and its func-api's certificate) below --relay-root
    #[arg(long, value_name = "NAME", requires = "relay_root")]
    pub relay: Option<String>,
    /// With --relay: the relay's root (its host's / by default when copied there)
    #[arg(long, value_name = "DIR", requires = "relay")]
    pub relay_root: Option<PathBuf>,
    /// With --relay: more names its func-api answers to (host names, addresses), comma-separated
    #[arg(long, value_name = "NAMES", value_delimiter = ',', requires = "relay")]
    pub relay_names: Vec<String>,
}
