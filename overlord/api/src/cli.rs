//! `func-api`'s command line (DESIGN §14), also for its man page and
//! completions.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(
    name = "func-api",
    version,
    about = "Func's REST API and live event stream (HTTPS)"
)]
pub struct Cli {
    /// Read and write only below DIR.
    #[arg(long, env = "FUNC_ROOT", default_value = "/", value_name = "DIR")]
    pub root: PathBuf,
    /// Listen on ADDR:PORT (default [api] listen, else 0.0.0.0:51236).
    #[arg(long, value_name = "ADDR:PORT")]
    pub listen: Option<String>,
    /// Stay in the foreground (the default).
    #[arg(long, conflicts_with = "daemon")]
    pub foreground: bool,
    /// Detach; log to var/log/func/func-api.log.
    #[arg(long)]
    pub daemon: bool,
    /// Log level (error, warn, info, debug) or a tracing filter.
    #[arg(long, value_name = "L")]
    pub log_level: Option<String>,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Create, list and revoke API tokens.
    #[command(subcommand)]
    Token(TokenCommand),
}

#[derive(Subcommand, Debug)]
pub enum TokenCommand {
    /// Create token NAME and print it once (its last line of output).
    Create {
        name: String,
        /// Every right.
        #[arg(long, conflicts_with = "allow")]
        admin: bool,
        /// SPEC=METHOD_GLOB[,METHOD_GLOB…]: hosts and the methods they may be called with (repeatable).
        #[arg(long, value_name = "SPEC=METHOD_GLOB,…", required_unless_present = "admin")]
        allow: Vec<String>,
        /// Lifetime in seconds (default 43200, 12 hours; at most a year).
        #[arg(long, value_name = "SECS")]
        expires: Option<String>,
    },
    /// List tokens (names, rights, expiry; never the tokens).
    List,
    /// Revoke token NAME (open event streams of it end).
    Revoke { name: String },
}
