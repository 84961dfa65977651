//! The embedded job store: `var/lib/func/overlord.redb` below the root.
//!
//! redb lets one process open a file at a time, and many `func` processes
//! (and their background drivers) share this one, so every operation opens
//! the file, runs one transaction and closes it. Processes take turns with
//! a blocking lock on `overlord.redb.lock` beside it: one waiting is woken
//! the moment the holder closes the file (retrying with pauses instead
//! cost a warm batch's driver ~0.6 s per batch at 200 hosts, pauses the
//! other process did not need). redb's own lock stays the guarantee:
//! opening is retried with backoff while another process holds the file
//! (`DatabaseAlreadyOpen`), as from one without the turn. Writers batch
//! their changes into few transactions.
//!
//! Tables: `jobs` (id → JSON [`JobMeta`]), `hosts` ((id, host) → JSON
//! [`HostEntry`]), `started` ((start µs, id), for newest-first listing) and
//! `expiry` ((end µs, id)), so purging finished jobs older than `keep_jobs`
//! costs O(expired). A job and its hosts are purged in one transaction:
//! nobody ever sees half an expired job.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use redb::{Database, ReadOnlyDatabase, ReadableDatabase, ReadableTable, TableDefinition};
use serde::Serialize;

use super::api::{Cursor, JobStore};
use super::rules::{self, micros};
use super::types::{now, HostEntry, JobMeta, JobRecord, StoreError};

const JOBS: TableDefinition<'_, &str, &[u8]> = TableDefinition::new("jobs");
const HOSTS: TableDefinition<'_, (&str, &str), &[u8]> = TableDefinition::new("hosts");
const STARTED: TableDefinition<'_, (u64, &str), ()> = TableDefinition::new("started");
const EXPIRY: TableDefinition<'_, (u64, &str), ()> = TableDefinition::new("expiry");
const BATCHES: TableDefinition<'_, &str, &[u8]> = TableDefinition::new("batches");
/// `generation`: bumped by every write transaction ([`JobStore::generation`]).
const META: TableDefinition<'_, &str, u64> = TableDefinition::new("meta");
/// The last facts seen from each minion (`types::FactsRecord`, JSON).
const FACTS: TableDefinition<'_, &str, &[u8]> = TableDefinition::new("facts");

/// How long one operation waits for other processes to let go of the file.
const OPEN_PATIENCE: Duration = Duration::from_secs(60);

pub(super) fn db_err(e: impl Into<redb::Error>) -> StoreError {
    StoreError::Redb(e.into())
}

/// The store's file, open, and this process's turn at it (released after
/// the file is closed: `db` is dropped first).
pub(super) struct Opened<D> {
    db: D,
    _turn: Option<std::fs::File>,
}

impl<D> std::ops::Deref for Opened<D> {
    type Target = D;
    fn deref(&self) -> &D {
        &self.db
    }
}

/// The store's file open to read: read-only, or writable when it needed
/// repair (a writer died with it open).
pub(super) enum Reader {
    ReadOnly(ReadOnlyDatabase),
    Repaired(Database),
}

impl Reader {
    pub(super) fn begin_read(&self) -> Result<redb::ReadTransaction, redb::TransactionError> {
        match self {
            Reader::ReadOnly(db) => db.begin_read(),
            Reader::Repaired(db) => db.begin_read(),
        }
    }
}

/// The lock file beside the store's (`overlord.redb.lock`).
fn turn_path(store: &Path) -> PathBuf {
    let mut name = store.file_name().unwrap_or_default().to_os_string();
    name.push(".lock");
    store.with_file_name(name)
}

/// Threads of this process waiting for a turn now; past [`MOST_WAITING`]
/// an operation waits on redb's lock instead (a holder that never lets
/// go — a stopped `func` — must not pile up threads here).
static WAITING: AtomicUsize = AtomicUsize::new(0);
const MOST_WAITING: usize = 8;

/// Waits (up to `patience`) for this process's turn at the store: an
/// exclusive `flock` on `lock`, 0600, created if missing, never through a
/// symlink; released when the file closes. Uncontended, it is taken at
/// once; otherwise a thread blocks on it, so the wait ends as the holder
/// lets go. The turn only spares retries: `None` (the wait ran out, or no
/// turn could be had) leaves it to redb's lock, retried. A turn the
/// thread gets after the wait ran out is let go at once.
fn take_turn(lock: &Path, patience: Duration) -> Option<std::fs::File> {
    common::private::tighten(lock).ok()?;
    let file = common::private::options()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(lock)
        // A lock file we may not write (a read-only store) still takes a lock.
        .or_else(|_| common::private::options().read(true).open(lock))
        .ok()?;
    match file.try_lock() {
        Ok(()) => return Some(file),
        Err(std::fs::TryLockError::WouldBlock) => {}
        Err(std::fs::TryLockError::Error(_)) => return None,
    }
    if WAITING.fetch_add(1, Ordering::Relaxed) >= MOST_WAITING {
        WAITING.fetch_sub(1, Ordering::Relaxed);
        return None;
    }
    struct Waited;
    impl Drop for Waited {
        fn drop(&mut self) {
            WAITING.fetch_sub(1, Ordering::Relaxed);
        }
    }
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    let spawned = std::thread::Builder::new()
        .name("store-turn".into())
        .spawn(move || {
            let _counted = Waited;
            loop {
                match file.lock() {
                    // Nobody waiting any more: dropped here, let go.
                    Ok(()) => break drop(tx.send(file)),
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(_) => break,
                }
            }
        });
    if spawned.is_err() {
        WAITING.fetch_sub(1, Ordering::Relaxed);
        return None;
    }
    rx.recv_timeout(patience).ok()
}

/// The overlord store of one root.
#[derive(Debug, Clone)]
pub struct RedbStore {
    path: PathBuf,
    keep_secs: f64,
    /// The batch event log (one JSON line per event), if any.
    events: Option<PathBuf>,
}

impl RedbStore {
    pub fn new(path: PathBuf, keep_secs: f64) -> Self {
        Self {
            path,
            keep_secs,
            events: None,
        }
    }

    /// The same, logging batch events to `events` (`var/log/func/batch-events.log`).
    pub fn with_events(mut self, events: PathBuf) -> Self {
        self.events = Some(events);
        self
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Past its retention but not purged yet (purges run with writes):
    /// readers treat it as gone already.
    fn expired(&self, meta: &JobMeta) -> bool {
        meta.ended.is_some_and(|end| end + self.keep_secs < now())
    }

    /// Opens the file for reading, if there is one: reading never creates
    /// a store (nor its directory), so `func jobs list` on a root that has
    /// none writes nothing. An empty file (its creator died before the
    /// first commit) holds nothing either: the next write makes it a store.
    pub(super) fn open_existing(&self) -> Result<Option<Opened<Reader>>, StoreError> {
        match std::fs::symlink_metadata(&self.path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Ok(m) if m.is_file() && m.len() == 0 => Ok(None),
            _ => self.open_read().map(Some),
        }
    }

    /// Opens the file read-only: nothing is written, on opening or closing
    /// (a writable open writes its header and allocator state, with four
    /// fdatasyncs, even to read), and the file's times stay as they are,
    /// so readers do not look like changes to those watching it. A file
    /// left unclean by a writer that died is read through a writable open,
    /// which repairs it.
    fn open_read(&self) -> Result<Opened<Reader>, StoreError> {
        let read_only = self.open_with(false, |builder, file| {
            builder.open_read_only_with_backend(redb::backends::FileBackend::new(file)?)
        });
        match read_only {
            Ok(Opened { db, _turn }) => Ok(Opened {
                db: Reader::ReadOnly(db),
                _turn,
            }),
            Err(StoreError::Redb(redb::Error::RepairAborted)) => {
                let Opened { db, _turn } = self.open()?;
                Ok(Opened {
                    db: Reader::Repaired(db),
                    _turn,
                })
            }
            Err(e) => Err(e),
        }
    }

    /// Opens the file to write, creating it if needed.
    fn open(&self) -> Result<Opened<Database>, StoreError> {
        self.open_with(true, |builder, file| {
            builder.create_with_backend(redb::backends::FileBackend::new(file)?)
        })
    }

    /// Opens the file with `open` in this process's turn, waiting while
    /// another process has it open.
    fn open_with<D>(
        &self,
        write: bool,
        open: impl Fn(&redb::Builder, std::fs::File) -> Result<D, redb::DatabaseError>,
    ) -> Result<Opened<D>, StoreError> {
        let open_err = |e: std::io::Error| StoreError::Open {
            path: self.path.display().to_string(),
            message: e.to_string(),
        };
        if let Some(dir) = self.path.parent() {
            common::private::private_dir(dir).map_err(open_err)?;
        }
        common::private::tighten(&self.path).map_err(open_err)?;
        let begun = Instant::now();
        let turn = take_turn(&turn_path(&self.path), OPEN_PATIENCE);
        let mut builder = Database::builder();
        builder.set_cache_size(8 << 20);
        let mut pause = Duration::from_micros(500);
        loop {
            let file = common::private::options()
                .read(true)
                .write(write)
                .create(write)
                .truncate(false)
                .open(&self.path)
                .map_err(open_err)?;
            match open(&builder, file) {
                Ok(db) => return Ok(Opened { db, _turn: turn }),
                Err(redb::DatabaseError::DatabaseAlreadyOpen) if begun.elapsed() < OPEN_PATIENCE => {
                    // Jitter keeps many waiting processes from retrying in step.
                    let jitter = Duration::from_micros(u64::from(std::process::id() % 7) * 100);
                    std::thread::sleep(pause + jitter);
                    pause = (pause * 2).min(Duration::from_millis(20));
                }
                Err(redb::DatabaseError::DatabaseAlreadyOpen) => {
                    return Err(StoreError::Busy {
                        path: self.path.display().to_string(),
                        secs: OPEN_PATIENCE.as_secs(),
                    })
                }
                Err(redb::DatabaseError::RepairAborted) => {
                    return Err(StoreError::Redb(redb::Error::RepairAborted))
                }
                Err(e) => {
                    return Err(StoreError::Open {
                        path: self.path.display().to_string(),
                        message: e.to_string(),
                    })
                }
            }
        }
    }

    /// Runs `f` in one write transaction (committed durably) and purges
    /// expired jobs in the same transaction.
    pub(super) fn write<T>(
        &self,
        f: impl FnOnce(&redb::WriteTransaction) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let db = self.open()?;
        let txn = db.begin_write().map_err(db_err)?;
        let out = f(&txn)?;
        purge(&txn, now(), self.keep_secs)?;
        {
            let mut meta = txn.open_table(META).map_err(db_err)?;
            let generation = meta.get("generation").map_err(db_err)?.map_or(0, |g| g.value());
            meta.insert("generation", generation + 1).map_err(db_err)?;
        }
        txn.commit().map_err(db_err)?;
        Ok(out)
    }

    /// Writes whole jobs as they are (ids, hosts, states, results) in one
    /// transaction: history brought from elsewhere, or a store filled for
    /// a benchmark. A job whose id is already here is left alone; returns
    /// how many were written.
    pub fn import(&self, records: &[JobRecord]) -> Result<usize, StoreError> {
        self.write(|txn| {
            let mut jobs = txn.open_table(JOBS).map_err(db_err)?;
            let mut hosts = txn.open_table(HOSTS).map_err(db_err)?;
            let mut started = txn.open_table(STARTED).map_err(db_err)?;
            let mut expiry = txn.open_table(EXPIRY).map_err(db_err)?;
            let mut written = 0;
            for rec in records {
                let id = rec.meta.id.as_str();
                if jobs.get(id).map_err(db_err)?.is_some() {
                    continue;
                }
                jobs.insert(id, encode(&rec.meta)?.as_slice()).map_err(db_err)?;
                for (host, entry) in &rec.hosts {
                    hosts
                        .insert((id, host.as_str()), encode(entry)?.as_slice())
                        .map_err(db_err)?;
                }
                started
                    .insert((micros(rec.meta.started), id), ())
                    .map_err(db_err)?;
                if let Some(ended) = rec.meta.ended {
                    expiry.insert((micros(ended), id), ()).map_err(db_err)?;
                }
                written += 1;
            }
            Ok(written)
        })
    }
}

impl JobStore for RedbStore {
    fn write_tx(
        &self,
        f: &mut dyn FnMut(&mut dyn rules::Tx) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        self.write(|txn| f(&mut RedbTx(txn)))
    }
    fn load_many(&self, ids: &[String]) -> Result<Vec<JobRecord>, StoreError> {
        let Some(db) = self.open_existing()? else {
            return Ok(Vec::new());
        };
        let txn = db.begin_read().map_err(db_err)?;
        let (Some(jobs), Some(table)) = (read_table(&txn, JOBS)?, read_table(&txn, HOSTS)?) else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for id in ids {
            let id = id.as_str();
            let Some(meta) = jobs.get(id).map_err(db_err)? else {
                continue;
            };
            let meta: JobMeta = decode(meta.value())?;
            if self.expired(&meta) {
                continue;
            }
            let mut hosts = BTreeMap::new();
            for entry in table.range((id, "")..).map_err(db_err)? {
                let (key, value) = entry.map_err(db_err)?;
                let (job, host) = key.value();
                if job != id {
                    break;
                }
                hosts.insert(host.to_string(), decode(value.value())?);
            }
            out.push(JobRecord { meta, hosts });
        }
        Ok(out)
    }

    fn facts_of(&self, host: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let Some(db) = self.open_existing()? else {
            return Ok(None);
        };
        let txn = db.begin_read().map_err(db_err)?;
        let Some(facts) = read_table(&txn, FACTS)? else {
            return Ok(None);
        };
        let found = facts.get(host).map_err(db_err)?;
        Ok(found.map(|v| v.value().to_vec()))
    }

    fn batch(&self, id: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let Some(db) = self.open_existing()? else {
            return Ok(None);
        };
        let txn = db.begin_read().map_err(db_err)?;
        let Some(batches) = read_table(&txn, BATCHES)? else {
            return Ok(None);
        };
        let found = batches.get(id).map_err(db_err)?;
        Ok(found.map(|v| v.value().to_vec()))
    }

    fn list_page(&self, limit: usize, before: Option<&Cursor>) -> Result<Vec<JobMeta>, StoreError> {
        let Some(db) = self.open_existing()? else {
            return Ok(Vec::new());
        };
        let txn = db.begin_read().map_err(db_err)?;
        let (Some(started), Some(jobs)) = (read_table(&txn, STARTED)?, read_table(&txn, JOBS)?) else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        let range = match before {
            Some((at, id)) => started.range(..(micros(*at), id.as_str())).map_err(db_err)?,
            None => started.iter().map_err(db_err)?,
        };
        for entry in range.rev() {
            if out.len() >= limit {
                break;
            }
            let (key, _) = entry.map_err(db_err)?;
            if let Some(v) = jobs.get(key.value().1).map_err(db_err)? {
                let meta: JobMeta = decode(v.value())?;
                if !self.expired(&meta) {
                    out.push(meta);
                }
            }
        }
        Ok(out)
    }
    fn log_batch_event(&self, _id: &str, line: &serde_json::Value) -> Result<(), StoreError> {
        let Some(path) = &self.events else { return Ok(()) };
        let io = |source| StoreError::Io {
            path: path.clone(),
            source,
        };
        if let Some(dir) = path.parent() {
            common::private::private_dir(dir).map_err(io)?;
        }
        let mut f = common::private::append(path).map_err(io)?;
        // One write per line: appends of small lines do not interleave.
        std::io::Write::write_all(&mut f, format!("{line}\n").as_bytes()).map_err(io)
    }
    fn batch_events(&self, after: Option<u64>) -> Result<(Vec<serde_json::Value>, u64), StoreError> {
        use std::io::{BufRead, Seek};
        let Some(path) = &self.events else {
            return Ok((Vec::new(), 0));
        };
        let Ok(f) = std::fs::File::open(path) else {
            return Ok((Vec::new(), 0));
        };
        let len = f.metadata().map_or(0, |m| m.len());
        let Some(mut offset) = after else {
            return Ok((Vec::new(), len));
        };
        if offset > len {
            offset = 0; // rotated
        }
        let mut reader = std::io::BufReader::new(f);
        if reader.seek(std::io::SeekFrom::Start(offset)).is_err() {
            return Ok((Vec::new(), offset));
        }
        let mut out = Vec::new();
        let mut line = String::new();
        while matches!(reader.read_line(&mut line), Ok(n) if n > 0) && line.ends_with('\n') {
            offset += line.len() as u64;
            if let Ok(v) = serde_json::from_str(&line) {
                out.push(v);
            }
            line.clear();
        }
        Ok((out, offset))
    }
    fn generation(&self) -> Result<u64, StoreError> {
        let Some(db) = self.open_existing()? else {
            return Ok(0);
        };
        let txn = db.begin_read().map_err(db_err)?;
        let Some(meta) = read_table(&txn, META)? else {
            return Ok(0);
        };
        Ok(meta.get("generation").map_err(db_err)?.map_or(0, |g| g.value()))
    }
}

/// The storage primitives of the store's rules (`rules.rs`) in one redb
/// write transaction.
struct RedbTx<'a>(&'a redb::WriteTransaction);

impl rules::Tx for RedbTx<'_> {
    fn insert_job(&mut self, meta: &JobMeta) -> Result<bool, StoreError> {
        let mut jobs = self.0.open_table(JOBS).map_err(db_err)?;
        if jobs.get(meta.id.as_str()).map_err(db_err)?.is_some() {
            return Ok(false);
        }
        jobs.insert(meta.id.as_str(), encode(meta)?.as_slice())
            .map_err(db_err)?;
        self.0
            .open_table(STARTED)
            .map_err(db_err)?
            .insert((micros(meta.started), meta.id.as_str()), ())
            .map_err(db_err)?;
        Ok(true)
    }

    fn insert_hosts(&mut self, id: &str, hosts: &[String], entry: &HostEntry) -> Result<(), StoreError> {
        let mut table = self.0.open_table(HOSTS).map_err(db_err)?;
        let bytes = encode(entry)?;
        for host in hosts {
            table
                .insert((id, host.as_str()), bytes.as_slice())
                .map_err(db_err)?;
        }
        Ok(())
    }

    fn job_for_update(&mut self, id: &str) -> Result<Option<JobMeta>, StoreError> {
        // A redb write transaction holds the whole file.
        stored_meta(&self.0.open_table(JOBS).map_err(db_err)?, id)
    }

    fn put_job(&mut self, meta: &JobMeta, newly_ended: bool) -> Result<(), StoreError> {
        let id = meta.id.as_str();
        self.0
            .open_table(JOBS)
            .map_err(db_err)?
            .insert(id, encode(meta)?.as_slice())
            .map_err(db_err)?;
        if let (true, Some(ended)) = (newly_ended, meta.ended) {
            self.0
                .open_table(EXPIRY)
                .map_err(db_err)?
                .insert((micros(ended), id), ())
                .map_err(db_err)?;
        }
        Ok(())
    }

    fn hosts_of(&mut self, id: &str, names: &[&str]) -> Result<BTreeMap<String, HostEntry>, StoreError> {
        let table = self.0.open_table(HOSTS).map_err(db_err)?;
        let mut out = BTreeMap::new();
        for name in names {
            if let Some(v) = table.get((id, *name)).map_err(db_err)? {
                out.insert(name.to_string(), decode(v.value())?);
            }
        }
        Ok(out)
    }

    fn put_hosts(&mut self, id: &str, entries: &BTreeMap<&str, HostEntry>) -> Result<(), StoreError> {
        let mut table = self.0.open_table(HOSTS).map_err(db_err)?;
        for (host, entry) in entries {
            table
                .insert((id, *host), encode(entry)?.as_slice())
                .map_err(db_err)?;
        }
        Ok(())
    }

    fn any_unfinished(&mut self, id: &str) -> Result<bool, StoreError> {
        let table = self.0.open_table(HOSTS).map_err(db_err)?;
        for entry in table.range((id, "")..).map_err(db_err)? {
            let (key, value) = entry.map_err(db_err)?;
            if key.value().0 != id {
                break;
            }
            if !rules::finished(&decode::<HostEntry>(value.value())?) {
                return Ok(true);
            }
        }
        Ok(false)
    }

    fn batch_for_update(&mut self, id: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let batches = self.0.open_table(BATCHES).map_err(db_err)?;
        let found = batches.get(id).map_err(db_err)?;
        Ok(found.map(|v| v.value().to_vec()))
    }

    fn put_batch(&mut self, id: &str, record: &[u8]) -> Result<(), StoreError> {
        self.0
            .open_table(BATCHES)
            .map_err(db_err)?
            .insert(id, record)
            .map_err(db_err)?;
        Ok(())
    }

    fn facts_for_update(&mut self, host: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let facts = self.0.open_table(FACTS).map_err(db_err)?;
        let found = facts.get(host).map_err(db_err)?;
        Ok(found.map(|v| v.value().to_vec()))
    }

    fn put_facts(&mut self, host: &str, record: &[u8]) -> Result<(), StoreError> {
        self.0
            .open_table(FACTS)
            .map_err(db_err)?
            .insert(host, record)
            .map_err(db_err)?;
        Ok(())
    }
}

/// A table for reading; `None` while nothing was ever written to it (a
/// fresh store file).
pub(super) fn read_table<K: redb::Key + 'static, V: redb::Value + 'static>(
    txn: &redb::ReadTransaction,
    def: TableDefinition<'_, K, V>,
) -> Result<Option<redb::ReadOnlyTable<K, V>>, StoreError> {
    match txn.open_table(def) {
        Ok(t) => Ok(Some(t)),
        Err(redb::TableError::TableDoesNotExist(_)) => Ok(None),
        Err(e) => Err(db_err(e)),
    }
}

/// Removes jobs (with their hosts and index entries) that finished more
/// than `keep_secs` before `now`.
fn purge(txn: &redb::WriteTransaction, now: f64, keep_secs: f64) -> Result<usize, StoreError> {
    let mut expiry = txn.open_table(EXPIRY).map_err(db_err)?;
    let mut expired = Vec::new();
    for entry in expiry
        .range::<(u64, &str)>(..(micros(now - keep_secs), ""))
        .map_err(db_err)?
    {
        let (key, _) = entry.map_err(db_err)?;
        let (at, id) = key.value();
        expired.push((at, id.to_string()));
    }
    if expired.is_empty() {
        return Ok(0);
    }
    let mut jobs = txn.open_table(JOBS).map_err(db_err)?;
    let mut hosts = txn.open_table(HOSTS).map_err(db_err)?;
    let mut started = txn.open_table(STARTED).map_err(db_err)?;
    for (at, id) in &expired {
        expiry.remove((*at, id.as_str())).map_err(db_err)?;
        if let Some(meta) = jobs.remove(id.as_str()).map_err(db_err)? {
            let meta: JobMeta = decode(meta.value())?;
            started
                .remove((micros(meta.started), id.as_str()))
                .map_err(db_err)?;
        }
        txn.open_table(BATCHES)
            .map_err(db_err)?
            .remove(id.as_str())
            .map_err(db_err)?;
        let id_str = id.as_str();
        hosts
            .retain_in((id_str, "")..=(id_str, "\u{10FFFF}"), |key, _| key.0 != id_str)
            .map_err(db_err)?;
    }
    Ok(expired.len())
}

fn encode<T: Serialize>(value: &T) -> Result<Vec<u8>, StoreError> {
    Ok(serde_json::to_vec(value)?)
}

/// Job `id`'s meta as a write transaction sees it.
fn stored_meta(jobs: &redb::Table<'_, &str, &[u8]>, id: &str) -> Result<Option<JobMeta>, StoreError> {
    jobs.get(id)
        .map_err(db_err)?
        .map(|v| decode::<JobMeta>(v.value()))
        .transpose()
}

fn decode<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, StoreError> {
    Ok(serde_json::from_slice(bytes)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{job_id, HostState, HostUpdate};

    #[test]
    fn pages_newest_first_with_a_cursor_and_a_generation_that_grows() {
        let dir = tempfile::tempdir().unwrap();
        let store = RedbStore::new(dir.path().join("o.redb"), 3600.0);
        let g0 = JobStore::generation(&store).unwrap();
        let ids: Vec<String> = (0..5)
            .map(|i| {
                store
                    .create(meta("*", 1000.0 + f64::from(i)), &["h".into()])
                    .unwrap()
            })
            .collect();
        assert!(
            JobStore::generation(&store).unwrap() >= g0 + 5,
            "every write is a change"
        );
        let first = store.list_page(2, None).unwrap();
        assert_eq!(
            first.iter().map(|m| m.id.clone()).collect::<Vec<_>>(),
            [ids[4].clone(), ids[3].clone()]
        );
        let cursor = (first[1].started, first[1].id.clone());
        let next = store.list_page(10, Some(&cursor)).unwrap();
        assert_eq!(
            next.iter().map(|m| m.id.clone()).collect::<Vec<_>>(),
            [ids[2].clone(), ids[1].clone(), ids[0].clone()]
        );
        assert_eq!(store.list_page(usize::MAX, None).unwrap().len(), 5);
    }

    pub fn meta(spec: &str, started: f64) -> JobMeta {
        JobMeta {
            id: String::new(),
            spec: spec.into(),
            function: "test.sleep".into(),
            args: vec!["1".into()],
            user: "root".into(),
            started,
            ended: None,
            dispatched: false,
            hosts: 0,
            timeout_secs: 5.0,
            forks: 1,
            driver: None,
            driver_host: None,
            batch: false,
            typed_args: None,
            rights: None,
            seal: None,
            delegate: false,
            schedule: None,
            rerun_of: None,
            notified: Vec::new(),
        }
    }

    #[test]
    fn ids_follow_func_and_stay_unique() {
        assert_eq!(
            job_id("web-*", "my-mod.do-it", 1_500_000),
            "web_*-my_mod-do_it-1.5"
        );
        let dir = tempfile::tempdir().unwrap();
        let store = RedbStore::new(dir.path().join("o.redb"), 100.0);
        let a = store.create(meta("*", 7.25), &["m1".into()]).unwrap();
        let b = store.create(meta("*", 7.25), &["m1".into()]).unwrap();
        assert_eq!(a, "*-test-sleep-7.25");
        assert_eq!(b, "*-test-sleep-7.250001");
        let listed: Vec<String> = store
            .list_page(usize::MAX, None)
            .unwrap()
            .into_iter()
            .map(|m| m.id)
            .collect();
        assert_eq!(listed, vec![b, a], "newest first");
    }

    #[test]
    fn hosts_finish_once_and_the_job_ends_when_all_have() {
        let dir = tempfile::tempdir().unwrap();
        let store = RedbStore::new(dir.path().join("o.redb"), 3600.0);
        let id = store
            .create(meta("m*", now()), &["m1".into(), "m2".into()])
            .unwrap();
        let dispatched = |h: &str| {
            (
                h.to_string(),
                HostUpdate::Dispatched {
                    minion_job: format!("{h}-minion"),
                },
            )
        };
        let finished = |h: &str, r: &str| (h.to_string(), HostUpdate::Finished { result_xml: r.into() });
        assert!(!store
            .update(&id, &[dispatched("m1"), finished("m2", "err")], true)
            .unwrap());
        assert!(!store.update(&id, &[finished("m2", "other")], false).unwrap());
        let job = store.load(&id).unwrap().unwrap();
        assert_eq!(
            job.hosts["m2"].result_xml.as_deref(),
            Some("err"),
            "a finished host never changes"
        );
        assert_eq!(job.hosts["m1"].state, HostState::Dispatched);
        assert!(store.update(&id, &[finished("m1", "ok")], false).unwrap());
        assert!(store.load(&id).unwrap().unwrap().meta.ended.is_some());
        assert!(store.load("nope").unwrap().is_none());
    }

    #[test]
    fn finished_jobs_expire_whole_and_unfinished_never() {
        let dir = tempfile::tempdir().unwrap();
        let store = RedbStore::new(dir.path().join("o.redb"), 0.0);
        let old = store.create(meta("a", 1.0), &["m1".into()]).unwrap();
        let running = store.create(meta("b", 1.0), &["m1".into()]).unwrap();
        let fin = (
            "m1".to_string(),
            HostUpdate::Finished {
                result_xml: "r".into(),
            },
        );
        assert!(store.update(&old, &[fin], true).unwrap());
        // The next write purges it (keep 0 s): metadata, hosts and index.
        store.update(&running, &[], false).unwrap();
        assert!(store.load(&old).unwrap().is_none());
        assert!(store.load(&running).unwrap().is_some());
        assert_eq!(store.list_page(usize::MAX, None).unwrap().len(), 1);
    }

    /// A store written by the first release of this format: later versions
    /// must keep reading it.
    #[test]
    fn reads_the_v1_store_fixture() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("o.redb");
        std::fs::write(&path, include_bytes!("../../tests/fixtures/overlord-v1.redb")).unwrap();
        let store = RedbStore::new(path, 1e12);
        let id = "*-test-add-1795262719.758776";
        let job = store.load(id).unwrap().expect("job in the fixture");
        assert_eq!(job.meta.function, "test.add");
        assert_eq!(job.meta.args, vec!["2".to_string(), "3".to_string()]);
        assert!(job.meta.ended.is_some() && job.meta.dispatched);
        assert_eq!(job.hosts.len(), 2);
        for entry in job.hosts.values() {
            assert_eq!(entry.state, HostState::Finished);
            let value = crate::test_decode(entry.result_xml.as_deref().unwrap());
            assert_eq!(value, common::Value::Integer(5));
        }
        assert_eq!(store.list_page(usize::MAX, None).unwrap()[0].id, id);
        // Its user was recorded bare ("root"): read as the command line's.
        assert_eq!(job.meta.user, "cli:root");
        let backend = super::super::Store::Redb(store);
        assert_eq!(backend.newest_of("cli:root").unwrap().as_deref(), Some(id));
    }

    /// Reading opens the file read-only: not a byte of it, nor its time,
    /// changes (a writable open rewrote its header and allocator state,
    /// with fdatasyncs, and every reader looked like a change to those
    /// watching the file).
    #[test]
    fn reading_writes_nothing_to_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("o.redb");
        let store = RedbStore::new(path.clone(), 3600.0);
        let id = store.create(meta("x", now()), &["m1".into()]).unwrap();
        let before = (
            std::fs::read(&path).unwrap(),
            std::fs::metadata(&path).unwrap().modified().unwrap(),
        );
        for _ in 0..3 {
            assert!(store.load(&id).unwrap().is_some());
            assert_eq!(store.load_many(std::slice::from_ref(&id)).unwrap().len(), 1);
            assert_eq!(store.list_page(10, None).unwrap().len(), 1);
            JobStore::generation(&store).unwrap();
            assert!(store.batch(&id).unwrap().is_none());
        }
        let after = (
            std::fs::read(&path).unwrap(),
            std::fs::metadata(&path).unwrap().modified().unwrap(),
        );
        assert!(before == after, "a read changed the store's file");
        // An empty file (a creator that died before its first commit) reads as no store.
        let empty = RedbStore::new(dir.path().join("empty.redb"), 3600.0);
        std::fs::write(empty.path(), b"").unwrap();
        assert!(empty.list_page(10, None).unwrap().is_empty());
        assert!(
            empty.create(meta("x", now()), &["m1".into()]).is_ok(),
            "the next write makes it a store"
        );
        assert_eq!(empty.list_page(10, None).unwrap().len(), 1);
        // Writing still works after reads, and is seen.
        store
            .update(
                &id,
                &[(
                    "m1".into(),
                    HostUpdate::Finished {
                        result_xml: "<x/>".into(),
                    },
                )],
                false,
            )
            .unwrap();
        assert_eq!(
            store.load(&id).unwrap().unwrap().hosts["m1"].state,
            HostState::Finished
        );
    }

    const DIE_WRITING: &str = "FUNC_STORE_TEST_DIE_WRITING";

    /// A writer that died with the file open leaves it needing repair,
    /// which a read-only open refuses: the read goes through a writable
    /// open, which repairs it (and leaves it clean for the next reader).
    #[test]
    fn a_store_left_by_a_writer_that_died_is_repaired_and_read() {
        if let Some(path) = std::env::var_os(DIE_WRITING) {
            // The child: records a job, then dies holding the file open.
            let path = PathBuf::from(path);
            RedbStore::new(path.clone(), 3600.0)
                .create(meta("x", now()), &["m1".into()])
                .unwrap();
            let _open = Database::create(&path).unwrap();
            std::process::abort();
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("o.redb");
        let status = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "redb::tests::a_store_left_by_a_writer_that_died_is_repaired_and_read",
            ])
            .env(DIE_WRITING, &path)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(!status.success(), "the child was to die holding the file");
        // The file needs repair: a plain read-only open is refused.
        let refused = Database::builder().open_read_only(&path);
        assert!(
            matches!(refused, Err(redb::DatabaseError::RepairAborted)),
            "not left unclean"
        );
        drop(refused);
        let store = RedbStore::new(path.clone(), 3600.0);
        let jobs = store.list_page(10, None).unwrap();
        assert_eq!(jobs.len(), 1);
        assert!(store.load(&jobs[0].id).unwrap().is_some());
        assert!(Database::builder().open_read_only(&path).is_ok(), "repaired");
    }

    /// Operations wait for their turn while another holds it, but a holder
    /// that does not let go piles up at most MOST_WAITING waiting threads:
    /// the next operations go on redb's lock (free here), and the waiting
    /// ones finish once the holder lets go.
    #[test]
    fn waiting_for_a_turn_is_bounded_and_ends_when_the_holder_lets_go() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("o.redb");
        let store = RedbStore::new(path.clone(), 3600.0);
        store.create(meta("x", now()), &["m1".into()]).unwrap();
        let holder = std::fs::File::open(turn_path(&path)).unwrap();
        holder.lock().unwrap();
        let waiting: Vec<_> = (0..MOST_WAITING)
            .map(|_| {
                let store = store.clone();
                std::thread::spawn(move || store.create(meta("x", now()), &["m1".into()]))
            })
            .collect();
        let deadline = Instant::now() + Duration::from_secs(60);
        while WAITING.load(Ordering::Relaxed) < MOST_WAITING {
            assert!(
                Instant::now() < deadline,
                "the operations never waited for the turn"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        // One more goes on without a turn (no ninth thread waits), while the
        // holder still holds it.
        let more = std::thread::spawn({
            let store = store.clone();
            move || store.create(meta("y", now()), &["m1".into()])
        });
        while !more.is_finished() {
            assert!(
                WAITING.load(Ordering::Relaxed) <= MOST_WAITING,
                "a ninth thread waits"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(more.join().unwrap().is_ok());
        assert_eq!(store.list_page(100, None).unwrap().len(), 2);
        drop(holder);
        for w in waiting {
            assert!(w.join().unwrap().is_ok());
        }
        assert_eq!(store.list_page(100, None).unwrap().len(), 2 + MOST_WAITING);
    }

    #[test]
    fn processes_share_the_file_by_waiting_for_each_other() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("o.redb");
        let store = RedbStore::new(path.clone(), 3600.0);
        let holder = Database::create(&path).unwrap();
        let waiting = std::thread::spawn({
            let store = store.clone();
            move || store.create(meta("x", 5.0), &["m1".into()])
        });
        std::thread::sleep(Duration::from_millis(50));
        drop(holder);
        assert!(waiting.join().unwrap().is_ok());
    }
}
