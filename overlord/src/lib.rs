//! The Func overlord's engine, under its doors: the command-line doors
//! (`overlord-cli`: `func`, func-transmit, func-inventory, func-build-map)
//! and func-api (`overlord-api`) import it; it imports none of them (cargo
//! refuses the arrow back up). The job store is its own crate too
//! (`overlord-store`, re-exported as [`store`]).
//!
//! # Layout
//! - [`gate`]: the one gate (DESIGN §13): the typed requests every door maps
//!   its input onto, validated in one place, and [`gate::GateError`] with one
//!   mapping to exit status and HTTP status.
//! - [`conf`], [`settings`]: overlord.conf, read once per process into typed
//!   settings.
//! - [`caller`]: one call to one minion, for every caller (workers, poller,
//!   func-api's pool); [`pool`]: warm connections.
//! - [`engine`]: the one engine entry, `serve(plan, caller, request)`,
//!   answering a typed [`engine::Answer`] (each host streamed as it ends).
//! - [`plan`]: a door's request as a validated plan (hosts resolved, options
//!   checked) before anything is sent.
//! - [`targets`], [`groups`]: which minions a SPEC names, and where they are;
//!   [`facts`]: which of them a fact filter chooses (the minions judge it).
//! - [`dispatch`], [`worker`], [`job`]: `--forks N` worker processes, each
//!   calling its bucket of minions with bounded concurrency;
//!   [`respawned`]: the roles a door's program takes when the engine
//!   re-spawns it.
//! - [`jobs`], [`batch`]: async jobs (the one job start, the
//!   detached dispatch driver, the one long-poll, status polling, the one
//!   row a listing shows), batches, schedules.
//! - [`reach`]: one way to reach minions (the worker fleet or the warm
//!   pool behind one trait) with delegation written once;
//!   [`relay`]: delegation to relays (`--delegate`, DESIGN §17).
//! - [`output`], [`report`]: human and JSON output, exit status, results as
//!   they come; [`out`]: stdout that never panics on a closed pipe.
//! - [`interrupt`]: Ctrl-C on a sync batch or a polling call.
//! - [`audit`]: the audit trail; [`principal`]: who did something, spelled
//!   one way.
//!
//! The XML-RPC client itself is `common::rpc::client`.

pub mod audit;
pub mod batch;
pub mod caller;
pub mod calling;
pub mod conf;
pub mod dispatch;
pub mod engine;
pub mod error;
pub mod facts;
pub mod gate;
pub mod groups;
pub mod interrupt;
pub mod job;
pub mod jobs;
pub mod log;
pub mod out;
pub mod plan;
pub mod pool;
pub mod reach;
pub use common::principal;
pub mod relay;
pub mod respawned;
pub mod revocation;
pub mod seal;
pub mod settings;
pub mod status;
pub use overlord_store as store;
pub mod targets;
pub mod values;
pub mod worker;

pub use common::rpc::client::{CallError, MinionClient};
