//! The minion's job status store: one redb file (`var/lib/func/minion.redb`)
//! that only the daemon opens (redb allows one process per file; job
//! processes hand their results back through spool files instead).
//!
//! Tables: `jobs` (id → JSON [`JobRecord`]), `running` (ids of unfinished
//! jobs, so liveness checks never scan finished ones), `expiry`
//! ((completion time in µs, id) → ()), so purging costs O(expired): a range
//! delete from the start of the index up to `now - keep_jobs`; and
//! `requests` (a signed request's identity → the job it started), kept and
//! purged with its job: a signed request runs at most once here.

use std::path::Path;

use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};
use serde::{Deserialize, Serialize};

const JOBS: TableDefinition<'_, &str, &[u8]> = TableDefinition::new("jobs");
const RUNNING: TableDefinition<'_, &str, ()> = TableDefinition::new("running");
const EXPIRY: TableDefinition<'_, (u64, &str), ()> = TableDefinition::new("expiry");
const REQUESTS: TableDefinition<'_, &str, &str> = TableDefinition::new("requests");

/// One job as the minion knows it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct JobRecord {
    pub id: String,
    /// `module.method` as called (without `async.`).
    pub method: String,
    /// The encoded `<methodCall>` (method and arguments).
    pub call_xml: String,
    /// Who asked (`<cn>-<subject hash>`): the job belongs to it.
    pub caller: String,
    /// Whether the caller was the overlord (for the ACL inside the job).
    #[serde(default)]
    pub overlord: bool,
    /// The job process (leader of its own process group); 0 until known.
    pub pid: u32,
    /// The job process's start time (clock ticks after boot, from
    /// `/proc/PID/stat`), so a reused pid is never mistaken for the job.
    pub pid_start: u64,
    /// Epoch seconds.
    pub started: f64,
    pub ended: Option<f64>,
    /// The encoded `<methodResponse>` once finished.
    pub result_xml: Option<String>,
    /// Set when a `jobs.*_job` call signalled the job: what and by whom.
    #[serde(default)]
    pub signalled_by: Option<String>,
    /// The signed request that started it (its identity, as the overlord
    /// sent it): a second call with the same identity is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<String>,
}

impl JobRecord {
    pub fn finished(&self) -> bool {
        self.ended.is_some()
    }
}

/// A store failure.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("job store {path}: {message}")]
    Open { path: String, message: String },
    /// The file is damaged (bad header, bad checksums, truncated, records
    /// that do not decode): moved aside by [`Store::open_or_replace`].
    #[error("job store {path} is corrupt: {message}")]
    Corrupt { path: String, message: String },
    /// A read or write of the file failed (a full disk): the store is
    /// reopened, so once the cause is gone it works again.
    #[error("job store I/O error: {0}")]
    Io(String),
    #[error("job store: {0}")]
    Db(String),
}

/// Classifies a redb error: I/O (reopen and carry on), corruption, other.
fn db_err(e: impl Into<redb::Error>) -> StoreError {
    match e.into() {
        redb::Error::Io(io)
            if matches!(
                io.kind(),
                std::io::ErrorKind::UnexpectedEof | std::io::ErrorKind::InvalidData
            ) =>
        {
            StoreError::Db(format!("corrupt: {io}"))
        }
        redb::Error::Io(io) => StoreError::Io(io.to_string()),
        redb::Error::PreviousIo => StoreError::Io("a previous write failed".into()),
        redb::Error::Corrupted(m) => StoreError::Db(format!("corrupt: {m}")),
        other => StoreError::Db(other.to_string()),
    }
}

fn json_err(e: impl std::fmt::Display) -> StoreError {
    StoreError::Db(e.to_string())
}

/// What one caller's jobs take: running jobs, and bytes kept (requests
/// and results), counted in memory from the records (rebuilt at open).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    pub running: u64,
    pub bytes: u64,
}

/// Whose usage: (caller key, whether it was the overlord).
type Owner = (String, bool);

fn owner(r: &JobRecord) -> Owner {
    (r.caller.clone(), r.overlord)
}

/// Bytes a record keeps for its caller.
pub fn kept_bytes(r: &JobRecord) -> u64 {
    (r.call_xml.len() + r.result_xml.as_ref().map_or(0, String::len)) as u64
}

/// The open status store.
pub struct Store {
    path: std::path::PathBuf,
    /// Replaced by a fresh handle after an I/O error (redb refuses every
    /// later transaction of a handle that saw one).
    db: std::sync::RwLock<Database>,
    usage: std::sync::Mutex<std::collections::HashMap<Owner, Usage>>,
    /// Whether the last reopen failed (logged once per outage).
    failing: std::sync::atomic::AtomicBool,
}

/// Completion times are kept in µs.
fn micros(epoch: f64) -> u64 {
    (epoch.max(0.0) * 1e6) as u64
}

impl Store {
    /// Opens (creating) the store at `path`.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        let db = open_db(path)?;
        let store = Self {
            path: path.to_path_buf(),
            db: std::sync::RwLock::new(db),
            usage: Default::default(),
            failing: Default::default(),
        };
        let corrupt = |e: StoreError| match e {
            StoreError::Db(message) => StoreError::Corrupt {
                path: path.display().to_string(),
                message,
            },
            other => other,
        };
        for record in store.all().map_err(corrupt)? {
            store.adjust(&owner(&record), |u| {
                u.bytes += kept_bytes(&record);
                u.running += u64::from(!record.finished());
            });
        }
        Ok(store)
    }

    /// [`Store::open`]; a corrupt file is moved aside
    /// (`minion.redb.corrupt-<unix time>`) and a fresh store started, so
    /// funcd keeps serving. Returns the store and where the bad file went.
    pub fn open_or_replace(path: &Path) -> Result<(Self, Option<std::path::PathBuf>), StoreError> {
        match Self::open(path) {
            Err(StoreError::Corrupt { message, .. }) => {
                let stamp = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_secs())
                    .unwrap_or(0);
                let aside = path.with_file_name(format!(
                    "{}.corrupt-{stamp}",
                    path.file_name().map(|n| n.to_string_lossy()).unwrap_or_default()
                ));
                std::fs::rename(path, &aside).map_err(|e| StoreError::Open {
                    path: path.display().to_string(),
                    message: format!("corrupt ({message}) and cannot be moved aside: {e}"),
                })?;
                tracing::error!(store = %path.display(), moved_to = %aside.display(), error = %message, "job store is corrupt: moved aside, starting a fresh one (results still in the spool are taken in again)");
                Ok((Self::open(path)?, Some(aside)))
            }
            other => other.map(|s| (s, None)),
        }
    }

    /// Runs `f` on the database; after an I/O error the handle is replaced
    /// by a fresh one (the error is still this call's answer), so a store
    /// that hit a full disk works again once there is room.
    fn run<T>(&self, f: impl FnOnce(&Database) -> Result<T, StoreError>) -> Result<T, StoreError> {
        let out = {
            let db = self.db.read().unwrap_or_else(|p| p.into_inner());
            f(&db)
        };
        if let Err(StoreError::Io(why)) = &out {
            self.reopen(why);
        }
        out
    }

    fn reopen(&self, why: &str) {
        use std::sync::atomic::Ordering;
        let mut db = self.db.write().unwrap_or_else(|p| p.into_inner());
        // The old handle holds the file's lock: close it first.
        let placeholder =
            match Database::builder().create_with_backend(redb::backends::InMemoryBackend::new()) {
                Ok(p) => p,
                Err(_) => return,
            };
        drop(std::mem::replace(&mut *db, placeholder));
        match open_db(&self.path) {
            Ok(fresh) => {
                *db = fresh;
                if self.failing.swap(false, Ordering::Relaxed) {
                    tracing::info!(store = %self.path.display(), "job store reopened");
                }
            }
            Err(e) => {
                if !self.failing.swap(true, Ordering::Relaxed) {
                    tracing::error!(store = %self.path.display(), error = %why, reopen = %e, "job store I/O error; retrying on every use until it works");
                }
            }
        }
    }

    /// What `caller` (key, overlord) keeps now.
    pub fn usage(&self, caller: &str, overlord: bool) -> Usage {
        let usage = self.usage.lock().unwrap_or_else(|p| p.into_inner());
        usage
            .get(&(caller.to_string(), overlord))
            .copied()
            .unwrap_or_default()
    }

    fn adjust(&self, who: &Owner, change: impl FnOnce(&mut Usage)) {
        let mut usage = self.usage.lock().unwrap_or_else(|p| p.into_inner());
        let entry = usage.entry(who.clone()).or_default();
        change(entry);
        if *entry == Usage::default() {
            usage.remove(who);
        }
    }

    /// Takes the records a purge removed off their callers' usage.
    fn forget(&self, purged: &[JobRecord]) {
        for r in purged {
            self.adjust(&owner(r), |u| u.bytes = u.bytes.saturating_sub(kept_bytes(r)));
        }
    }

    /// Records a new running job. Returns false (and changes nothing) when
    /// the id is taken.
    pub fn insert_new(&self, record: &JobRecord) -> Result<bool, StoreError> {
        let inserted = self.run(|db| {
            let txn = db.begin_write().map_err(db_err)?;
            {
                let mut jobs = txn.open_table(JOBS).map_err(db_err)?;
                if jobs.get(record.id.as_str()).map_err(db_err)?.is_some() {
                    return Ok(false);
                }
                jobs.insert(record.id.as_str(), encode(record)?.as_slice())
                    .map_err(db_err)?;
                txn.open_table(RUNNING)
                    .map_err(db_err)?
                    .insert(record.id.as_str(), ())
                    .map_err(db_err)?;
                if let Some(request) = &record.request {
                    txn.open_table(REQUESTS)
                        .map_err(db_err)?
                        .insert(request.as_str(), record.id.as_str())
                        .map_err(db_err)?;
                }
            }
            txn.commit().map_err(db_err)?;
            Ok(true)
        })?;
        if !inserted {
            return Ok(false);
        }
        self.adjust(&owner(record), |u| {
            u.running += 1;
            u.bytes += kept_bytes(record);
        });
        Ok(true)
    }

    /// The job signed request `request` started here, while it is kept.
    pub fn ran_request(&self, request: &str) -> Result<Option<String>, StoreError> {
        self.run(|db| {
            let txn = db.begin_read().map_err(db_err)?;
            let table = match txn.open_table(REQUESTS) {
                Ok(t) => t,
                Err(redb::TableError::TableDoesNotExist(_)) => return Ok(None),
                Err(e) => return Err(db_err(e)),
            };
            let found = table.get(request).map_err(db_err)?;
            Ok(found.map(|v| v.value().to_string()))
        })
    }

    pub fn get(&self, id: &str) -> Result<Option<JobRecord>, StoreError> {
        self.run(|db| {
            let txn = db.begin_read().map_err(db_err)?;
            let jobs = txn.open_table(JOBS).map_err(db_err)?;
            let found = jobs.get(id).map_err(db_err)?;
            found.map(|v| decode(v.value())).transpose()
        })
    }

    /// Changes a running job's record with `change`; finished jobs stay as they are.
    pub fn update_running(&self, id: &str, change: impl FnOnce(&mut JobRecord)) -> Result<(), StoreError> {
        self.change_running(id, change, true)
    }

    /// Records a running job's pid and start time without an fsync of its
    /// own: the job's spool `.pid` file holds them too, and start-up takes
    /// them from there for a record whose pid was lost (the commit becomes
    /// durable with the next durable one, at the latest the job's end).
    pub fn record_pid(&self, id: &str, pid: u32, start: u64) -> Result<(), StoreError> {
        self.change_running(id, |r| (r.pid, r.pid_start) = (pid, start), false)
    }

    fn change_running(
        &self,
        id: &str,
        change: impl FnOnce(&mut JobRecord),
        durable: bool,
    ) -> Result<(), StoreError> {
        self.run(|db| {
            let mut txn = db.begin_write().map_err(db_err)?;
            if !durable {
                txn.set_durability(redb::Durability::None).map_err(db_err)?;
            }
            {
                let mut jobs = txn.open_table(JOBS).map_err(db_err)?;
                let current = jobs
                    .get(id)
                    .map_err(db_err)?
                    .map(|v| decode(v.value()))
                    .transpose()?;
                if let Some(mut record) = current.filter(|r| !r.finished()) {
                    change(&mut record);
                    jobs.insert(id, encode(&record)?.as_slice()).map_err(db_err)?;
                }
            }
            txn.commit().map_err(db_err)
        })
    }

    /// Records a final state (idempotent: a job finished once stays as it
    /// was). `record` may be unknown to the store (its daemon crashed before
    /// recording it); it is then added as finished. Records completed more
    /// than `keep_secs` before `now` are purged in the same transaction.
    pub fn finish(&self, record: &JobRecord, now: f64, keep_secs: f64) -> Result<(), StoreError> {
        let ended = record.ended.unwrap_or(now);
        let (change, purged) = self.run(|db| {
            let txn = db.begin_write().map_err(db_err)?;
            let mut change: Option<(Option<JobRecord>, JobRecord)> = None;
            let purged = {
                let mut jobs = txn.open_table(JOBS).map_err(db_err)?;
                let current = jobs
                    .get(record.id.as_str())
                    .map_err(db_err)?
                    .map(|v| decode(v.value()))
                    .transpose()?;
                if !current.as_ref().is_some_and(JobRecord::finished) {
                    let mut done = record.clone();
                    done.ended = Some(ended);
                    if let Some(current) = &current {
                        done.signalled_by = done.signalled_by.or(current.signalled_by.clone());
                        if done.pid == 0 {
                            (done.pid, done.pid_start) = (current.pid, current.pid_start);
                        }
                    }
                    jobs.insert(done.id.as_str(), encode(&done)?.as_slice())
                        .map_err(db_err)?;
                    txn.open_table(RUNNING)
                        .map_err(db_err)?
                        .remove(done.id.as_str())
                        .map_err(db_err)?;
                    txn.open_table(EXPIRY)
                        .map_err(db_err)?
                        .insert((micros(ended), done.id.as_str()), ())
                        .map_err(db_err)?;
                    change = Some((current, done));
                }
                purge(&mut jobs, &txn, now, keep_secs)?
            };
            txn.commit().map_err(db_err)?;
            Ok((change, purged))
        })?;
        if let Some((before, done)) = change {
            if let Some(before) = &before {
                self.adjust(&owner(before), |u| {
                    u.running = u.running.saturating_sub(1);
                    u.bytes = u.bytes.saturating_sub(kept_bytes(before));
                });
            }
            self.adjust(&owner(&done), |u| u.bytes += kept_bytes(&done));
        }
        self.forget(&purged);
        Ok(())
    }

    /// Drops records completed more than `keep_secs` before `now`. Looks
    /// first (a read, no fsync), so an idle minion's sweep writes nothing.
    pub fn purge(&self, now: f64, keep_secs: f64) -> Result<usize, StoreError> {
        let purged = self.run(|db| {
            {
                let read = db.begin_read().map_err(db_err)?;
                let expiry = read.open_table(EXPIRY).map_err(db_err)?;
                let oldest = expiry.first().map_err(db_err)?;
                if oldest.is_none_or(|(key, _)| key.value().0 >= micros(now - keep_secs)) {
                    return Ok(Vec::new());
                }
            }
            let txn = db.begin_write().map_err(db_err)?;
            let purged = {
                let mut jobs = txn.open_table(JOBS).map_err(db_err)?;
                purge(&mut jobs, &txn, now, keep_secs)?
            };
            txn.commit().map_err(db_err)?;
            Ok(purged)
        })?;
        self.forget(&purged);
        Ok(purged.len())
    }

    /// When the oldest finished record expires (its completion plus
    /// `keep_secs`), if any record is finished: when a purge is next due.
    pub fn next_expiry(&self, keep_secs: f64) -> Result<Option<f64>, StoreError> {
        self.run(|db| {
            let read = db.begin_read().map_err(db_err)?;
            let expiry = read.open_table(EXPIRY).map_err(db_err)?;
            let oldest = expiry.first().map_err(db_err)?;
            Ok(oldest.map(|(key, _)| key.value().0 as f64 / 1e6 + keep_secs))
        })
    }

    /// Jobs not finished yet.
    pub fn running(&self) -> Result<Vec<JobRecord>, StoreError> {
        self.run(|db| {
            let txn = db.begin_read().map_err(db_err)?;
            let running = txn.open_table(RUNNING).map_err(db_err)?;
            let jobs = txn.open_table(JOBS).map_err(db_err)?;
            let mut out = Vec::new();
            for entry in running.iter().map_err(db_err)? {
                let (id, _) = entry.map_err(db_err)?;
                if let Some(v) = jobs.get(id.value()).map_err(db_err)? {
                    out.push(decode(v.value())?);
                }
            }
            Ok(out)
        })
    }

    /// Every job the store holds.
    pub fn all(&self) -> Result<Vec<JobRecord>, StoreError> {
        self.run(|db| {
            let txn = db.begin_read().map_err(db_err)?;
            let jobs = txn.open_table(JOBS).map_err(db_err)?;
            let mut out = Vec::new();
            for entry in jobs.iter().map_err(db_err)? {
                let (_, v) = entry.map_err(db_err)?;
                out.push(decode(v.value())?);
            }
            Ok(out)
        })
    }
}

/// Removes records completed before `now - keep_secs`; returns them.
fn purge(
    jobs: &mut redb::Table<'_, &str, &[u8]>,
    txn: &redb::WriteTransaction,
    now: f64,
    keep_secs: f64,
) -> Result<Vec<JobRecord>, StoreError> {
    let cutoff = micros(now - keep_secs);
    let mut expiry = txn.open_table(EXPIRY).map_err(db_err)?;
    let mut expired = Vec::new();
    for entry in expiry.range::<(u64, &str)>(..(cutoff, "")).map_err(db_err)? {
        let (key, _) = entry.map_err(db_err)?;
        let (at, id) = key.value();
        expired.push((at, id.to_string()));
    }
    let mut removed = Vec::with_capacity(expired.len());
    for (at, id) in &expired {
        expiry.remove((*at, id.as_str())).map_err(db_err)?;
        if let Some(old) = jobs.remove(id.as_str()).map_err(db_err)? {
            if let Ok(record) = decode(old.value()) {
                removed.push(record);
            }
        }
    }
    if removed.iter().any(|r| r.request.is_some()) {
        let mut requests = txn.open_table(REQUESTS).map_err(db_err)?;
        for request in removed.iter().filter_map(|r| r.request.as_deref()) {
            requests.remove(request).map_err(db_err)?;
        }
    }
    Ok(removed)
}

fn encode(record: &JobRecord) -> Result<Vec<u8>, StoreError> {
    serde_json::to_vec(record).map_err(json_err)
}

/// Opens the redb file at `path` (0600, in a 0700 directory) with its tables.
fn open_db(path: &Path) -> Result<Database, StoreError> {
    let open_err = |message: String| StoreError::Open {
        path: path.display().to_string(),
        message,
    };
    if let Some(dir) = path.parent() {
        common::private::private_dir(dir).map_err(|e| open_err(e.to_string()))?;
    }
    common::private::tighten(path).map_err(|e| open_err(e.to_string()))?;
    let file = common::private::options()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| open_err(e.to_string()))?;
    let backend = redb::backends::FileBackend::new(file).map_err(|e| open_err(e.to_string()))?;
    let corrupt = |message: String| StoreError::Corrupt {
        path: path.display().to_string(),
        message,
    };
    let db = Database::builder()
        .set_cache_size(4 << 20)
        .create_with_backend(backend)
        .map_err(|e| match e {
            redb::DatabaseError::DatabaseAlreadyOpen => {
                open_err("already open by another process (is another funcd using this root?)".into())
            }
            redb::DatabaseError::Storage(redb::StorageError::Io(io))
                if !matches!(
                    io.kind(),
                    std::io::ErrorKind::UnexpectedEof | std::io::ErrorKind::InvalidData
                ) =>
            {
                open_err(io.to_string())
            }
            other => corrupt(other.to_string()),
        })?;
    let tables = (|| {
        let txn = db.begin_write().map_err(db_err)?;
        {
            txn.open_table(JOBS).map_err(db_err)?;
            txn.open_table(RUNNING).map_err(db_err)?;
            txn.open_table(EXPIRY).map_err(db_err)?;
        }
        txn.commit().map_err(db_err)
    })();
    match tables {
        Ok(()) => Ok(db),
        Err(StoreError::Db(message)) => Err(corrupt(message)),
        Err(e) => Err(e),
    }
}

fn decode(bytes: &[u8]) -> Result<JobRecord, StoreError> {
    serde_json::from_slice(bytes).map_err(|e| StoreError::Db(format!("unreadable job record: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(id: &str, started: f64) -> JobRecord {
        JobRecord {
            id: id.into(),
            method: "test.ping".into(),
            call_xml: String::new(),
            caller: "overlord".into(),
            overlord: true,
            pid: 0,
            pid_start: 0,
            started,
            ended: None,
            result_xml: None,
            signalled_by: None,
            request: None,
        }
    }

    #[test]
    fn a_requests_identity_is_kept_and_purged_with_its_job() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("s.redb")).unwrap();
        assert_eq!(store.ran_request("r1").unwrap(), None);
        let mut j = job("1.5-minion", 1.5);
        j.request = Some("r1".into());
        assert!(store.insert_new(&j).unwrap());
        assert_eq!(store.ran_request("r1").unwrap().as_deref(), Some("1.5-minion"));
        j.ended = Some(10.0);
        store.finish(&j, 10.0, 50.0).unwrap();
        assert_eq!(
            store.ran_request("r1").unwrap().as_deref(),
            Some("1.5-minion"),
            "kept with its job"
        );
        let mut k = job("3.5-minion", 3.5);
        k.ended = Some(100.0);
        store.insert_new(&k).unwrap();
        store.finish(&k, 100.0, 50.0).unwrap();
        assert!(store.get("1.5-minion").unwrap().is_none(), "purged");
        assert_eq!(store.ran_request("r1").unwrap(), None, "purged with it");
    }

    #[test]
    fn lifecycle_and_expiry_from_completion() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("s.redb")).unwrap();
        assert!(store.insert_new(&job("1.5-minion", 1.5)).unwrap());
        assert!(
            !store.insert_new(&job("1.5-minion", 9.0)).unwrap(),
            "ids are never reused"
        );
        assert!(store.insert_new(&job("2.5-minion", 2.5)).unwrap());
        store.update_running("1.5-minion", |r| r.pid = 42).unwrap();
        assert_eq!(store.running().unwrap().len(), 2);
        let mut done = job("1.5-minion", 1.5);
        done.ended = Some(100.0);
        done.result_xml = Some("<x/>".into());
        store.finish(&done, 100.0, 50.0).unwrap();
        let got = store.get("1.5-minion").unwrap().unwrap();
        assert_eq!((got.pid, got.ended), (42, Some(100.0)), "pid kept, finished");
        // Finishing again changes nothing.
        let mut again = done.clone();
        again.result_xml = Some("<y/>".into());
        store.finish(&again, 101.0, 50.0).unwrap();
        assert_eq!(
            store.get("1.5-minion").unwrap().unwrap().result_xml.as_deref(),
            Some("<x/>")
        );
        // Running jobs never expire, however old; finished ones expire
        // keep_secs after completion, not after their start.
        assert_eq!(
            store.next_expiry(50.0).unwrap(),
            Some(150.0),
            "the purge then due"
        );
        assert_eq!(store.purge(149.0, 50.0).unwrap(), 0);
        let kept = store.usage("overlord", true);
        assert_eq!(kept.running, 1, "one still running");
        assert_eq!(kept.bytes, 4, "the finished job's result");
        assert_eq!(store.purge(151.0, 50.0).unwrap(), 1);
        assert_eq!(store.next_expiry(50.0).unwrap(), None, "nothing left to purge");
        assert_eq!(store.usage("overlord", true), Usage { running: 1, bytes: 0 });
        drop(store);
        let store = Store::open(&dir.path().join("s.redb")).unwrap();
        assert_eq!(
            store.usage("overlord", true),
            Usage { running: 1, bytes: 0 },
            "rebuilt at open"
        );
        assert!(store.get("1.5-minion").unwrap().is_none());
        assert!(store.get("2.5-minion").unwrap().is_some());
        assert_eq!(store.all().unwrap().len(), 1);
    }

    /// A store written by the first release of this format: later versions
    /// must keep reading it.
    #[test]
    fn reads_the_v1_store_fixture() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.redb");
        std::fs::write(&path, include_bytes!("../../tests/fixtures/minion-v1.redb")).unwrap();
        let store = Store::open(&path).unwrap();
        let all = store.all().unwrap();
        assert_eq!(all.len(), 1);
        let job = &all[0];
        assert_eq!(job.method, "test.add");
        assert!(job.finished() && job.pid > 1);
        let result = crate::jobs::decode_result(job.result_xml.as_deref().unwrap());
        assert_eq!(result, common::Value::Integer(5));
        assert!(store.running().unwrap().is_empty());
    }

    #[test]
    fn a_second_opener_is_refused_clearly() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.redb");
        let _first = Store::open(&path).unwrap();
        let err = Store::open(&path).err().unwrap().to_string();
        assert!(err.contains("another funcd"), "{err}");
    }
}
