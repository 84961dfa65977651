//! The overlord's job store: what it holds (`types.rs`), the [`JobStore`]
//! trait the engine uses with its writes (`api.rs`) over the store's rules
//! (`rules.rs`), the embedded redb store (`redb.rs`), the PostgreSQL store
//! shared by several overlords (`postgres.rs`), [`Store`], the one
//! configured (`backend.rs`), how a reader hears of changes
//! (`changes.rs`), and the stored times as people read and write them
//! (`when.rs`).

pub mod api;
pub mod backend;
pub mod changes;
pub mod postgres;
pub mod redb;
pub mod rules;
pub mod schedules;
mod schedules_pg;
mod schedules_redb;
pub mod types;
pub mod when;

pub use api::{Cursor, JobStore, Merge, Sealer};
pub use backend::{Status, Store};
pub use changes::ChangeWatch;
pub use types::{
    job_id, now, FactsRecord, HostEntry, HostState, HostUpdate, JobMeta, JobRecord, Seal, StoreError,
    DEFAULT_KEEP_JOBS,
};

/// Writes one log line on stderr (a store that heals says so where the
/// engine's log goes); a closed stderr is ignored.
pub(crate) fn log_line(text: &str) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr().lock(), "{text}");
}

/// A stored `<methodResponse>` read back (the tests of stored results).
#[cfg(test)]
pub(crate) fn test_decode(xml: &str) -> common::Value {
    let limits = common::xmlrpc::Limits {
        max_body: usize::MAX,
        max_depth: common::xmlrpc::DEFAULT_MAX_DEPTH,
        max_values: usize::MAX,
    };
    match common::xmlrpc::decode_response(xml.as_bytes(), &limits) {
        Ok(Ok(v)) => v,
        other => panic!("not a stored result: {other:?}"),
    }
}
