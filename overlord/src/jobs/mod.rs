//! Overlord async jobs (DESIGN §6): a job id reserved in the store before
//! anything is sent, a detached driver that calls `async.M.m` on every
//! host, and status checks that ask only unfinished hosts, persist each
//! final result as it arrives, and answer from the store alone once every
//! host is done.
//!
//! - [`driver`]: the background process (`func __driver`) that dispatches.
//! - [`poller`]: `jobs.job_status` on many hosts over kept-alive connections.

pub mod active;
pub mod driver;
pub mod follow;
pub mod kill;
pub mod listing;
pub mod poller;
pub mod relayed;
pub mod rerun;
pub mod row;
pub mod start;
pub mod window;

use std::collections::BTreeMap;
use std::time::Duration;

use common::paths::Root;
use common::Value;

use crate::store::{HostState, HostUpdate, JobRecord, JobStore, StoreError};
use crate::targets::Target;
use poller::{Answer, Poller};

/// Func's status codes.
pub const RUNNING: i32 = 0;
pub const FINISHED: i32 = 1;
pub const LOST_IN_SPACE: i32 = 2;
pub const PARTIAL: i32 = 3;

/// A job as `job_status` reports it.
#[derive(Debug, Clone)]
pub struct Status {
    pub code: i32,
    pub record: Option<JobRecord>,
    /// Finished hosts' results.
    pub results: BTreeMap<String, Value>,
    /// Unfinished hosts, with why (not dispatched yet, running, unreachable).
    pub waiting: BTreeMap<String, String>,
}

impl Status {
    /// The job's `module.method` ("" for an unknown job).
    pub fn method(&self) -> &str {
        self.record.as_ref().map_or("", |r| r.meta.function.as_str())
    }

    pub fn lost() -> Self {
        Self {
            code: LOST_IN_SPACE,
            record: None,
            results: BTreeMap::new(),
            waiting: BTreeMap::new(),
        }
    }

    pub fn finished(&self) -> bool {
        self.code == FINISHED
    }

    /// `job_status --json` of job `id`.
    pub fn doc(&self, id: &str) -> StatusDoc {
        StatusDoc {
            job_id: id.to_string(),
            status: self.code,
            state: code_name(self.code).to_string(),
            function: self.method().to_string(),
            results: self
                .results
                .iter()
                .map(|(h, v)| (h.clone(), crate::values::to_json(v)))
                .collect(),
            waiting: self.waiting.clone(),
        }
    }
}

/// A job's status as `job_status --json` prints it and func-api answers it
/// (`GET /api/v1/jobs/{id}` adds who started it, when and with what).
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct StatusDoc {
    pub job_id: String,
    /// Func's code: 0 running, 1 finished, 2 lost in space, 3 partial.
    pub status: i32,
    /// The code's name.
    pub state: String,
    /// `module.method` ("" for an unknown job).
    pub function: String,
    /// Finished hosts' results (`{}` when none, or the job is unknown).
    #[schema(value_type = Object)]
    pub results: BTreeMap<String, serde_json::Value>,
    /// Unfinished hosts, with why (not dispatched yet, running, unreachable).
    pub waiting: BTreeMap<String, String>,
}

/// The name of a Func status code.
pub fn code_name(code: i32) -> &'static str {
    match code {
        RUNNING => "running",
        FINISHED => "finished",
        LOST_IN_SPACE => "lost in space",
        PARTIAL => "partial",
        _ => "unknown",
    }
}

pub use crate::job::{decode_result, encode_result};

/// The status of a record as it stands in the store, with `unreachable`
/// reasons from the last poll.
pub fn status_of(record: JobRecord, unreachable: &BTreeMap<String, String>) -> Status {
    let mut results = BTreeMap::new();
    let mut waiting = BTreeMap::new();
    for (host, entry) in &record.hosts {
        match (entry.state, &entry.result_xml) {
            (HostState::Finished, Some(xml)) => {
                results.insert(host.clone(), decode_result(xml));
            }
            (HostState::Pending, _) => {
                waiting.insert(host.clone(), "not dispatched yet".into());
            }
            _ => {
                let why = unreachable
                    .get(host)
                    .map(|e| format!("unreachable: {e}"))
                    .unwrap_or_else(|| "running".into());
                waiting.insert(host.clone(), why);
            }
        }
    }
    let code = if record.meta.ended.is_some() {
        FINISHED
    } else if record.meta.dispatched || !results.is_empty() {
        PARTIAL
    } else {
        RUNNING
    };
    Status {
        code,
        record: Some(record),
        results,
        waiting,
    }
}

/// Reads the job, asks its unfinished dispatched hosts (through `poller`,
/// made on first need), records every final answer, and returns the
/// status. A finished job is answered from the store without any traffic.
/// With `wait`, hosts still running are given that long to end (each
/// answers the moment its job ends), so callers that wait need no pause.
pub fn refresh(
    store: &dyn JobStore,
    root: &Root,
    id: &str,
    poller: &mut Option<Poller>,
    make_poller: impl FnOnce() -> Result<Poller, crate::error::EngineError>,
    wait: Option<Duration>,
) -> Result<Status, StoreError> {
    let Some(record) = current(store, id)? else {
        return Ok(Status::lost());
    };
    if record.meta.ended.is_some() {
        return Ok(status_of(record, &BTreeMap::new()));
    }
    let asks: Vec<(Target, String)> = record
        .in_flight()
        .map(|(host, job)| (Target::enrolled(root, host), job.to_string()))
        .collect();
    if asks.is_empty() {
        return Ok(status_of(record, &BTreeMap::new()));
    }
    if poller.is_none() {
        *poller = Some(make_poller().map_err(|e| StoreError::Caller(e.to_string()))?);
    }
    let Some(active) = poller.as_mut() else {
        return Ok(status_of(record, &BTreeMap::new()));
    };
    let mut changes = Vec::new();
    let mut unreachable = BTreeMap::new();
    for (host, answer) in active.poll(asks, wait) {
        match answer {
            Answer::Running => {}
            Answer::Finished(value) => changes.push((
                host,
                HostUpdate::Finished {
                    result_xml: encode_result(value),
                },
            )),
            Answer::Unreachable(why) => {
                unreachable.insert(host, why);
            }
        }
    }
    if !changes.is_empty() {
        store.update(id, &changes, false)?;
    }
    let record = store.load(id)?;
    Ok(record.map_or_else(Status::lost, |r| status_of(r, &unreachable)))
}

/// Job `id` as the store has it now (`None`: unknown), the hosts its
/// driver never reached ended first if that driver is gone.
fn current(store: &dyn JobStore, id: &str) -> Result<Option<JobRecord>, StoreError> {
    let Some(record) = store.load(id)? else {
        return Ok(None);
    };
    if record.meta.ended.is_some()
        || record.meta.dispatched
        || record.meta.batch
        || !driver_gone(&record.meta)
    {
        return Ok(Some(record));
    }
    // Hosts its driver never reached will not be reached: they end now.
    let lost = common::xmlrpc::remote_error(
        "func.overlord.DriverDied",
        "the job's dispatch driver ended before calling this host",
        "",
    );
    abandon_pending(store, &record, lost)?;
    store.load(id)
}

/// Job `id`'s status as the store has it, asking no host: for a front end
/// waiting while a func-api of the root follows the job's hosts over its
/// kept connections and records each end (its watcher).
pub fn stored(store: &dyn JobStore, id: &str) -> Result<Status, StoreError> {
    Ok(current(store, id)?.map_or_else(Status::lost, |r| status_of(r, &BTreeMap::new())))
}

/// Ends every host of `record` that was never dispatched with `error`
/// (only if still undispatched when written) and closes its dispatch.
pub fn abandon_pending(store: &dyn JobStore, record: &JobRecord, error: Value) -> Result<bool, StoreError> {
    let result_xml = encode_result(error);
    let changes: Vec<(String, HostUpdate)> = record
        .hosts
        .iter()
        .filter(|(_, e)| e.state == HostState::Pending)
        .map(|(h, _)| {
            (
                h.clone(),
                HostUpdate::Abandoned {
                    result_xml: result_xml.clone(),
                },
            )
        })
        .collect();
    store.update(&record.meta.id, &changes, true)
}

/// Whether the job's dispatch driver is gone (or never started within a minute).
/// A driver on another overlord host cannot be looked at: it counts as
/// gone only if the dispatch has not ended 10 minutes after the start.
pub fn driver_gone(meta: &crate::store::JobMeta) -> bool {
    let elsewhere = meta
        .driver_host
        .as_deref()
        .is_some_and(|h| h != common::process::overlord_host());
    match meta.driver {
        Some(_) if elsewhere => crate::store::now() - meta.started > 600.0,
        Some((pid, start)) => !common::process::alive(pid, start),
        None => crate::store::now() - meta.started > 60.0,
    }
}

/// Pause between polls: quick at first, then every half second (Func's interval).
pub fn poll_pause(round: u32) -> Duration {
    Duration::from_millis(match round {
        0..=4 => 20,
        5..=9 => 100,
        _ => 500,
    })
}

/// `id`, or for `last` the newest job (a batch, with `batch`) that the
/// current user started; none is the gate's not-found.
pub fn resolve_id(store: &dyn JobStore, id: &str, batch: bool) -> Result<String, crate::gate::GateError> {
    if id != "last" {
        return Ok(id.to_string());
    }
    let me = current_user();
    // Newest first, a page at a time: the first of this user's is the one.
    let mut cursor = None;
    loop {
        let page = store
            .list_page(500, cursor.as_ref())
            .map_err(|e| crate::gate::GateError::Engine(e.into()))?;
        if let Some(m) = page.iter().find(|m| m.user == me && (m.batch || !batch)) {
            return Ok(m.id.clone());
        }
        let Some(last) = page.last() else { break };
        cursor = Some((last.started, last.id.clone()));
    }
    Err(crate::gate::GateError::NotFound(format!(
        "no {} started by {me} is kept here, so 'last' names nothing",
        if batch { "batch" } else { "job" }
    )))
}

/// Who runs `func`: `cli:USER` (the invoking user under sudo).
pub fn current_user() -> String {
    crate::principal::cli_user()
}

/// How a job's hosts stand: each finished host classed as the summary
/// classes it (timed out counts as unreachable), and those still pending.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
pub struct Tally {
    pub ok: usize,
    pub failed: usize,
    pub unreachable: usize,
    pub abandoned: usize,
    pub pending: usize,
}

impl Tally {
    /// The job's outcome in a word: `running` while hosts are pending,
    /// `failed` when any host failed or could not be reached, `stopped`
    /// when hosts were abandoned (and none failed), else `ok`.
    pub fn outcome(&self) -> &'static str {
        if self.pending > 0 {
            "running"
        } else if self.failed + self.unreachable > 0 {
            "failed"
        } else if self.abandoned > 0 {
            "stopped"
        } else {
            "ok"
        }
    }
}

/// The [`Tally`] of a job.
pub fn tally(record: &JobRecord) -> Tally {
    use crate::values::Class;
    let mut t = Tally::default();
    for entry in record.hosts.values() {
        match (&entry.state, &entry.result_xml) {
            (HostState::Finished, Some(xml)) => {
                match crate::values::class(&record.meta.function, &decode_result(xml)) {
                    Class::Ok => t.ok += 1,
                    Class::Failed => t.failed += 1,
                    Class::Unreachable | Class::TimedOut => t.unreachable += 1,
                    Class::Abandoned => t.abandoned += 1,
                }
            }
            (HostState::Finished, None) => t.ok += 1,
            _ => t.pending += 1,
        }
    }
    t
}
