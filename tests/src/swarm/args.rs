//! func-swarm's command line (DESIGN §17, pinned).

use std::net::SocketAddr;
use std::path::PathBuf;

/// `func-swarm --root DIR --count N [--prefix NAME] --certmaster HOST:PORT [--listen ADDR:PORT]`.
#[derive(Debug, clap::Parser)]
#[command(
    name = "func-swarm",
    about = "Serve many simulated minions (tests and benchmarks)"
)]
pub struct Args {
    /// Where the identities (keys and certificates) are kept, 0600 in 0700.
    #[arg(long)]
    pub root: PathBuf,
    /// How many minions: PREFIX1 … PREFIXN.
    #[arg(long)]
    pub count: u32,
    /// The minions' name prefix.
    #[arg(long, default_value = "swarm")]
    pub prefix: String,
    /// The certmaster that signs them.
    #[arg(long)]
    pub certmaster: String,
    /// Where to serve them (127.0.0.1:0 binds an ephemeral port; the
    /// minions advertise the port really bound).
    #[arg(long, default_value = "127.0.0.1:0")]
    pub listen: SocketAddr,
    /// Requests to the certmaster in flight (each over its own kept
    /// connection; the certmaster caps connections per address at 16).
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=16))]
    pub enroll_connections: u32,
}
