//! The overlord's job store: what it holds (`types.rs`), the [`JobStore`]
//! trait the engine uses (`api.rs`), and the embedded redb store that
//! implements it (`redb.rs`).

pub mod api;
pub mod redb;
pub mod types;

pub use api::{Cursor, JobStore};
pub use redb::Store;
pub use types::{
    job_id, now, HostEntry, HostState, HostUpdate, JobMeta, JobRecord, StoreError, DEFAULT_KEEP_JOBS,
};
