//! The job store as the engine uses it ([`JobStore`]): every operation one
//! transaction, so a second implementation backed by a database server
//! (PostgreSQL, DESIGN §15) fits behind it unchanged. The embedded redb
//! store (`redb.rs`) is the one built today.

use super::types::{HostUpdate, JobMeta, JobRecord, StoreError};

/// Where a page of the job listing starts: below this job (its start time
/// in epoch seconds, and its id), newest first.
pub type Cursor = (f64, String);

/// The overlord's job store.
pub trait JobStore: Send + Sync {
    /// Records a new job with all its hosts pending, under a fresh id that
    /// no other writer can take; returns the id.
    fn create(&self, meta: JobMeta, hosts: &[String]) -> Result<String, StoreError>;
    /// The jobs of `ids` the store still has (expired ones are gone).
    fn load_many(&self, ids: &[String]) -> Result<Vec<JobRecord>, StoreError>;
    /// The job and its hosts, if the store still has it.
    fn load(&self, id: &str) -> Result<Option<JobRecord>, StoreError> {
        Ok(self.load_many(&[id.to_string()])?.pop())
    }
    /// Records the process driving job `id` (pid + start time).
    fn set_driver(&self, id: &str, pid: u32, start: u64) -> Result<(), StoreError>;
    /// Applies host changes (and ends the dispatch with `dispatch_done`);
    /// whether the job is finished now.
    fn update(
        &self,
        id: &str,
        changes: &[(String, HostUpdate)],
        dispatch_done: bool,
    ) -> Result<bool, StoreError>;
    /// Saves a batch record with its host changes, in one transaction;
    /// `merge(stored, new)` keeps what others stored meanwhile (a stop).
    /// Returns the record as saved.
    fn save_batch_with(
        &self,
        id: &str,
        record: &[u8],
        changes: &[(String, HostUpdate)],
        dispatch_done: bool,
        merge: &dyn Fn(&[u8], &[u8]) -> Vec<u8>,
    ) -> Result<Vec<u8>, StoreError>;
    /// Changes a stored batch record in one transaction (`None` from
    /// `change` leaves it); whether the batch exists.
    fn change_batch_with(
        &self,
        id: &str,
        change: &mut dyn FnMut(&[u8]) -> Option<Vec<u8>>,
    ) -> Result<bool, StoreError>;
    /// A batch's stored record.
    fn batch(&self, id: &str) -> Result<Option<Vec<u8>>, StoreError>;
    /// At most `limit` jobs, newest first, starting below `before`.
    fn list_page(&self, limit: usize, before: Option<&Cursor>) -> Result<Vec<JobMeta>, StoreError>;
    /// A number that grows with every change: a watcher compares it to
    /// learn that jobs or batches changed (a server-backed store would
    /// announce changes instead, e.g. PostgreSQL's LISTEN/NOTIFY).
    fn generation(&self) -> Result<u64, StoreError>;
}
