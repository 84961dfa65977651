//! The engine's batch operations (DESIGN §7), for every door: the list, a
//! batch's status, a stop (drain) or kill request, and a recover. A batch
//! the caller may not see (its rights do not reach every host with its
//! function) is unknown to it, as a job is.

use std::time::{Duration, Instant};

use crate::batch::control::{self, Recovered};
use crate::batch::driver;
use crate::batch::record::BatchRecord;
use crate::gate::rights::Rights;
use crate::jobs::start::Caller;
use crate::plan::{Plan, PlanError};
use crate::store::JobMeta;

/// A batch: its job's record and its batch record.
pub type Found = (JobMeta, BatchRecord);

/// The rights `caller` asks with (`None`: the invoking administrator).
fn rights_of(caller: Option<&Caller>) -> Rights {
    Rights::of_signed(caller.and_then(|c| c.rights.as_deref()))
}

fn visible(plan: &Plan, rights: &Rights, (meta, rec): &Found) -> bool {
    rights
        .forbidden(&plan.root, &meta.function, rec.state.hosts())
        .is_none()
}

/// Batch `id`'s records, if the caller may see it.
fn find(plan: &Plan, caller: Option<&Caller>, id: &str) -> Result<Option<Found>, PlanError> {
    let found = driver::load(&plan.store(), id)?;
    Ok(found.filter(|f| visible(plan, &rights_of(caller), f)))
}

/// Batch `id` as the store has it now (its hosts' recorded ends read in),
/// if the caller may see it.
pub fn status(plan: &Plan, caller: Option<&Caller>, id: &str) -> Result<Option<Found>, PlanError> {
    Ok(find(plan, caller, id)?.map(|(meta, mut rec)| {
        control::with_recorded_ends(&plan.store(), &mut rec, &meta.id);
        (meta, rec)
    }))
}

/// Every batch the caller may see, newest first.
pub fn list(plan: &Plan, caller: Option<&Caller>) -> Result<Vec<Found>, PlanError> {
    let rights = rights_of(caller);
    let all = control::all(&plan.store())?;
    Ok(all.into_iter().filter(|f| visible(plan, &rights, f)).collect())
}

/// Asks batch `id`'s driver to stop (drain) or, with `kill`, to kill the
/// hosts in flight. With `wait`, until its driver has applied it (or is
/// gone, or the plan's `-t`, default 60 s, passed): whether it did.
pub fn stop(
    plan: &Plan,
    caller: Option<&Caller>,
    id: &str,
    kill: bool,
    wait: bool,
) -> Result<(Option<Found>, Option<bool>), PlanError> {
    if find(plan, caller, id)?.is_none() {
        return Ok((None, None));
    }
    let store = plan.store();
    let Some(found) = control::request_stop(&store, id, kill)? else {
        return Ok((None, None));
    };
    if !wait || found.1.complete || found.1.orphaned() {
        return Ok((Some(found), None));
    }
    let limit = Instant::now() + Duration::from_secs_f64(plan.timeout.unwrap_or(60.0));
    loop {
        match driver::load(&store, id)? {
            Some(f) if f.1.complete || (!kill && f.1.state.halted.is_some()) => {
                return Ok((Some(f), Some(true)))
            }
            Some(f) if f.1.orphaned() || Instant::now() > limit => return Ok((Some(f), Some(false))),
            None => return Ok((None, Some(false))),
            // The driver applies a request at its next step.
            _ => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

/// Recovers batch `id`, or every batch the caller may see whose driver is
/// gone: a new driver takes each (one transaction: of two recovers only one
/// wins). What was done with each, and the batch as it was before.
pub fn recover(
    plan: &Plan,
    caller: Option<&Caller>,
    id: Option<&str>,
) -> Result<Vec<(String, Recovered, Option<Found>)>, PlanError> {
    let chosen: Vec<(String, Option<Found>)> = match id {
        Some(id) => vec![(id.to_string(), find(plan, caller, id)?)],
        None => list(plan, caller)?
            .into_iter()
            .filter(|(_, r)| r.orphaned())
            .map(|f| (f.0.id.clone(), Some(f)))
            .collect(),
    };
    let exe = common::process::own_exe().map_err(|source| crate::error::EngineError::Spawn {
        what: "the batch driver (its executable is not found)",
        source,
    })?;
    let store = plan.store();
    let mut done = Vec::new();
    for (id, found) in chosen {
        if found.is_none() {
            done.push((id, Recovered::Missing, None));
            continue;
        }
        let (outcome, driver) = control::recover(&store, &plan.root, &exe, &id)?;
        if let Some(child) = driver {
            crate::respawned::reap(child);
        }
        done.push((id, outcome, found));
    }
    Ok(done)
}
