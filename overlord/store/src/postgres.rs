//! The job store in PostgreSQL (DESIGN §15), shared by every overlord
//! configured with the same `[store] url`: jobs, their hosts, batches,
//! batch lifecycle events and `last` live in tables created and migrated
//! here (a version table; every statement idempotent, migrations under an
//! advisory lock). Each operation is one transaction; a job's row is locked
//! (`FOR UPDATE`) while its hosts change, so two overlords recording the
//! same job serialise. Ids stay unique across overlords (the primary key:
//! an insert that meets a taken id moves the stamp on by 1 µs and tries
//! again). Retention deletes whole jobs (their hosts, batch and events go
//! with them). Every write bumps a sequence and sends `NOTIFY func_changes`,
//! which `func-api` on any host listens to.
//!
//! Connections: a few kept per process (a small pool), replaced after an
//! error, so a restarted server is picked up without restarting anything.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use pgconn::{PgError, StoreUrl};
use postgres::fallible_iterator::FallibleIterator;
use postgres::{Client, Transaction};

use super::api::{Cursor, JobStore};
use super::rules;
use super::types::{now, HostEntry, HostState, JobMeta, JobRecord, StoreError};

/// The schema this build writes.
pub const SCHEMA_VERSION: i32 = 4;
/// Connections a process holds at most (busy or idle); a request beyond
/// waits up to [`CHECKOUT_WAIT`] for one.
const POOL: u32 = 16;
/// How long a request waits for a connection while others are open (all
/// busy) and while none is (the store may be down: said at once).
const CHECKOUT_WAIT: Duration = Duration::from_secs(5);
const FIRST_CONNECT_WAIT: Duration = Duration::from_secs(1);

/// How r2d2 (a well-kept pool: bounded, idle connections closed after a
/// while, broken ones dropped) makes and checks this store's connections:
/// each new one connected as the URL says (`pgconn`) and its schema
/// brought up to date.
#[derive(Debug)]
struct Connections {
    url: StoreUrl,
    /// Why the last connection could not be made (`true`: the store is
    /// unavailable, a fault that heals; `false`: refused for good, as a
    /// wrong password or a newer schema), until one is made.
    failed: Failed,
}

/// Why connections could not be made lately, shared by the pool's maker
/// and the store.
type Failed = std::sync::Arc<Mutex<Option<(bool, String)>>>;

impl Connections {
    fn made(&self, made: Result<Client, PgError>) -> Result<Client, PgError> {
        let mut failed = self.failed.lock().unwrap_or_else(|p| p.into_inner());
        *failed = made.as_ref().err().map(|e| (e.is_unavailable(), e.to_string()));
        made
    }
}

impl r2d2::ManageConnection for Connections {
    type Connection = Client;
    type Error = PgError;

    fn connect(&self) -> Result<Client, PgError> {
        let made = self.url.connect().and_then(|mut c| {
            migrate(&mut c).map_err(|e| self.url.error(e))?;
            Ok(c)
        });
        self.made(made)
    }

    fn is_valid(&self, c: &mut Client) -> Result<(), PgError> {
        c.simple_query("").map(|_| ()).map_err(|e| self.url.error(e))
    }

    fn has_broken(&self, c: &mut Client) -> bool {
        c.is_closed()
    }
}
/// The channel changes are announced on.
pub const CHANNEL: &str = "func_changes";

const MIGRATE_1: &str = "
CREATE TABLE IF NOT EXISTS func_jobs (
    id text PRIMARY KEY,
    started double precision NOT NULL,
    ended double precision,
    function text NOT NULL,
    spec text NOT NULL,
    user_name text NOT NULL,
    batch boolean NOT NULL DEFAULT false,
    meta jsonb NOT NULL
);
CREATE INDEX IF NOT EXISTS func_jobs_started ON func_jobs (started DESC, id DESC);
CREATE INDEX IF NOT EXISTS func_jobs_user ON func_jobs (user_name, started DESC);
CREATE INDEX IF NOT EXISTS func_jobs_function ON func_jobs (function, started DESC);
CREATE INDEX IF NOT EXISTS func_jobs_ended ON func_jobs (ended) WHERE ended IS NOT NULL;
CREATE TABLE IF NOT EXISTS func_hosts (
    job_id text NOT NULL REFERENCES func_jobs (id) ON DELETE CASCADE,
    host text NOT NULL,
    entry jsonb NOT NULL,
    finished boolean NOT NULL,
    PRIMARY KEY (job_id, host)
);
CREATE TABLE IF NOT EXISTS func_batches (
    job_id text PRIMARY KEY REFERENCES func_jobs (id) ON DELETE CASCADE,
    record bytea NOT NULL
);
CREATE TABLE IF NOT EXISTS func_batch_events (
    seq bigserial PRIMARY KEY,
    job_id text NOT NULL REFERENCES func_jobs (id) ON DELETE CASCADE,
    line jsonb NOT NULL
);
CREATE INDEX IF NOT EXISTS func_batch_events_job ON func_batch_events (job_id);
CREATE SEQUENCE IF NOT EXISTS func_generation;
";

/// Version 2: the last facts seen from each minion.
const MIGRATE_2: &str = "
CREATE TABLE IF NOT EXISTS func_facts (
    host text PRIMARY KEY,
    record bytea NOT NULL
);
";

/// Version 3: the delegation map every overlord of the store uses (DESIGN §17).
const MIGRATE_3: &str = "
CREATE TABLE IF NOT EXISTS func_map (
    id integer PRIMARY KEY CHECK (id = 1),
    map text NOT NULL,
    updated double precision NOT NULL
);
";

/// Version 4: func-api's schedules (DESIGN §14): the record as JSON, its
/// owner (bounded per owner) and its next run (`NULL`: disabled), indexed
/// so an idle scheduler's look costs one index probe.
const MIGRATE_4: &str = "
CREATE TABLE IF NOT EXISTS func_schedules (
    name text PRIMARY KEY,
    owner text NOT NULL,
    due double precision,
    doc text NOT NULL
);
CREATE INDEX IF NOT EXISTS func_schedules_due ON func_schedules (due) WHERE due IS NOT NULL;
";

/// The PostgreSQL job store.
pub struct PgStore {
    url: StoreUrl,
    keep_secs: f64,
    pool: r2d2::Pool<Connections>,
    failed: Failed,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PgStore({})", self.url.shown())
    }
}

fn pg_err(e: PgError) -> StoreError {
    if e.is_unavailable() {
        StoreError::Unavailable(e.to_string())
    } else {
        StoreError::Postgres(e)
    }
}

fn decode<T: serde::de::DeserializeOwned>(v: serde_json::Value) -> Result<T, StoreError> {
    Ok(serde_json::from_value(v)?)
}

fn json<T: serde::Serialize>(v: &T) -> Result<serde_json::Value, StoreError> {
    Ok(serde_json::to_value(v)?)
}

impl PgStore {
    pub fn new(url: StoreUrl, keep_secs: f64) -> Self {
        // No connection is made here (the store may be down): each is made
        // when first needed, and none is checked out with a round trip.
        let failed = Failed::default();
        let pool = r2d2::Pool::builder()
            .max_size(POOL)
            .min_idle(Some(0))
            .test_on_check_out(false)
            .connection_timeout(CHECKOUT_WAIT)
            .idle_timeout(Some(Duration::from_secs(300)))
            .error_handler(Box::new(r2d2::NopErrorHandler))
            .build_unchecked(Connections {
                url: url.clone(),
                failed: failed.clone(),
            });
        PgStore {
            url,
            keep_secs,
            pool,
            failed,
        }
    }

    /// The delegation map kept in the store (`func-build-map`), if any.
    pub fn load_map(&self) -> Result<Option<String>, StoreError> {
        self.with(|c| {
            let row = c.query_opt("SELECT map FROM func_map WHERE id = 1", &[])?;
            Ok(row.map(|r| r.get::<_, String>(0)))
        })
    }

    /// Keeps `map` (Func's YAML) as the map of every overlord of the store.
    pub fn save_map(&self, map: &str) -> Result<(), StoreError> {
        self.with(|c| {
            c.execute(
                "INSERT INTO func_map (id, map, updated) VALUES (1, $1, $2)
                 ON CONFLICT (id) DO UPDATE SET map = EXCLUDED.map, updated = EXCLUDED.updated",
                &[&map, &now()],
            )
            .map(|_| ())
        })
    }

    /// The URL of this store (may hold a password: for a child process only).
    pub fn url_text(&self) -> &str {
        self.url.text()
    }

    /// The store as people may see it (no password).
    pub fn shown(&self) -> &str {
        self.url.shown()
    }

    /// The minions the certmasters sharing this store signed and did not
    /// revoke (name, advertised address).
    pub fn minions(&self) -> Result<Vec<(String, Option<String>)>, StoreError> {
        pgconn::minions(&self.url).map_err(|e| StoreError::Unavailable(e.to_string()))
    }

    /// Runs `f` on a pooled connection (made, and the schema brought up to
    /// date, if none is idle); a connection that broke is dropped.
    pub(super) fn with<T>(
        &self,
        f: impl FnOnce(&mut Client) -> Result<T, postgres::Error>,
    ) -> Result<T, StoreError> {
        let wait = match self.pool.state().connections {
            0 => FIRST_CONNECT_WAIT,
            _ => CHECKOUT_WAIT,
        };
        let mut client = self.pool.get_timeout(wait).map_err(|e| {
            let failed = self.failed.lock().map(|f| f.clone());
            match failed.ok().flatten() {
                // Refused for good: said as it is, never retried as an outage.
                Some((false, why)) => StoreError::Unusable(why),
                // Unreachable now (the last error says why), or every
                // connection stayed busy: unavailable, a fault that heals.
                _ => StoreError::Unavailable(format!("{}: {e}", self.url.shown())),
            }
        })?;
        f(&mut client).map_err(|e| pg_err(self.url.error(e)))
    }

    /// Runs `f` in one write transaction that also purges expired jobs,
    /// bumps the change counter and announces the change.
    fn write<T>(
        &self,
        f: impl FnOnce(&mut Transaction<'_>) -> Result<T, WriteError>,
    ) -> Result<T, StoreError> {
        let keep = self.keep_secs;
        let mut inner: Option<StoreError> = None;
        let out = self.with(|client| {
            let mut txn = client.transaction()?;
            let value = match f(&mut txn) {
                Ok(v) => v,
                Err(WriteError::Pg(e)) => return Err(e),
                Err(WriteError::Store(e)) => {
                    inner = Some(e);
                    return Ok(None);
                }
            };
            txn.execute(
                "DELETE FROM func_jobs WHERE ended IS NOT NULL AND ended < $1",
                &[&(now() - keep)],
            )?;
            txn.query_one("SELECT nextval('func_generation')", &[])?;
            txn.batch_execute(&format!("NOTIFY {CHANNEL}"))?;
            txn.commit()?;
            Ok(Some(value))
        })?;
        match (out, inner) {
            (Some(v), _) => Ok(v),
            (None, Some(e)) => Err(e),
            (None, None) => Err(StoreError::Unavailable(
                "the write transaction ended without an answer".into(),
            )),
        }
    }

    fn is_expired(&self, ended: Option<f64>) -> bool {
        ended.is_some_and(|end| end + self.keep_secs < now())
    }

    /// Every job, newest first (metadata only).
    pub fn list(&self) -> Result<Vec<JobMeta>, StoreError> {
        self.list_page(usize::MAX, None)
    }

    /// Writes whole jobs as they are (ids kept); a job whose id is here
    /// already is left alone. Returns how many were written.
    pub fn import(&self, records: &[JobRecord]) -> Result<usize, StoreError> {
        self.write(|txn| {
            let mut written = 0;
            for rec in records {
                let m = &rec.meta;
                let n = txn.execute(
                    "INSERT INTO func_jobs (id, started, ended, function, spec, user_name, batch, meta)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (id) DO NOTHING",
                    &[
                        &m.id,
                        &m.started,
                        &m.ended,
                        &m.function,
                        &m.spec,
                        &m.user,
                        &m.batch,
                        &json(m)?,
                    ],
                )?;
                if n == 0 {
                    continue;
                }
                insert_hosts(txn, &m.id, rec.hosts.iter())?;
                written += 1;
            }
            Ok(written)
        })
    }

    /// Imports batch records (after their jobs).
    pub fn import_batch(&self, id: &str, record: &[u8]) -> Result<(), StoreError> {
        self.write(|txn| {
            txn.execute(
                "INSERT INTO func_batches (job_id, record) SELECT $1, $2 WHERE EXISTS (SELECT 1 FROM func_jobs WHERE id = $1)
                 ON CONFLICT (job_id) DO NOTHING",
                &[&id, &record],
            )?;
            Ok(())
        })
    }

    fn append_event(&self, id: &str, line: &serde_json::Value) -> Result<(), StoreError> {
        self.write(|txn| {
            txn.execute(
                "INSERT INTO func_batch_events (job_id, line) SELECT $1, $2 WHERE EXISTS (SELECT 1 FROM func_jobs WHERE id = $1)",
                &[&id, line],
            )?;
            Ok(())
        })
    }

    /// Batch events after `after` (their sequence numbers), oldest first.
    fn events_after(&self, after: u64, limit: i64) -> Result<Vec<(u64, serde_json::Value)>, StoreError> {
        let after = i64::try_from(after).unwrap_or(i64::MAX);
        self.with(|c| {
            let rows = c.query(
                "SELECT seq, line FROM func_batch_events WHERE seq > $1 ORDER BY seq LIMIT $2",
                &[&after, &limit],
            )?;
            Ok(rows
                .iter()
                .map(|r| (r.get::<_, i64>(0) as u64, r.get::<_, serde_json::Value>(1)))
                .collect())
        })
    }

    /// The newest batch event's sequence number (0 when none).
    pub fn batch_events_end(&self) -> Result<u64, StoreError> {
        self.with(|c| {
            let row = c.query_one("SELECT coalesce(max(seq), 0) FROM func_batch_events", &[])?;
            Ok(row.get::<_, i64>(0) as u64)
        })
    }

    /// The newest job of `user` (also under the bare name older records
    /// gave the command line's user).
    pub fn newest_of(&self, user: &str) -> Result<Option<String>, StoreError> {
        let spellings = common::principal::job_user_spellings(user);
        self.with(|c| {
            let rows = c.query(
                "SELECT id, ended FROM func_jobs WHERE user_name = ANY($1) ORDER BY started DESC, id DESC LIMIT 20",
                &[&spellings],
            )?;
            Ok(rows
                .iter()
                .find(|r| !self.is_expired(r.get(1)))
                .map(|r| r.get::<_, String>(0)))
        })
    }

    /// Schema version, and counts of jobs, hosts, batches and minions.
    pub fn status(&self) -> Result<(i32, BTreeMap<&'static str, i64>), StoreError> {
        self.with(|c| {
            let version: i32 = c.query_one("SELECT max(version) FROM func_schema", &[])?.get(0);
            let mut counts = BTreeMap::new();
            for (name, table) in [
                ("jobs", "func_jobs"),
                ("hosts", "func_hosts"),
                ("batches", "func_batches"),
                ("batch events", "func_batch_events"),
                ("schedules", "func_schedules"),
            ] {
                let n: i64 = c.query_one(&format!("SELECT count(*) FROM {table}"), &[])?.get(0);
                counts.insert(name, n);
            }
            c.batch_execute(pgconn::MINIONS_SCHEMA)?;
            let n: i64 = c
                .query_one("SELECT count(*) FROM func_minions WHERE NOT revoked", &[])?
                .get(0);
            counts.insert("minions", n);
            Ok((version, counts))
        })
    }

    /// Waits up to `wait` for a change announced by any overlord (`LISTEN`).
    /// A dedicated connection is kept in `listener`. A listener made anew
    /// (the first, or after the server was away) answers `true` at once:
    /// what changed before it listened was announced to no one.
    pub fn wait_change(&self, listener: &mut Option<Client>, wait: Duration) -> Result<bool, StoreError> {
        if listener.as_ref().is_none_or(Client::is_closed) {
            let mut c = self.url.connect().map_err(pg_err)?;
            c.batch_execute(&format!("LISTEN {CHANNEL}"))
                .map_err(|e| pg_err(self.url.error(e)))?;
            *listener = Some(c);
            return Ok(true);
        }
        let outcome = {
            let Some(c) = listener.as_mut() else {
                return Ok(false);
            };
            let mut notes = c.notifications();
            let first = notes.timeout_iter(wait).next();
            match first {
                Ok(Some(_)) => {
                    // Take what else is queued.
                    let mut rest = notes.iter();
                    while let Ok(Some(_)) = rest.next() {}
                    Ok(true)
                }
                Ok(None) => Ok(false),
                Err(e) => Err(e),
            }
        };
        outcome.map_err(|e| {
            *listener = None;
            pg_err(self.url.error(e))
        })
    }
}

/// An error inside a write: the database's, or the store's own.
pub enum WriteError {
    Pg(postgres::Error),
    Store(StoreError),
}

impl From<postgres::Error> for WriteError {
    fn from(e: postgres::Error) -> Self {
        WriteError::Pg(e)
    }
}

impl From<StoreError> for WriteError {
    fn from(e: StoreError) -> Self {
        WriteError::Store(e)
    }
}

fn migrate(c: &mut Client) -> Result<(), postgres::Error> {
    c.batch_execute("CREATE TABLE IF NOT EXISTS func_schema (version integer NOT NULL)")
        .or_else(|e| match e.code() {
            // Two processes creating it at once: the other one did.
            Some(&postgres::error::SqlState::UNIQUE_VIOLATION) => Ok(()),
            _ => Err(e),
        })?;
    let version: Option<i32> = c.query_one("SELECT max(version) FROM func_schema", &[])?.get(0);
    if version.unwrap_or(0) >= SCHEMA_VERSION {
        return Ok(());
    }
    let mut txn = c.transaction()?;
    txn.execute("SELECT pg_advisory_xact_lock(7270015)", &[])?;
    let version: Option<i32> = txn.query_one("SELECT max(version) FROM func_schema", &[])?.get(0);
    if version.unwrap_or(0) < 1 {
        txn.batch_execute(MIGRATE_1)?;
        txn.batch_execute(pgconn::MINIONS_SCHEMA)?;
        txn.execute("INSERT INTO func_schema (version) VALUES (1)", &[])?;
    }
    if version.unwrap_or(0) < 2 {
        txn.batch_execute(MIGRATE_2)?;
        txn.execute("INSERT INTO func_schema (version) VALUES (2)", &[])?;
    }
    if version.unwrap_or(0) < 3 {
        txn.batch_execute(MIGRATE_3)?;
        txn.execute("INSERT INTO func_schema (version) VALUES (3)", &[])?;
    }
    if version.unwrap_or(0) < 4 {
        txn.batch_execute(MIGRATE_4)?;
        txn.execute("INSERT INTO func_schema (version) VALUES (4)", &[])?;
    }
    txn.commit()
}

fn insert_hosts<'a>(
    txn: &mut Transaction<'_>,
    id: &str,
    hosts: impl Iterator<Item = (&'a String, &'a HostEntry)>,
) -> Result<(), WriteError> {
    let mut names = Vec::new();
    let mut entries = Vec::new();
    let mut finished = Vec::new();
    for (h, e) in hosts {
        names.push(h.as_str());
        entries.push(json(e)?);
        finished.push(e.state == HostState::Finished);
    }
    txn.execute(
        "INSERT INTO func_hosts (job_id, host, entry, finished)
         SELECT $1, h, e, f FROM unnest($2::text[], $3::jsonb[], $4::bool[]) AS t(h, e, f)
         ON CONFLICT DO NOTHING",
        &[&id, &names, &entries, &finished],
    )?;
    Ok(())
}

/// The storage primitives of the store's rules (`rules.rs`) in one
/// PostgreSQL transaction: rows are locked as they are read for a change.
struct PgTx<'a, 'b> {
    txn: &'a mut Transaction<'b>,
    url: &'a StoreUrl,
}

impl PgTx<'_, '_> {
    /// `f` on the transaction; a PostgreSQL error as the store says it
    /// (unavailable, so drivers keep their results and try again, or not).
    fn run<T>(
        &mut self,
        f: impl FnOnce(&mut Transaction<'_>) -> Result<T, WriteError>,
    ) -> Result<T, StoreError> {
        let url = self.url;
        f(self.txn).map_err(|e| match e {
            WriteError::Pg(e) => pg_err(url.error(e)),
            WriteError::Store(e) => e,
        })
    }
}

impl rules::Tx for PgTx<'_, '_> {
    fn insert_job(&mut self, meta: &JobMeta) -> Result<bool, StoreError> {
        self.run(|txn| {
            let n = txn.execute(
                "INSERT INTO func_jobs (id, started, ended, function, spec, user_name, batch, meta)
                 VALUES ($1, $2, NULL, $3, $4, $5, $6, $7) ON CONFLICT (id) DO NOTHING",
                &[
                    &meta.id,
                    &meta.started,
                    &meta.function,
                    &meta.spec,
                    &meta.user,
                    &meta.batch,
                    &json(meta)?,
                ],
            )?;
            Ok(n == 1)
        })
    }

    fn insert_hosts(&mut self, id: &str, hosts: &[String], entry: &HostEntry) -> Result<(), StoreError> {
        self.run(|txn| insert_hosts(txn, id, hosts.iter().map(|h| (h, entry))))
    }

    fn job_for_update(&mut self, id: &str) -> Result<Option<JobMeta>, StoreError> {
        self.run(|txn| {
            match txn.query_opt("SELECT meta FROM func_jobs WHERE id = $1 FOR UPDATE", &[&id])? {
                Some(row) => Ok(Some(decode(row.get(0))?)),
                None => Ok(None),
            }
        })
    }

    fn put_job(&mut self, meta: &JobMeta, _newly_ended: bool) -> Result<(), StoreError> {
        self.run(|txn| {
            txn.execute(
                "UPDATE func_jobs SET meta = $2, ended = $3 WHERE id = $1",
                &[&meta.id, &json(meta)?, &meta.ended],
            )?;
            Ok(())
        })
    }

    fn hosts_of(&mut self, id: &str, names: &[&str]) -> Result<BTreeMap<String, HostEntry>, StoreError> {
        self.run(|txn| {
            let rows = txn.query(
                "SELECT host, entry FROM func_hosts WHERE job_id = $1 AND host = ANY($2)",
                &[&id, &names],
            )?;
            let mut out = BTreeMap::new();
            for r in rows {
                out.insert(r.get(0), decode(r.get(1))?);
            }
            Ok(out)
        })
    }

    fn put_hosts(&mut self, id: &str, entries: &BTreeMap<&str, HostEntry>) -> Result<(), StoreError> {
        self.run(|txn| {
            let (mut hosts, mut values, mut finished) = (Vec::new(), Vec::new(), Vec::new());
            for (host, entry) in entries {
                hosts.push(*host);
                values.push(json(entry)?);
                finished.push(rules::finished(entry));
            }
            txn.execute(
                "UPDATE func_hosts SET entry = t.e, finished = t.f
                 FROM unnest($2::text[], $3::jsonb[], $4::bool[]) AS t(h, e, f)
                 WHERE func_hosts.job_id = $1 AND func_hosts.host = t.h",
                &[&id, &hosts, &values, &finished],
            )?;
            Ok(())
        })
    }

    fn any_unfinished(&mut self, id: &str) -> Result<bool, StoreError> {
        self.run(|txn| {
            Ok(txn
                .query_one(
                    "SELECT EXISTS (SELECT 1 FROM func_hosts WHERE job_id = $1 AND NOT finished)",
                    &[&id],
                )?
                .get(0))
        })
    }

    fn batch_for_update(&mut self, id: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.run(|txn| {
            // The job row first: the order every writer of a batch locks in.
            txn.query_opt("SELECT 1 FROM func_jobs WHERE id = $1 FOR UPDATE", &[&id])?;
            let row = txn.query_opt(
                "SELECT record FROM func_batches WHERE job_id = $1 FOR UPDATE",
                &[&id],
            )?;
            Ok(row.map(|r| r.get::<_, Vec<u8>>(0)))
        })
    }

    fn put_batch(&mut self, id: &str, record: &[u8]) -> Result<(), StoreError> {
        self.run(|txn| {
            txn.execute(
                "INSERT INTO func_batches (job_id, record) VALUES ($1, $2)
                 ON CONFLICT (job_id) DO UPDATE SET record = EXCLUDED.record",
                &[&id, &record],
            )?;
            Ok(())
        })
    }

    fn facts_for_update(&mut self, host: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.run(|txn| {
            let row = txn.query_opt(
                "SELECT record FROM func_facts WHERE host = $1 FOR UPDATE",
                &[&host],
            )?;
            Ok(row.map(|r| r.get::<_, Vec<u8>>(0)))
        })
    }

    fn put_facts(&mut self, host: &str, record: &[u8]) -> Result<(), StoreError> {
        self.run(|txn| {
            txn.execute(
                "INSERT INTO func_facts (host, record) VALUES ($1, $2)
                 ON CONFLICT (host) DO UPDATE SET record = EXCLUDED.record",
                &[&host, &record],
            )?;
            Ok(())
        })
    }
}

impl JobStore for PgStore {
    fn write_tx(
        &self,
        f: &mut dyn FnMut(&mut dyn rules::Tx) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        self.write(|txn| f(&mut PgTx { txn, url: &self.url }).map_err(WriteError::Store))
    }

    fn load_many(&self, ids: &[String]) -> Result<Vec<JobRecord>, StoreError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let (jobs, hosts) = self.with(|c| {
            let jobs = c.query("SELECT id, meta FROM func_jobs WHERE id = ANY($1)", &[&ids])?;
            let hosts = c.query(
                "SELECT job_id, host, entry FROM func_hosts WHERE job_id = ANY($1)",
                &[&ids],
            )?;
            Ok((jobs, hosts))
        })?;
        let mut metas: BTreeMap<String, JobMeta> = BTreeMap::new();
        for r in jobs {
            let meta: JobMeta = decode(r.get(1))?;
            if !self.is_expired(meta.ended) {
                metas.insert(r.get(0), meta);
            }
        }
        let mut by_job: BTreeMap<String, BTreeMap<String, HostEntry>> = BTreeMap::new();
        for r in hosts {
            by_job
                .entry(r.get(0))
                .or_default()
                .insert(r.get(1), decode(r.get(2))?);
        }
        Ok(ids
            .iter()
            .filter_map(|id| {
                let meta = metas.remove(id)?;
                Some(JobRecord {
                    meta,
                    hosts: by_job.remove(id).unwrap_or_default(),
                })
            })
            .collect())
    }

    fn facts_of(&self, host: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.with(|c| {
            let row = c.query_opt("SELECT record FROM func_facts WHERE host = $1", &[&host])?;
            Ok(row.map(|r| r.get::<_, Vec<u8>>(0)))
        })
    }

    fn batch(&self, id: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let keep = self.keep_secs;
        self.with(|c| {
            let row = c.query_opt(
                "SELECT b.record FROM func_batches b JOIN func_jobs j ON j.id = b.job_id
                 WHERE b.job_id = $1 AND (j.ended IS NULL OR j.ended >= $2)",
                &[&id, &(now() - keep)],
            )?;
            Ok(row.map(|r| r.get::<_, Vec<u8>>(0)))
        })
    }

    fn list_page(&self, limit: usize, before: Option<&Cursor>) -> Result<Vec<JobMeta>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let horizon = now() - self.keep_secs;
        let rows = self.with(|c| match before {
            Some((at, id)) => c.query(
                "SELECT meta FROM func_jobs WHERE (started, id) < ($1, $2) AND (ended IS NULL OR ended >= $3)
                 ORDER BY started DESC, id DESC LIMIT $4",
                &[at, id, &horizon, &limit],
            ),
            None => c.query(
                "SELECT meta FROM func_jobs WHERE ended IS NULL OR ended >= $1 ORDER BY started DESC, id DESC LIMIT $2",
                &[&horizon, &limit],
            ),
        })?;
        rows.into_iter().map(|r| decode(r.get(0))).collect()
    }

    fn log_batch_event(&self, id: &str, line: &serde_json::Value) -> Result<(), StoreError> {
        self.append_event(id, line)
    }

    fn batch_events(&self, after: Option<u64>) -> Result<(Vec<serde_json::Value>, u64), StoreError> {
        let Some(after) = after else {
            return Ok((Vec::new(), self.batch_events_end()?));
        };
        let rows = self.events_after(after, 1000)?;
        let next = rows.last().map_or(after, |(seq, _)| *seq);
        Ok((rows.into_iter().map(|(_, v)| v).collect(), next))
    }

    fn generation(&self) -> Result<u64, StoreError> {
        self.with(|c| {
            let row = c.query_one("SELECT last_value, is_called FROM func_generation", &[])?;
            let (v, called): (i64, bool) = (row.get(0), row.get(1));
            Ok(if called { v as u64 } else { 0 })
        })
    }
}
