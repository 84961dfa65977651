//! `funcd`, the Func minion: an HTTPS XML-RPC server with mutual TLS that runs
//! module methods for the overlord (DESIGN §4–§5).
//!
//! # Layout
//! - [`cli`]: `funcd`'s command line.
//! - [`config`]: `etc/func/minion.conf` plus command-line overrides.
//! - [`run`]: a working minion started in full (background tasks + server).
//! - [`state`]: a running minion's shared state.
//! - [`server`]: accept loop, TLS handshake and HTTP/1.1 handling with limits.
//! - [`dispatch`]: one call: ACL check, audit line, module lookup, blocking work
//!   off the async threads, `REMOTE_ERROR` values and faults.
//! - [`enroll`]: getting a certificate from the certmaster, and its CRL.
//! - [`facts`]: what the minion knows of itself, and Func's fact queries.
//! - [`jobs`]: async jobs: detached job processes, the spool, the redb store.
//! - [`limits`]: per-caller limits (blocking calls, request bytes, jobs).
//! - [`acl`]: Func's `minion-acl.d/*.acl` files.
//! - [`audit`]: `var/log/func/audit.log`, one line per call.
//! - [`beneath`]: files below a directory reached through descriptors, never
//!   through a symlink (copyfile's writes).
//! - [`method`]: what a method returns and how it describes itself (a leaf).
//! - [`modules`]: the module interface (`module.rs`), the registry, one file per module.
//! - [`jobproc`]: the job process: the zygote's side and the runner (above modules and jobs).
//! - [`quickack`]: keeps Python keep-alive clients from 40 ms Nagle stalls.

pub mod acl;
pub mod audit;
pub mod beneath;
pub mod cli;
pub mod config;
pub mod dispatch;
pub mod dropin;
pub mod enroll;
pub mod facts;
pub mod jobproc;
pub mod jobs;
pub mod limits;
pub mod method;
pub mod modules;
pub mod quickack;
pub mod run;
pub mod server;
pub mod state;

pub use config::MinionConfig;
pub use server::serve;
pub use state::Minion;
