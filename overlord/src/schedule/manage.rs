//! What every door does with schedules (`func schedule …`, func-api's
//! `/api/v1/schedules`), once: add (checked, judged against the owner's
//! rights, signed, bounded per owner), list, show, enable or disable,
//! change times, remove, record a run, stop a revoked token's schedules,
//! and the document a schedule is shown as (next run, last run and how it
//! ended).

use common::paths::Root;
use serde_json::json;

use super::{check_name, seal, Owner, Schedule, When};
use crate::gate::rights::Rights;
use crate::gate::GateError;
use crate::store::schedules::Added;
use crate::store::{JobStore as _, Store, StoreError};

fn store_err(e: StoreError) -> GateError {
    GateError::Engine(e.into())
}

fn unknown(name: &str) -> GateError {
    GateError::NotFound(format!("no schedule {}", common::paths::shorten(name)))
}

fn decode(bytes: &[u8]) -> Result<Schedule, GateError> {
    serde_json::from_slice(bytes).map_err(|e| {
        GateError::Engine(crate::error::EngineError::Record(format!(
            "a schedule's record is unreadable: {e}"
        )))
    })
}

fn encode(s: &Schedule) -> Vec<u8> {
    serde_json::to_vec(s).unwrap_or_default()
}

/// A new schedule, as a door hands it in.
pub struct NewSchedule {
    pub name: String,
    pub request: serde_json::Value,
    pub cron: Option<String>,
    pub every: Option<u64>,
    pub enabled: bool,
}

/// Adds `new` for `owner`, whose `rights` must allow its request now (403
/// otherwise); a taken name or a full owner is a 409.
pub fn add(
    store: &Store,
    root: &Root,
    new: NewSchedule,
    owner: Owner,
    rights: &Rights,
    per_owner: usize,
) -> Result<Schedule, GateError> {
    check_name(&new.name)?;
    // Rights first: a caller who may not make the request spends nothing
    // on its times.
    let call = super::call_of(&new.request)?;
    crate::gate::rights::authorize_call(root, rights, &call).map_err(|e| match e {
        GateError::Forbidden(why) => {
            GateError::Forbidden(format!("the owner may not make this request: {why}"))
        }
        other => other,
    })?;
    let when = When::parse(new.cron.as_deref(), new.every)?;
    let mut s = Schedule::new(
        new.name,
        new.request,
        &when,
        new.enabled,
        owner,
        crate::store::now(),
    );
    seal(root, &mut s)?;
    match store
        .add_schedule(&s.name, &s.owner.user, s.due, &encode(&s), per_owner)
        .map_err(store_err)?
    {
        Added::Yes => Ok(s),
        Added::Taken => Err(GateError::Conflict(format!("a schedule named {} exists", s.name))),
        Added::OwnerFull => Err(GateError::Conflict(format!(
            "{} has {per_owner} schedules, as many as an owner may ([api] max_schedules_per_owner)",
            s.owner.user
        ))),
        Added::Full => Err(GateError::Conflict(format!(
            "the store holds {} schedules, as many as it may",
            crate::store::schedules::MAX_SCHEDULES
        ))),
    }
}

/// Copies `from`'s schedules into `into` (`func store import`: the
/// embedded store's into the shared one), as they are — still signed;
/// names already there are left alone. (schedules in `from`, copied).
pub fn import(from: &Store, into: &Store) -> Result<(usize, usize), GateError> {
    let all = list(from)?;
    let mut copied = 0;
    for s in &all {
        let due = s.due.filter(|_| s.enabled);
        if into
            .add_schedule(&s.name, &s.owner.user, due, &encode(s), usize::MAX)
            .map_err(store_err)?
            == Added::Yes
        {
            copied += 1;
        }
    }
    Ok((all.len(), copied))
}

/// Every schedule, by name (records that cannot be read are left out and
/// said in the log).
pub fn list(store: &Store) -> Result<Vec<Schedule>, GateError> {
    let mut out: Vec<Schedule> = store
        .schedule_docs()
        .map_err(store_err)?
        .iter()
        .filter_map(|b| decode(b).map_err(|e| crate::log::line(&e.to_string())).ok())
        .collect();
    out.sort_by(|a, b| crate::values::natural_cmp(&a.name, &b.name));
    Ok(out)
}

/// Schedule `name`.
pub fn get(store: &Store, name: &str) -> Result<Schedule, GateError> {
    check_name(name).map_err(|_| unknown(name))?;
    match store.schedule_doc(name).map_err(store_err)? {
        Some(bytes) => decode(&bytes),
        None => Err(unknown(name)),
    }
}

/// Changes schedule `name` with `f` in one transaction (`f` may refuse);
/// the schedule as stored.
pub fn change(
    store: &Store,
    name: &str,
    f: &mut dyn FnMut(&mut Schedule) -> Result<bool, GateError>,
) -> Result<Schedule, GateError> {
    let mut refused = None;
    let stored = store
        .change_schedule(name, &mut |bytes| {
            let mut s = match decode(bytes) {
                Ok(s) => s,
                Err(e) => {
                    refused = Some(e);
                    return None;
                }
            };
            match f(&mut s) {
                Ok(true) => Some((encode(&s), s.due.filter(|_| s.enabled))),
                Ok(false) => None,
                Err(e) => {
                    refused = Some(e);
                    None
                }
            }
        })
        .map_err(store_err)?;
    if let Some(e) = refused {
        return Err(e);
    }
    match stored {
        Some((bytes, _)) => decode(&bytes),
        None => Err(unknown(name)),
    }
}

/// Enables (the next run from now) or disables schedule `name`.
pub fn set_enabled(store: &Store, name: &str, enabled: bool) -> Result<Schedule, GateError> {
    change(store, name, &mut |s| {
        if s.enabled == enabled {
            return Ok(false);
        }
        s.enabled = enabled;
        s.disabled_reason = None;
        s.due = match enabled {
            true => s.when()?.next_after(crate::store::now()),
            false => None,
        };
        Ok(true)
    })
}

/// New times for schedule `name` (signed again here).
pub fn set_times(
    store: &Store,
    root: &Root,
    name: &str,
    cron: Option<String>,
    every: Option<u64>,
) -> Result<Schedule, GateError> {
    let when = When::parse(cron.as_deref(), every)?;
    change(store, name, &mut |s| {
        s.cron = cron.clone();
        s.every = every;
        s.due = s.enabled.then(|| when.next_after(crate::store::now())).flatten();
        seal(root, s)?;
        Ok(true)
    })
}

/// Removes schedule `name` (404 when there is none).
pub fn remove(store: &Store, name: &str) -> Result<(), GateError> {
    check_name(name).map_err(|_| unknown(name))?;
    match store.remove_schedule(name).map_err(store_err)? {
        true => Ok(()),
        false => Err(unknown(name)),
    }
}

/// Records how a run of schedule `name` started: its job, or why not.
pub fn record_run(store: &Store, name: &str, job: Result<String, String>) -> Result<(), GateError> {
    change(store, name, &mut |s| {
        match &job {
            Ok(id) => {
                s.last_job = Some(id.clone());
                s.last_error = None;
            }
            Err(why) => s.last_error = Some(why.clone()),
        }
        Ok(true)
    })
    .map(|_| ())
}

/// Disables schedule `name` because its owner cannot run it any more
/// (`reason` is kept and shown); whether it was enabled.
pub fn stop(store: &Store, name: &str, reason: &str) -> Result<bool, GateError> {
    let mut was = false;
    change(store, name, &mut |s| {
        was = s.enabled;
        s.enabled = false;
        s.due = None;
        s.disabled_reason = Some(reason.to_string());
        s.last_error = Some(reason.to_string());
        Ok(true)
    })?;
    Ok(was)
}

/// Stops every schedule of token `token` (revoked): the names stopped.
pub fn stop_token(store: &Store, token: &str, reason: &str) -> Result<Vec<String>, GateError> {
    let mut stopped = Vec::new();
    for s in list(store)? {
        if s.owner.token.as_ref().is_some_and(|t| t.name == token) && stop(store, &s.name, reason)? {
            stopped.push(s.name);
        }
    }
    Ok(stopped)
}

/// How schedule `s` is shown: its record (no seal) with `next_run`, and
/// `last_outcome` — the last run's job as it stands (`ok`, `failed`,
/// `running`, …), `refused`/`skipped`/`not started` when it did not start,
/// `expired` when its job is gone.
pub fn doc(store: &Store, s: &Schedule) -> serde_json::Value {
    docs(store, std::slice::from_ref(s)).pop().unwrap_or_default()
}

/// [`doc`] of each of `all`, their last runs' jobs read in one go.
pub fn docs(store: &Store, all: &[Schedule]) -> Vec<serde_json::Value> {
    let ids: Vec<String> = all.iter().filter_map(|s| s.last_job.clone()).collect();
    let jobs: Result<std::collections::HashMap<String, crate::store::JobRecord>, _> = match ids.is_empty() {
        true => Ok(Default::default()),
        false => store
            .load_many(&ids)
            .map(|recs| recs.into_iter().map(|r| (r.meta.id.clone(), r)).collect()),
    };
    all.iter().map(|s| shown(s, jobs.as_ref().ok())).collect()
}

/// Schedule `s` as shown, its last job found in `jobs` (`None`: the store
/// could not be read).
fn shown(
    s: &Schedule,
    jobs: Option<&std::collections::HashMap<String, crate::store::JobRecord>>,
) -> serde_json::Value {
    let outcome = match (&s.last_error, &s.last_job, s.last_run) {
        (Some(e), _, _) if e.starts_with("skipped") => "skipped",
        (Some(_), _, _) => "not started",
        (None, Some(job), _) => match jobs.map(|j| j.get(job)) {
            Some(Some(rec)) => {
                let t = crate::jobs::tally(rec);
                if rec.meta.ended.is_none() && t.pending > 0 {
                    "running"
                } else {
                    t.outcome()
                }
            }
            Some(None) => "expired",
            None => "unknown",
        },
        (None, None, None) => "never run",
        (None, None, Some(_)) => "starting",
    };
    json!({
        "name": s.name,
        "request": s.request,
        "cron": s.cron,
        "every": s.every,
        "enabled": s.enabled,
        "owner": s.owner.user,
        "created": s.created,
        "next_run": s.due.filter(|_| s.enabled),
        "last_run": s.last_run,
        "last_job": s.last_job,
        "last_outcome": outcome,
        "last_error": s.last_error,
        "made_up": s.made_up,
        "disabled_reason": s.disabled_reason,
        "runs": s.runs,
    })
}
