//! Types shared by several Func crates, and nothing else: the XML-RPC codec and
//! its limits, TLS configuration for both ends of a mutual-TLS connection, peer
//! identities, Func's INI config files and the `--root` path scheme.
//!
//! # Layout
//! - [`outcome`]: whether a host's result is a failure (REMOTE_ERROR, non-zero exit status).
//! - [`paths`]: every file location below a `--root` (DESIGN §3).
//! - [`config`]: Func's INI files (`[main]`, `key = value`).
//! - [`xmlrpc`]: request/response/fault codec on `dxr`, limits, lenient
//!   argument accessors, the `REMOTE_ERROR` value.
//! - [`identity`]: who a certificate names (CN, OpenSSL subject hash, overlord mark).
//! - [`tls`]: rustls server and client configurations (ring provider only).
//! - [`private`]: 0600 files in 0700 directories for stores, spools, logs.
//! - [`process`]: pid + start time, how both stores name a live process.
//! - [`rpc`]: XML-RPC over HTTP/1.1: the keep-alive client, and the request
//!   reading (routes, size limit, body deadline) servers share.

pub mod config;
pub mod fact_filter;
pub mod fact_query;
pub mod identity;
pub mod outcome;
pub mod paths;
pub mod principal;
pub mod private;
pub mod process;
pub mod rpc;
pub mod tls;
pub mod values;
pub mod xmlrpc;

pub use dxr::Value;
