//! What every front end does with a batch beyond running it: its state in
//! words and as one JSON document, a stop (or kill) request stored for its
//! driver, and a recover that takes a driverless batch and starts a new
//! driver for it (never two: the claim is one store transaction).

use std::path::Path;

use common::paths::Root;
use serde_json::json;

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

/// `batch status --json` of a batch: `{job_id, function, size, mode,
/// state, halted, complete, interrupted, driver_alive, driver_pid, counts,
/// hosts: {host: {state, minion_job | reason}}}`.
pub fn status_doc(meta: &JobMeta, rec: &BatchRecord) -> serde_json::Value {
    json!({"job_id": meta.id, "function": meta.function, "size": rec.state.size, "mode": rec.mode,
        "state": state_word(rec), "halted": rec.state.halted, "complete": rec.complete,
        "interrupted": rec.interrupted,
        "driver_alive": !rec.orphaned() && !rec.complete, "driver_pid": rec.driver.map(|d| d.0),
        "counts": rec.state.counts(), "hosts": hosts_doc(rec)})
}

/// The same document for a batch the store does not have.
pub fn unknown_doc(id: &str) -> serde_json::Value {
    let none = BatchState::new(Vec::new(), 1, 0.0, false, 1.0);
    json!({"job_id": id, "function": null, "size": null, "mode": null,
        "state": "unknown", "halted": null, "complete": false, "interrupted": false,
        "driver_alive": false, "driver_pid": null, "counts": none.counts(), "hosts": {}})
}

/// Each host's state: pending, active (with its minion job), or how it ended.
pub fn hosts_doc(rec: &BatchRecord) -> serde_json::Map<String, serde_json::Value> {
    let mut hosts = serde_json::Map::new();
    for h in &rec.state.pending {
        hosts.insert(h.clone(), json!({"state": "pending"}));
    }
    for h in rec.state.active.keys() {
        hosts.insert(
            h.clone(),
            json!({"state": "active", "minion_job": rec.minion_jobs.get(h)}),
        );
    }
    for (h, end) in &rec.state.ended {
        let why = match end {
            HostEnd::Timeout(w) | HostEnd::Unreachable(w) | HostEnd::Abandoned(w) => Some(w.clone()),
            _ => None,
        };
        hosts.insert(h.clone(), json!({"state": end.name(), "reason": why}));
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
            let child = driver::spawn(exe, root, id).map_err(|source| EngineError::Spawn {
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
