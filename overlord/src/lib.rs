//! The Func overlord library. So far: the XML-RPC client that calls one
//! minion over mutual TLS with keep-alive ([`client`]). Targeting, dispatch,
//! jobs and batches build on it.

pub mod client;

pub use client::{CallError, MinionClient};
