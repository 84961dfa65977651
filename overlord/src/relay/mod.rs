//! Delegation through relays (DESIGN §17; Func's `--delegate`, Salt's
//! syndic). A relay is an overlord of its segment running func-api; this
//! overlord hands it one signed request for all of its hosts, and it calls
//! them over its kept connections (or hands them on to its own relays).
//!
//! - `map.rs`: the map (`func-build-map`'s YAML) and [`Routes`]: which
//!   hosts go through which relay.
//! - `request.rs`: the signed request a relay runs (authority stays with
//!   the overlord that accepted the call).
//! - `nonces.rs`: the nonces of the requests a relay ran (a replay is
//!   refused, across restarts too).
//! - `signed_map.rs`: the map as a shared store keeps it, signed and
//!   verified before use.
//! - `client.rs`: the exchanges with a relay's func-api.
//! - `error.rs`: why delegation failed, how a relay job stands in a host
//!   map, and what a host gets when its relay cannot be reached.
//! - `local.rs`: a warm `func`: calls handed to the func-api announced in
//!   the root (a relay request for the root's own minions).
//! - `serve.rs`: a relay's part of a request it was sent (now, or as a
//!   job of its store), for the engine.
//! - `fanout.rs`: the fan-out — a call on every relay of a set of hosts, now
//!   (each host's result as the relay streams it) or as relay jobs (whose
//!   ids stand in the job's host map as `relay:NAME:RELAY_JOB`, followed by
//!   `jobs/poller.rs` and func-api's watcher like minion job ids), and the
//!   value a host gets when its relay cannot be reached: unreachable, never
//!   a silent gap.

pub mod build;
pub mod client;
pub mod error;
pub mod fanout;
pub mod local;
pub mod map;
pub mod nonces;
pub mod request;
pub mod routed;
pub mod serve;
pub mod signed_map;

pub use error::{job_ref, parse_job_ref, unreachable, RelayError};
pub use fanout::{block_on, call_now, collect, kill_all, start_all, Order};
pub use map::{Map, RelayAddr, Routes};
pub use request::{Mode, RelayRequest, SealedRequest};
