//! The overlord's job store: what it holds (`types.rs`), the [`JobStore`]
//! trait the engine uses with its writes (`api.rs`) over the store's rules
//! (`rules.rs`), the embedded redb store (`redb.rs`), the PostgreSQL store
//! shared by several overlords (`postgres.rs`), [`Store`], the one
//! configured (`backend.rs`), and how a reader hears of changes
//! (`changes.rs`).

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

pub use api::{Cursor, JobStore, Merge, Sealer};
pub use backend::{Status, Store};
pub use changes::ChangeWatch;
pub use types::{
    job_id, now, FactsRecord, HostEntry, HostState, HostUpdate, JobMeta, JobRecord, Seal, StoreError,
    DEFAULT_KEEP_JOBS,
};
