//! The job store's rules, written once above its backends: how a new job
//! gets an id no other writer can take, how host changes apply (a finished
//! host never changes again; a job ends when it is dispatched and every
//! host is finished), how a driver is recorded, and how a batch record is
//! saved with its host changes. A backend (`redb.rs`, `postgres.rs`) gives
//! only storage primitives inside one of its write transactions ([`Tx`]);
//! the conformance suite (`tests/src/store_conformance.rs`) holds every
//! backend to the same answers.

use std::collections::BTreeMap;

use super::types::{job_id, now, HostEntry, HostState, HostUpdate, JobMeta, StoreError};

/// Signs a new job's request once the store has chosen its id.
pub type Sealer<'a> = &'a dyn Fn(&mut JobMeta, &[String]);

/// Merges a stored batch record with a new one (`merge(stored, new)`).
pub type Merge<'a> = dyn Fn(&[u8], &[u8]) -> Vec<u8> + 'a;

/// Storage primitives inside one write transaction of a backend.
pub trait Tx {
    /// Writes job `meta` unless a job with its id exists; whether it did.
    fn insert_job(&mut self, meta: &JobMeta) -> Result<bool, StoreError>;
    /// Writes `entry` for each of `hosts` of job `id` (a new job's).
    fn insert_hosts(&mut self, id: &str, hosts: &[String], entry: &HostEntry) -> Result<(), StoreError>;
    /// Job `id`, locked against other writers until the transaction ends.
    fn job_for_update(&mut self, id: &str) -> Result<Option<JobMeta>, StoreError>;
    /// Rewrites job `meta`; `newly_ended`: it has just ended (its end time
    /// starts counting towards expiry).
    fn put_job(&mut self, meta: &JobMeta, newly_ended: bool) -> Result<(), StoreError>;
    /// The entries of `names` of job `id` (hosts it does not have are left out).
    fn hosts_of(&mut self, id: &str, names: &[&str]) -> Result<BTreeMap<String, HostEntry>, StoreError>;
    /// Rewrites these host entries of job `id`.
    fn put_hosts(&mut self, id: &str, entries: &BTreeMap<&str, HostEntry>) -> Result<(), StoreError>;
    /// Whether job `id` has a host not finished.
    fn any_unfinished(&mut self, id: &str) -> Result<bool, StoreError>;
    /// Batch `id`'s record, locked (after the job, the order every writer
    /// of a batch locks in).
    fn batch_for_update(&mut self, id: &str) -> Result<Option<Vec<u8>>, StoreError>;
    /// Writes batch `id`'s record.
    fn put_batch(&mut self, id: &str, record: &[u8]) -> Result<(), StoreError>;
    /// Minion `host`'s facts record, locked.
    fn facts_for_update(&mut self, host: &str) -> Result<Option<Vec<u8>>, StoreError>;
    /// Writes minion `host`'s facts record.
    fn put_facts(&mut self, host: &str, record: &[u8]) -> Result<(), StoreError>;
}

/// Records `facts` seen from `host` at `seen`: all of them (`whole`: a
/// `fact.items` reading) or some (the facts a filter looked at), merged
/// into what was stored. An older reading never overwrites a newer one.
pub fn save_facts(
    tx: &mut dyn Tx,
    host: &str,
    facts: &serde_json::Map<String, serde_json::Value>,
    seen: f64,
    whole: bool,
) -> Result<(), StoreError> {
    let stored: Option<super::types::FactsRecord> = match tx.facts_for_update(host)? {
        Some(bytes) => serde_json::from_slice(&bytes).ok(),
        None => None,
    };
    let record = match stored {
        Some(old) if old.seen > seen => return Ok(()),
        Some(mut old) if !whole => {
            old.facts.extend(facts.clone());
            old.seen = seen;
            old
        }
        _ => super::types::FactsRecord {
            seen,
            facts: facts.clone(),
        },
    };
    tx.put_facts(host, &serde_json::to_vec(&record)?)
}

/// Microseconds since the epoch, as ids and indexes count time.
pub fn micros(epoch: f64) -> u64 {
    (epoch.max(0.0) * 1e6) as u64
}

/// Records a new job with all its hosts pending, under a fresh id based on
/// `meta.started`, moved on by 1 µs while the id is taken (so ids are
/// unique however many writers start together); `seal` signs the request
/// once its id is chosen. Returns the id.
pub fn create(
    tx: &mut dyn Tx,
    mut meta: JobMeta,
    hosts: &[String],
    seal: Sealer<'_>,
) -> Result<String, StoreError> {
    let mut stamp = micros(meta.started);
    meta.hosts = hosts.len();
    loop {
        meta.id = job_id(&meta.spec, &meta.function, stamp);
        meta.started = stamp as f64 / 1e6;
        seal(&mut meta, hosts);
        if tx.insert_job(&meta)? {
            break;
        }
        stamp += 1;
    }
    tx.insert_hosts(&meta.id, hosts, &HostEntry::pending())?;
    Ok(meta.id)
}

/// Applies host changes (a finished host never changes again; of several
/// changes to one host, each applies in turn), marks dispatch complete when
/// `dispatch_done`, and ends the job when it is dispatched and every host
/// is finished. Whether the job is finished now.
pub fn update(
    tx: &mut dyn Tx,
    id: &str,
    changes: &[(String, HostUpdate)],
    dispatch_done: bool,
) -> Result<bool, StoreError> {
    let Some(mut meta) = tx.job_for_update(id)? else {
        return Ok(false);
    };
    if !changes.is_empty() {
        let names: Vec<&str> = changes.iter().map(|(h, _)| h.as_str()).collect();
        let mut current = tx.hosts_of(id, &names)?;
        let mut changed: BTreeMap<&str, HostEntry> = BTreeMap::new();
        for (host, change) in changes {
            let Some(entry) = current.get_mut(host) else {
                continue;
            };
            if entry.apply(change) {
                changed.insert(host.as_str(), entry.clone());
            }
        }
        if !changed.is_empty() {
            tx.put_hosts(id, &changed)?;
        }
    }
    meta.dispatched |= dispatch_done;
    let newly_ended = meta.ended.is_none() && meta.dispatched && !tx.any_unfinished(id)?;
    if newly_ended {
        meta.ended = Some(now());
    }
    tx.put_job(&meta, newly_ended)?;
    Ok(meta.ended.is_some())
}

/// Records the process driving job `id` (pid + start time) and its host.
pub fn set_driver(tx: &mut dyn Tx, id: &str, pid: u32, start: u64) -> Result<(), StoreError> {
    let Some(mut meta) = tx.job_for_update(id)? else {
        return Ok(());
    };
    meta.driver = Some((pid, start));
    meta.driver_host = Some(common::process::overlord_host().to_string());
    tx.put_job(&meta, false)
}

/// Saves batch `id`'s record with its host changes; `merge(stored, new)`
/// keeps what others stored meanwhile (a stop). The record as saved.
pub fn save_batch(
    tx: &mut dyn Tx,
    id: &str,
    record: &[u8],
    changes: &[(String, HostUpdate)],
    dispatch_done: bool,
    merge: &Merge<'_>,
) -> Result<Vec<u8>, StoreError> {
    let merged = match tx.batch_for_update(id)? {
        Some(old) => merge(&old, record),
        None => record.to_vec(),
    };
    tx.put_batch(id, &merged)?;
    if !changes.is_empty() || dispatch_done {
        update(tx, id, changes, dispatch_done)?;
    }
    Ok(merged)
}

/// Changes batch `id`'s stored record (`None` from `change` leaves it);
/// whether the batch exists.
pub fn change_batch(
    tx: &mut dyn Tx,
    id: &str,
    change: &mut dyn FnMut(&[u8]) -> Option<Vec<u8>>,
) -> Result<bool, StoreError> {
    let Some(old) = tx.batch_for_update(id)? else {
        return Ok(false);
    };
    if let Some(new) = change(&old) {
        tx.put_batch(id, &new)?;
    }
    Ok(true)
}

/// Whether `entry` is finished (the state the backends index).
pub fn finished(entry: &HostEntry) -> bool {
    entry.state == HostState::Finished
}
#[cfg(test)]
mod times_read_back_exactly {
    /// A job's start is its listing cursor's key: read back from its JSON it
    /// must be the very number written (serde_json's `float_roundtrip`;
    /// without it about 1 in 8 such times parsed 1 ULP off, 1 in 40 to
    /// another microsecond, and a full last page announced a next page
    /// naming its own last job).
    #[test]
    fn every_time_reads_back_as_written() {
        let now = 1_795_687_540.950_496_f64;
        for k in 0..20_000 {
            let t = now - f64::from(k) / 1000.0 + f64::from(k) * 1.1e-7;
            let back: f64 = serde_json::from_str(&serde_json::to_string(&t).unwrap()).unwrap();
            assert_eq!(back.to_bits(), t.to_bits(), "{t}");
            assert_eq!(super::micros(back), super::micros(t));
        }
    }
}
