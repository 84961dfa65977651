//! `func-api` (DESIGN §14): the overlord's engine over HTTPS, for programs,
//! dashboards and the web UI. A front end like `func`: it imports the
//! engine (targets, the warm connection pool, jobs, batches, the store),
//! never a `func` command or display module.
//!
//! - [`state`]: what handlers share; [`server`]: the accept loop (per-address cap, TLS with an optional
//!   client certificate, idle close) over an axum router.
//! - [`auth`]: who is asking (bearer token, session cookie, the overlord's
//!   certificate) and [`tokens`]: tokens and their rights.
//! - One file per group of endpoints: [`minions`], [`calls`], [`jobs`],
//!   [`batches`], [`session`], [`events`] (Server-Sent Events from the
//!   [`bus`], fed by the [`watch`]er of every unfinished job and batch).
//! - [`reply`]: JSON bodies in and out, errors as `{"error"}`;
//!   [`openapi`]: the OpenAPI document, derived from those types.
//! - [`web`]: the web UI's pages, built into the binary.

pub mod anonymous;
pub mod audit;
pub mod auth;
pub mod batches;
pub mod bus;
pub mod calls;
pub mod cli;
pub mod config;
pub mod conventions;
pub mod counters;
pub mod events;
pub mod facts;
pub mod failures;
pub mod jobs;
pub mod judge;
pub mod keys;
pub mod metrics;
pub mod minions;
pub mod notify;
pub mod oidc;
pub mod openapi;
pub mod relay;
pub mod reply;
pub mod rerun;
pub mod scheduler;
pub mod schedules;
pub mod server;
pub mod session;
pub mod sessions;
pub mod state;
pub mod tls;
pub mod tokens;
pub mod trim;
pub mod watch;
pub mod web;

pub use server::serve;
pub use state::Api;
