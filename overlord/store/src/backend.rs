//! [`Store`]: the job store an overlord is configured with — the embedded
//! redb file (the default), or PostgreSQL shared by several overlords
//! (`[store] url` in overlord.conf, DESIGN §15). Each backend implements
//! one trait, [`Backend`]: the jobs ([`JobStore`]), the schedules
//! ([`Schedules`]), the delegation map, the minion list, bulk import,
//! status and `last`; what a backend does not keep has a default (the
//! embedded store keeps no map and lists no minions). [`Store`] only picks
//! the backend; every operation goes through the trait.

use std::path::Path;
use std::sync::Arc;

use super::api::{Cursor, JobStore};
use super::postgres::PgStore;
use super::redb::RedbStore;
use super::schedules::{Added, Change, Schedules};
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

/// Everything a job store backend keeps, in one trait.
pub trait Backend: JobStore + Schedules + Send + Sync {
    /// The store for people: its file, or its URL without password.
    fn shown(&self) -> String;
    /// Whether several overlords share this store (their minions too).
    fn is_shared(&self) -> bool {
        false
    }
    /// The delegation map the store keeps (`None`: it keeps none, and the
    /// map is `var/lib/func/map`).
    fn load_map(&self) -> Result<Option<String>, StoreError> {
        Ok(None)
    }
    /// Keeps the delegation map; whether this store keeps one.
    fn save_map(&self, _map: &str) -> Result<bool, StoreError> {
        Ok(false)
    }
    /// The minions the store lists (name, address); `None` for a store
    /// that lists none (the certificates below the root are the list).
    fn shared_minions(&self) -> Option<Result<Vec<SharedMinion>, StoreError>> {
        None
    }
    /// Writes whole jobs as they are; ids already there are left alone.
    fn import(&self, records: &[JobRecord]) -> Result<usize, StoreError>;
    /// Writes a batch record as it is (an import); whether this store takes it.
    fn import_batch(&self, _id: &str, _record: &[u8]) -> Result<bool, StoreError> {
        Ok(false)
    }
    /// The backend, its schema version and what it holds; `minions`: how
    /// many the root knows (for a store that lists none).
    fn status(&self, minions: usize) -> Result<Status, StoreError>;
    /// The newest job of `user`: pages of the listing, newest first (a
    /// backend with an index answers it at once).
    fn newest_of(&self, user: &str) -> Result<Option<String>, StoreError> {
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

impl Backend for RedbStore {
    fn shown(&self) -> String {
        self.path().display().to_string()
    }
    fn import(&self, records: &[JobRecord]) -> Result<usize, StoreError> {
        RedbStore::import(self, records)
    }
    fn status(&self, minions: usize) -> Result<Status, StoreError> {
        let jobs = self.list_page(usize::MAX, None)?;
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
}

impl Backend for PgStore {
    fn shown(&self) -> String {
        PgStore::shown(self).to_string()
    }
    fn is_shared(&self) -> bool {
        true
    }
    fn load_map(&self) -> Result<Option<String>, StoreError> {
        PgStore::load_map(self)
    }
    fn save_map(&self, map: &str) -> Result<bool, StoreError> {
        PgStore::save_map(self, map).map(|()| true)
    }
    fn shared_minions(&self) -> Option<Result<Vec<SharedMinion>, StoreError>> {
        Some(self.minions())
    }
    fn import(&self, records: &[JobRecord]) -> Result<usize, StoreError> {
        PgStore::import(self, records)
    }
    fn import_batch(&self, id: &str, record: &[u8]) -> Result<bool, StoreError> {
        PgStore::import_batch(self, id, record).map(|()| true)
    }
    fn status(&self, _minions: usize) -> Result<Status, StoreError> {
        let (version, counts) = PgStore::status(self)?;
        Ok(Status {
            backend: "postgresql",
            schema_version: Some(version),
            counts: counts.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
        })
    }
    fn newest_of(&self, user: &str) -> Result<Option<String>, StoreError> {
        PgStore::newest_of(self, user)
    }
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

    /// The backend every operation goes through (a broken store's
    /// operations fail with why).
    pub fn backend(&self) -> Result<&dyn Backend, StoreError> {
        match self {
            Store::Redb(s) => Ok(s),
            Store::Postgres(s) => Ok(s.as_ref()),
            Store::Broken(why) => Err(StoreError::Unusable(why.clone())),
        }
    }

    /// The store for people: the redb file, or the URL without password.
    pub fn shown(&self) -> String {
        match self {
            Store::Broken(why) => why.clone(),
            other => other.backend().map_or_else(|e| e.to_string(), Backend::shown),
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
        self.backend()?.list_page(usize::MAX, None)
    }

    /// Changes a stored batch record in one transaction.
    pub fn change_batch(
        &self,
        id: &str,
        change: impl FnOnce(&[u8]) -> Option<Vec<u8>>,
    ) -> Result<bool, StoreError> {
        let mut once = Some(change);
        self.backend()?
            .change_batch_with(id, &mut |bytes| once.take().and_then(|f| f(bytes)))
    }

    /// See [`Backend::load_map`].
    pub fn load_map(&self) -> Result<Option<String>, StoreError> {
        self.backend()?.load_map()
    }

    /// See [`Backend::save_map`].
    pub fn save_map(&self, map: &str) -> Result<bool, StoreError> {
        self.backend()?.save_map(map)
    }

    /// See [`Backend::is_shared`].
    pub fn is_shared(&self) -> bool {
        self.backend().is_ok_and(Backend::is_shared)
    }

    /// See [`Backend::shared_minions`] (a broken store: its error).
    pub fn shared_minions(&self) -> Option<Result<Vec<SharedMinion>, StoreError>> {
        match self.backend() {
            Ok(b) => b.shared_minions(),
            Err(e) => Some(Err(e)),
        }
    }

    /// See [`Backend::status`].
    pub fn status(&self, minions: usize) -> Result<Status, StoreError> {
        self.backend()?.status(minions)
    }

    /// Copies `local`'s history (jobs, hosts, results, batch records) into
    /// this shared store; jobs already here are left alone. (jobs in
    /// `local`, jobs written, batch records written).
    pub fn import_history(&self, local: &Store) -> Result<(usize, usize, usize), StoreError> {
        let into = self.backend()?;
        if !into.is_shared() {
            return Err(StoreError::Unusable(
                "no shared store is configured ([store] url in overlord.conf): nothing to import into".into(),
            ));
        }
        let metas = local.list()?;
        let (mut written, mut batches) = (0, 0);
        for chunk in metas.chunks(500) {
            let ids: Vec<String> = chunk.iter().map(|m| m.id.clone()).collect();
            written += into.import(&local.load_many(&ids)?)?;
            for m in chunk.iter().filter(|m| m.batch) {
                if let Some(rec) = local.batch(&m.id)? {
                    batches += usize::from(into.import_batch(&m.id, &rec)?);
                }
            }
        }
        Ok((metas.len(), written, batches))
    }

    /// See [`Backend::import`].
    pub fn import(&self, records: &[JobRecord]) -> Result<usize, StoreError> {
        self.backend()?.import(records)
    }

    /// See [`Backend::newest_of`].
    pub fn newest_of(&self, user: &str) -> Result<Option<String>, StoreError> {
        self.backend()?.newest_of(user)
    }

    /// See [`Schedules::schedule_docs`].
    pub fn schedule_docs(&self) -> Result<Vec<Vec<u8>>, StoreError> {
        self.backend()?.schedule_docs()
    }

    /// See [`Schedules::schedule_doc`].
    pub fn schedule_doc(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.backend()?.schedule_doc(name)
    }

    /// See [`Schedules::add_schedule`].
    pub fn add_schedule(
        &self,
        name: &str,
        owner: &str,
        due: Option<f64>,
        doc: &[u8],
        per_owner: usize,
    ) -> Result<Added, StoreError> {
        self.backend()?.add_schedule(name, owner, due, doc, per_owner)
    }

    /// See [`Schedules::change_schedule`].
    pub fn change_schedule(
        &self,
        name: &str,
        change: &mut dyn FnMut(&[u8]) -> Change,
    ) -> Result<Option<(Vec<u8>, bool)>, StoreError> {
        self.backend()?.change_schedule(name, change)
    }

    /// See [`Schedules::remove_schedule`].
    pub fn remove_schedule(&self, name: &str) -> Result<bool, StoreError> {
        self.backend()?.remove_schedule(name)
    }

    /// See [`Schedules::bury_schedule`].
    pub fn bury_schedule(&self, name: &str, doc: &[u8]) -> Result<bool, StoreError> {
        self.backend()?.bury_schedule(name, doc)
    }

    /// See [`Schedules::due_schedules`].
    pub fn due_schedules(&self, now: f64, max: usize) -> Result<(Vec<String>, Option<f64>), StoreError> {
        self.backend()?.due_schedules(now, max)
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
        self.backend()?.write_tx(f)
    }
    fn load_many(&self, ids: &[String]) -> Result<Vec<JobRecord>, StoreError> {
        self.backend()?.load_many(ids)
    }
    fn batch(&self, id: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.backend()?.batch(id)
    }
    fn facts_of(&self, host: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.backend()?.facts_of(host)
    }
    fn list_page(&self, limit: usize, before: Option<&Cursor>) -> Result<Vec<JobMeta>, StoreError> {
        self.backend()?.list_page(limit, before)
    }
    fn generation(&self) -> Result<u64, StoreError> {
        self.backend()?.generation()
    }
    fn log_batch_event(&self, id: &str, line: &serde_json::Value) -> Result<(), StoreError> {
        self.backend()?.log_batch_event(id, line)
    }
    fn batch_events(&self, after: Option<u64>) -> Result<(Vec<serde_json::Value>, u64), StoreError> {
        self.backend()?.batch_events(after)
    }
}
