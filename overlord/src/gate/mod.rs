//! The one gate (DESIGN §13): every door — `func`, `func transmit`,
//! `func-transmit`, `func-api` (and the Python API through `func`) — maps
//! its input (clap words, JSON, YAML, Func's protocol) onto the same typed
//! request, which is validated here and nowhere else, and every refusal is
//! one [`GateError`] with one exit status and one HTTP status. What a
//! request does once it passed is the engine's (the rest of this crate).
//!
//! - [`call`]: the call request (`SPEC call MODULE METHOD ARGS`, async,
//!   batch) and its validation;
//! - [`job`]: a job named by a request (`job_status`, lookups, kills);
//! - [`jobs`]: a kill's signal and a listing's filters;
//! - [`filter`]: targeting by facts (`--filter`, `--filteror`, `-G`);
//! - [`keys`]: a request document's keys, each once;
//! - [`rights`]: who may do what, judged here for every door;
//! - [`error`]: why a request was refused or failed, and the status each
//!   door ends with.
//!
//! A SPEC (`call::check_spec`) is checked here for every command that takes
//! one (`list_minions`, `ping`, `call`, `GET /api/v1/minions?spec=`).

pub mod call;
pub mod error;
pub mod filter;
pub mod job;
pub mod jobs;
pub mod keys;
pub mod rights;

pub use call::{Args, Call, CallFields, Run};
pub use error::GateError;
pub use job::JobRef;
