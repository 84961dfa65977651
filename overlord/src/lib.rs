//! The Func overlord: the library behind `func`.
//!
//! # Layout
//! - [`gate`]: the one gate (DESIGN §13): the typed requests every door —
//!   `func`, `func transmit`, `func-transmit`, `func-api` — maps its input
//!   onto, validated in one place, and [`gate::GateError`] with one mapping to
//!   exit status and HTTP status.
//! - [`conf`]: overlord.conf, read once per process into typed settings.
//! - [`caller`]: one call to one minion, for every caller (workers, poller,
//!   func-api's pool).
//! - [`cli`]: the clap definitions of `func` (also for man pages and completions).
//! - [`plan`]: the command line parsed into a validated plan (hosts resolved,
//!   options checked) before anything is sent.
//! - [`targets`], [`groups`]: which minions a SPEC names, and where they are;
//!   [`facts`]: which of them a fact filter chooses (the minions judge it).
//! - [`dispatch`], [`worker`], [`job`]: `--forks N` worker processes, each
//!   calling its bucket of minions with bounded concurrency.
//! - [`store`], [`jobs`]: async jobs: the job store (its rules once above
//!   redb and PostgreSQL), the one job start, the detached dispatch driver,
//!   the one long-poll (`jobs::follow`), status polling.
//! - [`output`]: human and JSON output, exit status; [`out`]: stdout
//!   that never panics on a closed pipe (`out!`, `outln!`).
//! - [`interrupt`]: Ctrl-C on a sync batch or a polling call: a flag the
//!   work loop notices, then the commands to follow, stop or resume.
//! - [`report`]: results for people as they come: blocks, progress naming
//!   the hosts awaited, a summary (ok/failed/unreachable/timed out), colour.
//! - [`commands`]: one file per `func` subcommand.
//!
//! The XML-RPC client itself is `common::rpc::client`.

pub mod audit;
pub mod batch;
pub mod build_map;
pub mod caller;
pub mod calling;
pub mod cli;
pub mod commands;
pub mod conf;
pub mod dispatch;
pub mod error;
pub mod facts;
pub mod func_transmit;
pub mod gate;
pub mod groups;
pub mod interrupt;
pub mod inventory;
pub mod job;
pub mod jobs;
pub mod log;
pub mod out;
pub mod output;
pub mod parse;
pub mod plan;
pub mod pool;
pub use common::principal;
pub mod relay;
pub mod report;
pub mod respawned;
pub mod revocation;
pub mod schedule;
pub mod seal;
pub mod settings;
pub mod status;
pub use overlord_store as store;
pub mod targets;
pub mod values;
pub mod when;
pub mod worker;

pub use common::rpc::client::{CallError, MinionClient};
