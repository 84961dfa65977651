//! The job store as the engine uses it ([`JobStore`]): every operation one
//! transaction. Its writes are written here once, over the store's rules
//! (`rules.rs`); a backend — the embedded redb file (`redb.rs`), the
//! shared PostgreSQL store (`postgres.rs`, DESIGN §15) — gives its
//! primitives in one transaction (`write_tx`) and its reads.

use super::types::{HostUpdate, JobMeta, JobRecord, StoreError};

/// Where a page of the job listing starts: below this job (its start time
/// in epoch seconds, and its id), newest first.
pub type Cursor = (f64, String);

use super::rules::{self, Tx};
pub use super::rules::{Merge, Sealer};

/// The overlord's job store. A backend gives its storage primitives in one
/// write transaction ([`JobStore::write_tx`], `rules::Tx`) and its reads;
/// the writes below are the store's rules (`rules.rs`), written once.
pub trait JobStore: Send + Sync {
    /// Which store this is, for a driver this process starts (`embedded`,
    /// or `postgres URL`): a driver uses the very store its parent used,
    /// even if overlord.conf changed since. `None`: the child reads the
    /// configuration.
    fn handoff(&self) -> Option<String> {
        None
    }
    /// Runs `f` over this backend's primitives in one write transaction
    /// (committed when `f` succeeds, rolled back when it fails).
    fn write_tx(&self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<(), StoreError>) -> Result<(), StoreError>;
    /// Records a new job with all its hosts pending, under a fresh id that
    /// no other writer can take; returns the id. `seal` signs the request
    /// once its id is chosen, before it is written (`seal.rs`).
    fn create_sealed(&self, meta: JobMeta, hosts: &[String], seal: Sealer<'_>) -> Result<String, StoreError> {
        let mut id = String::new();
        self.write_tx(&mut |tx| {
            id = rules::create(tx, meta.clone(), hosts, seal)?;
            Ok(())
        })?;
        Ok(id)
    }
    /// Claims telling notification target `target` of job `id`'s end:
    /// true for the one caller that claims it first (the claim is kept in
    /// the job's record, in one transaction); false when it was claimed
    /// before, or the store no longer has the job.
    fn claim_notice(&self, id: &str, target: &str) -> Result<bool, StoreError> {
        let mut claimed = false;
        self.write_tx(&mut |tx| {
            claimed = false;
            let Some(mut meta) = tx.job_for_update(id)? else {
                return Ok(());
            };
            if meta.notified.iter().any(|t| t == target) {
                return Ok(());
            }
            meta.notified.push(target.to_string());
            tx.put_job(&meta, false)?;
            claimed = true;
            Ok(())
        })?;
        Ok(claimed)
    }
    /// [`JobStore::create_sealed`] without a signature (tests, imports:
    /// no driver runs such a job).
    fn create(&self, meta: JobMeta, hosts: &[String]) -> Result<String, StoreError> {
        self.create_sealed(meta, hosts, &|_, _| {})
    }
    /// The jobs of `ids` the store still has (expired ones are gone).
    fn load_many(&self, ids: &[String]) -> Result<Vec<JobRecord>, StoreError>;
    /// The job and its hosts, if the store still has it.
    fn load(&self, id: &str) -> Result<Option<JobRecord>, StoreError> {
        Ok(self.load_many(&[id.to_string()])?.pop())
    }
    /// Records the process driving job `id` (pid + start time).
    fn set_driver(&self, id: &str, pid: u32, start: u64) -> Result<(), StoreError> {
        self.write_tx(&mut |tx| rules::set_driver(tx, id, pid, start))
    }
    /// Applies host changes (and ends the dispatch with `dispatch_done`);
    /// whether the job is finished now.
    fn update(
        &self,
        id: &str,
        changes: &[(String, HostUpdate)],
        dispatch_done: bool,
    ) -> Result<bool, StoreError> {
        let mut finished = false;
        self.write_tx(&mut |tx| {
            finished = rules::update(tx, id, changes, dispatch_done)?;
            Ok(())
        })?;
        Ok(finished)
    }
    /// Saves a batch record with its host changes, in one transaction;
    /// `merge(stored, new)` keeps what others stored meanwhile (a stop).
    /// Returns the record as saved.
    fn save_batch_with(
        &self,
        id: &str,
        record: &[u8],
        changes: &[(String, HostUpdate)],
        dispatch_done: bool,
        merge: &Merge<'_>,
    ) -> Result<Vec<u8>, StoreError> {
        let mut saved = Vec::new();
        self.write_tx(&mut |tx| {
            saved = rules::save_batch(tx, id, record, changes, dispatch_done, merge)?;
            Ok(())
        })?;
        Ok(saved)
    }
    /// Changes a stored batch record in one transaction (`None` from
    /// `change` leaves it); whether the batch exists.
    fn change_batch_with(
        &self,
        id: &str,
        change: &mut dyn FnMut(&[u8]) -> Option<Vec<u8>>,
    ) -> Result<bool, StoreError> {
        let mut found = false;
        self.write_tx(&mut |tx| {
            found = rules::change_batch(tx, id, change)?;
            Ok(())
        })?;
        Ok(found)
    }
    /// A batch's stored record.
    fn batch(&self, id: &str) -> Result<Option<Vec<u8>>, StoreError>;
    /// Minion `host`'s stored facts record.
    fn facts_of(&self, host: &str) -> Result<Option<Vec<u8>>, StoreError>;
    /// The last facts seen from `host`, with when.
    fn last_facts(&self, host: &str) -> Result<Option<super::types::FactsRecord>, StoreError> {
        Ok(match self.facts_of(host)? {
            Some(bytes) => Some(serde_json::from_slice(&bytes)?),
            None => None,
        })
    }
    /// Records the facts seen from each host (see [`rules::save_facts`]),
    /// all in one transaction.
    fn save_facts(
        &self,
        facts: &[(&str, &serde_json::Map<String, serde_json::Value>)],
        seen: f64,
        whole: bool,
    ) -> Result<(), StoreError> {
        self.write_tx(&mut |tx| {
            facts
                .iter()
                .try_for_each(|(host, facts)| rules::save_facts(tx, host, facts, seen, whole))
        })
    }
    /// At most `limit` jobs, newest first, starting below `before`.
    fn list_page(&self, limit: usize, before: Option<&Cursor>) -> Result<Vec<JobMeta>, StoreError>;
    /// A number that grows with every change: a watcher compares it to
    /// learn that jobs or batches changed (a server-backed store would
    /// announce changes instead, e.g. PostgreSQL's LISTEN/NOTIFY).
    fn generation(&self) -> Result<u64, StoreError>;
    /// Appends a batch lifecycle event (`{time, job_id, event, counts,
    /// halted}`) to the store's event log.
    fn log_batch_event(&self, id: &str, line: &serde_json::Value) -> Result<(), StoreError>;
    /// Batch events after position `after`, oldest first, and the position
    /// to ask from next time; `after: None` only tells the current end.
    fn batch_events(&self, after: Option<u64>) -> Result<(Vec<serde_json::Value>, u64), StoreError>;
}

/// How long a driver keeps results it could not write while the store's
/// server is away, trying again.
pub const OUTAGE_PATIENCE: std::time::Duration = std::time::Duration::from_secs(3600);

/// Runs `op` until it succeeds or fails for a reason other than the store
/// being unreachable; while it is unreachable (a PostgreSQL restart), tries
/// again with a growing pause, saying so once a minute, for at most
/// [`OUTAGE_PATIENCE`]. For drivers, whose results must not be lost.
pub fn retrying<T>(what: &str, op: impl FnMut() -> Result<T, StoreError>) -> Result<T, StoreError> {
    use backon::BlockingRetryable as _;
    let begun = std::time::Instant::now();
    let mut said: Option<std::time::Instant> = None;
    // 200 ms, doubling, at most 5 s between tries (backon's schedule).
    let pauses = backon::ExponentialBuilder::new()
        .with_min_delay(std::time::Duration::from_millis(200))
        .with_max_delay(std::time::Duration::from_secs(5))
        .with_factor(2.0)
        .without_max_times();
    let done = op
        .retry(pauses)
        .sleep(std::thread::sleep)
        .when(|e| matches!(e, StoreError::Unavailable(_)) && begun.elapsed() < OUTAGE_PATIENCE)
        .notify(|e, _| {
            if said.is_none_or(|t| t.elapsed() >= std::time::Duration::from_secs(60)) {
                crate::log_line(&format!("{what}: {e}; keeping the results and trying again"));
                said = Some(std::time::Instant::now());
            }
        })
        .call();
    if said.is_some() && done.is_ok() {
        crate::log_line(&format!("{what}: the store is back; results written"));
    }
    done
}
