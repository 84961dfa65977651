//! What every front end does with a batch beyond running it: its state in
//! words and as one JSON document, a stop (or kill) request stored for its
//! driver, and a recover that takes a driverless batch and starts a new
//! driver for it (never two: the claim is one store transaction).

use std::collections::BTreeMap;
use std::path::Path;

use common::paths::Root;

use super::driver;
use super::machine::{BatchState, HostEnd};
use super::record::{self, BatchRecord, Claim, Control};
use crate::error::EngineError;
use crate::store::{JobMeta, JobStore};

/// The batch's state in words.
pub fn state_word(rec: &BatchRecord) -> String {
    match (rec.complete, &rec.state.halted, rec.orphaned()) {
        (true, Some(why), _) => format!("halted ({why})"),
        (true, None, _) => "complete".into(),
        (false, _, true) if rec.interrupted => "interrupted (Ctrl-C): func batch recover resumes it".into(),
        (false, _, true) => "driver gone: run func batch recover".into(),
        (false, Some(why), false) => format!("draining ({why})"),
        (false, None, false) => "running".into(),
    }
}

/// The non-zero counts, `done 3, active 2`.
pub fn counts_text(rec: &BatchRecord) -> String {
    rec.state
        .counts()
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(k, n)| format!("{k} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A batch as `batch status --json` prints it and func-api answers it.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct BatchDoc {
    pub job_id: String,
    /// `module.method` (null for a batch the store does not have).
    pub function: Option<String>,
    pub size: Option<usize>,
    /// `sync` (driven by the `func` that started it) or `async`.
    pub mode: Option<String>,
    /// The state in words (`running`, `complete`, `halted (…)`, …).
    pub state: String,
    /// Why it halted (failhard, a stop request), if it did.
    pub halted: Option<String>,
    pub complete: bool,
    pub interrupted: bool,
    pub driver_alive: bool,
    pub driver_pid: Option<u32>,
    /// Hosts per state: every state named, zero or not.
    pub counts: BTreeMap<&'static str, usize>,
    pub hosts: BTreeMap<String, HostDoc>,
}

/// One host of a batch: pending, active (with its minion job), or how it
/// ended (with why, for a timeout, an unreachable or an abandoned host).
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct HostDoc {
    pub state: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub minion_job: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `batch status --json` of a batch.
pub fn status_doc(meta: &JobMeta, rec: &BatchRecord) -> BatchDoc {
    BatchDoc {
        job_id: meta.id.clone(),
        function: Some(meta.function.clone()),
        size: Some(rec.state.size),
        mode: Some(rec.mode.clone()),
        state: state_word(rec),
        halted: rec.state.halted.clone(),
        complete: rec.complete,
        interrupted: rec.interrupted,
        driver_alive: !rec.orphaned() && !rec.complete,
        driver_pid: rec.driver.map(|d| d.0),
        counts: rec.state.counts(),
        hosts: hosts_doc(rec),
    }
}

/// The same document for a batch the store does not have.
pub fn unknown_doc(id: &str) -> BatchDoc {
    let none = BatchState::new(Vec::new(), 1, 0.0, false, 1.0);
    BatchDoc {
        job_id: id.to_string(),
        function: None,
        size: None,
        mode: None,
        state: "unknown".into(),
        halted: None,
        complete: false,
        interrupted: false,
        driver_alive: false,
        driver_pid: None,
        counts: none.counts(),
        hosts: BTreeMap::new(),
    }
}

/// Each host's state: pending, active (with its minion job), or how it ended.
pub fn hosts_doc(rec: &BatchRecord) -> BTreeMap<String, HostDoc> {
    let mut hosts = BTreeMap::new();
    let doc = |state, minion_job, reason| HostDoc {
        state,
        minion_job,
        reason,
    };
    for h in &rec.state.pending {
        hosts.insert(h.clone(), doc("pending", None, None));
    }
    for h in rec.state.active.keys() {
        hosts.insert(h.clone(), doc("active", rec.minion_jobs.get(h).cloned(), None));
    }
    for (h, end) in &rec.state.ended {
        let why = match end {
            HostEnd::Timeout(w) | HostEnd::Unreachable(w) | HostEnd::Abandoned(w) | HostEnd::Refused(w) => {
                Some(w.clone())
            }
            _ => None,
        };
        hosts.insert(h.clone(), doc(end.name(), None, why));
    }
    hosts
}

/// Whether batch `id` stopped before its end with nobody driving it (Ctrl-C
/// on a sync batch, a driver that died): `func batch recover` resumes it.
pub fn interrupted(store: &dyn JobStore, id: &str) -> bool {
    matches!(driver::load(store, id), Ok(Some((_, rec))) if rec.orphaned())
}

/// `rec` as it stands now: a host the batch record still has in flight
/// whose result the job already holds (recorded by `job_status`, func-api
/// or a recovering driver after its driver stopped) is shown as ended, so
/// `batch status` and `job_status` agree. Nothing is written.
pub fn with_recorded_ends(store: &dyn JobStore, rec: &mut BatchRecord, id: &str) {
    let Ok(Some(job)) = store.load(id) else { return };
    let function = job.meta.function.clone();
    let finished: Vec<(String, HostEnd)> = rec
        .state
        .active
        .keys()
        .filter_map(|h| {
            let entry = job.hosts.get(h)?;
            let xml = entry
                .result_xml
                .as_ref()
                .filter(|_| entry.state == crate::store::HostState::Finished)?;
            let value = crate::jobs::decode_result(xml);
            let end = match crate::values::class(&function, &value) {
                crate::values::Class::Ok => HostEnd::Done,
                crate::values::Class::Unreachable => HostEnd::Unreachable(crate::values::error_text(&value)),
                crate::values::Class::TimedOut => HostEnd::Timeout(crate::values::error_text(&value)),
                crate::values::Class::Abandoned => HostEnd::Abandoned(crate::values::error_text(&value)),
                crate::values::Class::Failed => HostEnd::Failed,
            };
            Some((h.clone(), end))
        })
        .collect();
    for (host, end) in finished {
        rec.state.active.remove(&host);
        rec.state.ended.insert(host, end);
    }
}

/// Whether any host of the batch failed.
pub fn any_failed(rec: &BatchRecord) -> bool {
    rec.state.ended.values().any(HostEnd::is_failure)
}

/// Stores a stop (drain) or, with `kill`, a kill request for the batch's
/// driver; a batch that already ended is left as it is. The batch as it
/// is now, or `None` if the store has no such batch.
pub fn request_stop(
    store: &dyn JobStore,
    id: &str,
    kill: bool,
) -> Result<Option<(JobMeta, BatchRecord)>, EngineError> {
    let control = if kill { Control::Kill } else { Control::Stop };
    let found = store.change_batch_with(id, &mut |bytes| {
        let mut rec = BatchRecord::decode(bytes).ok()?;
        if rec.complete {
            return None;
        }
        rec.control = record::stronger(rec.control, Some(control));
        Some(rec.encode())
    })?;
    if !found {
        return Ok(None);
    }
    driver::load(store, id)
}

/// What a recover did with one batch.
#[derive(Debug, Clone, PartialEq)]
pub enum Recovered {
    Missing,
    /// It had ended (its state in words).
    Ended(String),
    /// Its driver (this pid, on this overlord host; elsewhere, its lease
    /// runs this many more seconds) is alive.
    Held {
        pid: u32,
        host: Option<String>,
        lease_left: Option<f64>,
    },
    /// A new driver runs it.
    Resumed,
}

/// Takes batch `id` if its driver is gone and starts a new driver (`exe
/// __batch`) for it, handing it over.
/// The driver started, if one was, comes back for its starter to reap.
pub fn recover(
    store: &dyn JobStore,
    root: &Root,
    exe: &Path,
    id: &str,
) -> Result<(Recovered, Option<std::process::Child>), EngineError> {
    let mut started = None;
    let outcome = match driver::claim(
        store,
        id,
        record::this_process(),
        None,
        false,
        crate::settings::batch_lease(root),
    )? {
        Claim::Missing => Recovered::Missing,
        Claim::Complete => Recovered::Ended(
            driver::load(store, id)?.map_or_else(|| "complete".to_string(), |(_, r)| state_word(&r)),
        ),
        Claim::Held((pid, _)) => {
            let rec = driver::load(store, id)?.map(|(_, r)| r);
            let elsewhere = rec.as_ref().filter(|r| !r.held_here());
            Recovered::Held {
                pid,
                host: elsewhere.and_then(|r| r.holder_host.clone()),
                lease_left: elsewhere
                    .and_then(|r| r.lease_until)
                    .map(|u| (u - crate::store::now()).max(0.0)),
            }
        }
        Claim::Taken { .. } => {
            let child = driver::spawn(exe, root, id, store).map_err(|source| EngineError::Spawn {
                what: "the batch driver",
                source,
            })?;
            driver::hand_over(store, id, &child, crate::settings::batch_lease(root))?;
            started = Some(child);
            Recovered::Resumed
        }
    };
    Ok((outcome, started))
}

/// Every batch the store holds, newest first.
pub fn all(store: &dyn JobStore) -> Result<Vec<(JobMeta, BatchRecord)>, EngineError> {
    let mut out = Vec::new();
    let mut cursor = None;
    loop {
        let page = store.list_page(500, cursor.as_ref())?;
        let Some(last) = page.last() else { break };
        cursor = Some((last.started, last.id.clone()));
        for meta in page.into_iter().filter(|m| m.batch) {
            if let Some(found) = driver::load(store, &meta.id)? {
                out.push(found);
            }
        }
    }
    Ok(out)
}
