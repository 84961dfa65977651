//! [`Store`]: the job store an overlord is configured with — the embedded
//! redb file (the default), or PostgreSQL shared by several overlords
//! (`[store] url` in overlord.conf, DESIGN §15). Both implement
//! [`JobStore`]; this adds what only some callers need (the whole listing,
//! bulk import, batch events, `last`, a description without secrets).

use std::path::Path;
use std::sync::Arc;

use super::api::{Cursor, JobStore};
use super::postgres::PgStore;
use super::redb::RedbStore;
use super::types::{JobMeta, JobRecord, StoreError};

/// A minion a shared store lists: its name and advertised address.
pub type SharedMinion = (String, Option<String>);

/// What `func store status` reports.
#[derive(Debug, Clone)]
pub struct Status {
    pub backend: &'static str,
    pub schema_version: Option<i32>,
    pub counts: std::collections::BTreeMap<String, i64>,
}

/// The configured job store.
#[derive(Clone)]
pub enum Store {
    Redb(RedbStore),
    Postgres(Arc<PgStore>),
    /// A store that cannot be used as configured (a malformed URL): every
    /// operation fails with this message, so a command says why at once.
    Broken(String),
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.shown())
    }
}

impl Store {
    /// The embedded store in file `path`, keeping finished jobs `keep_secs`.
    pub fn new(path: std::path::PathBuf, keep_secs: f64) -> Self {
        Store::Redb(RedbStore::new(path, keep_secs))
    }

    /// The embedded store of a root: its file, and its batch event log.
    pub fn embedded(root: &common::paths::Root, keep_secs: f64) -> Self {
        Store::Redb(
            RedbStore::new(root.status_dir().join("overlord.redb"), keep_secs)
                .with_events(root.log_dir().join("batch-events.log")),
        )
    }

    fn inner(&self) -> Result<&dyn JobStore, StoreError> {
        match self {
            Store::Redb(s) => Ok(s),
            Store::Postgres(s) => Ok(s.as_ref()),
            Store::Broken(why) => Err(StoreError::Unusable(why.clone())),
        }
    }

    /// The store for people: the redb file, or the URL without password.
    pub fn shown(&self) -> String {
        match self {
            Store::Redb(s) => s.path().display().to_string(),
            Store::Postgres(s) => s.shown().to_string(),
            Store::Broken(why) => why.clone(),
        }
    }

    /// The redb file, if that is the store.
    pub fn path(&self) -> Option<&Path> {
        match self {
            Store::Redb(s) => Some(s.path()),
            _ => None,
        }
    }

    /// Every job, newest first.
    pub fn list(&self) -> Result<Vec<JobMeta>, StoreError> {
        self.inner()?.list_page(usize::MAX, None)
    }

    /// Changes a stored batch record in one transaction.
    pub fn change_batch(
        &self,
        id: &str,
        change: impl FnOnce(&[u8]) -> Option<Vec<u8>>,
    ) -> Result<bool, StoreError> {
        let mut once = Some(change);
        self.inner()?
            .change_batch_with(id, &mut |bytes| once.take().and_then(|f| f(bytes)))
    }

    /// The delegation map a shared store keeps (`None`: none kept, or a
    /// store that keeps none: the map is `var/lib/func/map`).
    pub fn load_map(&self) -> Result<Option<String>, StoreError> {
        match self {
            Store::Postgres(pg) => pg.load_map(),
            Store::Redb(_) => Ok(None),
            Store::Broken(why) => Err(StoreError::Unusable(why.clone())),
        }
    }

    /// Keeps the delegation map in a shared store (nothing for redb).
    pub fn save_map(&self, map: &str) -> Result<bool, StoreError> {
        match self {
            Store::Postgres(pg) => pg.save_map(map).map(|()| true),
            Store::Redb(_) => Ok(false),
            Store::Broken(why) => Err(StoreError::Unusable(why.clone())),
        }
    }

    /// Whether several overlords share this store (their minions too).
    pub fn is_shared(&self) -> bool {
        matches!(self, Store::Postgres(_))
    }

    /// The minions a shared store lists (name, address); `None` for a
    /// store that is not shared (the certificates below the root are the list).
    pub fn shared_minions(&self) -> Option<Result<Vec<SharedMinion>, StoreError>> {
        match self {
            Store::Postgres(pg) => Some(pg.minions()),
            Store::Redb(_) => None,
            Store::Broken(why) => Some(Err(StoreError::Unusable(why.clone()))),
        }
    }

    /// The backend, its schema version (when it has one) and what it
    /// holds; `minions`: how many the root knows (for a store that does
    /// not list minions itself).
    pub fn status(&self, minions: usize) -> Result<Status, StoreError> {
        match self {
            Store::Postgres(pg) => {
                let (version, counts) = pg.status()?;
                Ok(Status {
                    backend: "postgresql",
                    schema_version: Some(version),
                    counts: counts.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
                })
            }
            Store::Redb(_) => {
                let jobs = self.list()?;
                let batches = jobs.iter().filter(|m| m.batch).count();
                let schedules = self.schedule_docs()?.len();
                let counts = [
                    ("jobs", jobs.len()),
                    ("batches", batches),
                    ("schedules", schedules),
                    ("minions", minions),
                ]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v as i64))
                .collect();
                Ok(Status {
                    backend: "redb",
                    schema_version: None,
                    counts,
                })
            }
            Store::Broken(why) => Err(StoreError::Unusable(why.clone())),
        }
    }

    /// Copies `local`'s history (jobs, hosts, results, batch records) into
    /// this shared store; jobs already here are left alone. (jobs in
    /// `local`, jobs written, batch records written).
    pub fn import_history(&self, local: &Store) -> Result<(usize, usize, usize), StoreError> {
        let Store::Postgres(pg) = self else {
            return Err(StoreError::Unusable(
                "no shared store is configured ([store] url in overlord.conf): nothing to import into".into(),
            ));
        };
        let metas = local.list()?;
        let (mut written, mut batches) = (0, 0);
        for chunk in metas.chunks(500) {
            let ids: Vec<String> = chunk.iter().map(|m| m.id.clone()).collect();
            written += pg.import(&local.load_many(&ids)?)?;
            for m in chunk.iter().filter(|m| m.batch) {
                if let Some(rec) = local.batch(&m.id)? {
                    pg.import_batch(&m.id, &rec)?;
                    batches += 1;
                }
            }
        }
        Ok((metas.len(), written, batches))
    }

    /// Writes whole jobs as they are; ids already there are left alone.
    pub fn import(&self, records: &[JobRecord]) -> Result<usize, StoreError> {
        match self {
            Store::Redb(s) => s.import(records),
            Store::Postgres(s) => s.import(records),
            Store::Broken(why) => Err(StoreError::Unusable(why.clone())),
        }
    }

    /// The newest job of `user` (an indexed query in PostgreSQL; pages of
    /// the listing, newest first, in the embedded store).
    pub fn newest_of(&self, user: &str) -> Result<Option<String>, StoreError> {
        if let Store::Postgres(s) = self {
            return s.newest_of(user);
        }
        let mut cursor = None;
        loop {
            let page = self.list_page(500, cursor.as_ref())?;
            if let Some(m) = page.iter().find(|m| m.user == user) {
                return Ok(Some(m.id.clone()));
            }
            let Some(last) = page.last() else { return Ok(None) };
            cursor = Some((last.started, last.id.clone()));
        }
    }
}

impl JobStore for Store {
    fn handoff(&self) -> Option<String> {
        match self {
            Store::Redb(_) => Some("embedded".into()),
            Store::Postgres(pg) => Some(format!("postgres {}", pg.url_text())),
            Store::Broken(_) => None,
        }
    }
    fn write_tx(
        &self,
        f: &mut dyn FnMut(&mut dyn super::rules::Tx) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        self.inner()?.write_tx(f)
    }
    fn load_many(&self, ids: &[String]) -> Result<Vec<JobRecord>, StoreError> {
        self.inner()?.load_many(ids)
    }
    fn batch(&self, id: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.inner()?.batch(id)
    }
    fn facts_of(&self, host: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.inner()?.facts_of(host)
    }
    fn list_page(&self, limit: usize, before: Option<&Cursor>) -> Result<Vec<JobMeta>, StoreError> {
        self.inner()?.list_page(limit, before)
    }
    fn generation(&self) -> Result<u64, StoreError> {
        self.inner()?.generation()
    }
    fn log_batch_event(&self, id: &str, line: &serde_json::Value) -> Result<(), StoreError> {
        self.inner()?.log_batch_event(id, line)
    }
    fn batch_events(&self, after: Option<u64>) -> Result<(Vec<serde_json::Value>, u64), StoreError> {
        self.inner()?.batch_events(after)
    }
}
