//! The certmaster of Func, on top of the CA library (`certs`): the server
//! side, which minions never link (nor, through it, the PostgreSQL client
//! the shared minion list needs).
//!
//! # Layout
//! - [`store`]: the certmaster's pending, signed and revoked certificates
//!   (and their mirror in the shared store, `pgconn`).
//! - [`cli`]: the command lines of `certmaster` and `certmaster-ca`.
//! - [`daemon`]: the certmaster's XML-RPC service (`wait_for_cert`, `get_crl`).

pub mod cli;
pub mod daemon;
pub mod store;
