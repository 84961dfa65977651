//! The Func overlord library. So far it re-exports the XML-RPC client that
//! calls one minion over mutual TLS with keep-alive (`common::rpc::client`);
//! targeting, dispatch, jobs and batches build on it.

pub use common::rpc::client::{CallError, MinionClient};
