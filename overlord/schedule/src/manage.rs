//! What every door does with schedules (`func schedule …`, func-api's
//! `/api/v1/schedules`), once: add (checked, judged against the owner's
//! rights, signed, bounded per owner), list, show, enable or disable,
//! change times, remove, record a run, stop a revoked token's schedules,
//! and the document a schedule is shown as (next run, last run and how it
//! ended).

use common::paths::Root;
use serde_json::json;

use super::seen::{self, Entry};
use super::{check_name, seal, Owner, Schedule, When};
use overlord::gate::rights::Rights;
use overlord::gate::GateError;
use overlord::store::schedules::Added;
use overlord::store::{JobStore as _, Store, StoreError};

fn store_err(e: StoreError) -> GateError {
    GateError::Engine(e.into())
}

fn unknown(name: &str) -> GateError {
    GateError::NotFound(format!("no schedule {}", common::paths::shorten(name)))
}

fn decode(bytes: &[u8]) -> Result<Schedule, GateError> {
    serde_json::from_slice(bytes).map_err(|e| {
        GateError::Engine(overlord::error::EngineError::Record(format!(
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
    /// The notification targets its runs are told to (`[notify.NAME]`;
    /// the door checks they exist).
    pub notify: Vec<String>,
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
    min_every_limited: u64,
) -> Result<Schedule, GateError> {
    check_name(&new.name)?;
    // Rights first: a caller who may not make the request spends nothing
    // on its times.
    let call = super::call_of(&new.request)?;
    overlord::gate::rights::authorize_call(root, rights, &call).map_err(|e| match e {
        GateError::Forbidden(why) => {
            GateError::Forbidden(format!("the owner may not make this request: {why}"))
        }
        other => other,
    })?;
    let when = When::parse(new.cron.as_deref(), new.every)?;
    super::check_rate(&owner, &when, min_every_limited)?;
    let mut s = Schedule::new(
        new.name,
        new.request,
        &when,
        new.enabled,
        owner,
        overlord::store::now(),
    );
    s.notify = new.notify;
    // Above every version of the name seen here or in its tombstone.
    let buried = store
        .schedule_doc(&s.name)
        .map_err(store_err)?
        .and_then(|b| decode(&b).ok())
        .filter(|old| old.deleted && super::signed(root, old));
    s.version = seen::get(root, &s.name)
        .version
        .max(buried.as_ref().map_or(0, |t| t.version))
        + 1;
    seal(root, &mut s)?;
    if buried.is_some() {
        // A deleted schedule's name made anew: its tombstone goes (the
        // version seen here still refuses the old record put back).
        store.remove_schedule(&s.name).map_err(store_err)?;
    }
    match store
        .add_schedule(&s.name, &s.owner.user, s.due, &encode(&s), per_owner)
        .map_err(store_err)?
    {
        Added::Yes => {
            raise_seen(root, &s, 0.0);
            Ok(s)
        }
        Added::Taken => Err(GateError::Conflict(format!("a schedule named {} exists", s.name))),
        Added::OwnerFull => Err(GateError::Conflict(format!(
            "{} has {per_owner} schedules, as many as an owner may ([api] max_schedules_per_owner)",
            s.owner.user
        ))),
        Added::Full => Err(GateError::Conflict(format!(
            "the store holds {} schedules, as many as it may",
            overlord::store::schedules::MAX_SCHEDULES
        ))),
    }
}

/// The method `system.list_methods` asks to check a new schedule's call.
pub const LIST_METHODS: &str = "system.list_methods";

/// Refuses a schedule whose function no host it targets has, by their
/// answers to [`LIST_METHODS`] (it would fail every run). Hosts that did
/// not answer tell nothing: when none answered, the runs will say.
pub fn method_known(
    function: &str,
    answers: &std::collections::BTreeMap<String, common::Value>,
) -> Result<(), GateError> {
    let lists: Vec<&Vec<common::Value>> = answers
        .values()
        .filter_map(|v| match v {
            common::Value::Array(items) if !common::xmlrpc::is_remote_error(v) => Some(items),
            _ => None,
        })
        .collect();
    let has = |items: &&Vec<common::Value>| {
        items
            .iter()
            .any(|m| matches!(m, common::Value::String(s) if s == function))
    };
    match lists.is_empty() || lists.iter().any(has) {
        true => Ok(()),
        false => Err(GateError::Invalid(format!(
            "no host the SPEC names has {function} ({} asked): a schedule of it would fail every run",
            lists.len()
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
/// said in the log; tombstones are not schedules).
pub fn list(store: &Store) -> Result<Vec<Schedule>, GateError> {
    let mut out: Vec<Schedule> = records(store)?.into_iter().filter(|s| !s.deleted).collect();
    out.sort_by(|a, b| overlord::values::natural_cmp(&a.name, &b.name));
    Ok(out)
}

/// Every record, tombstones too.
fn records(store: &Store) -> Result<Vec<Schedule>, GateError> {
    Ok(store
        .schedule_docs()
        .map_err(store_err)?
        .iter()
        .filter_map(|b| decode(b).map_err(|e| overlord::log::line(&e.to_string())).ok())
        .collect())
}

/// Schedule `name`.
pub fn get(store: &Store, name: &str) -> Result<Schedule, GateError> {
    check_name(name).map_err(|_| unknown(name))?;
    match store.schedule_doc(name).map_err(store_err)? {
        Some(bytes) => decode(&bytes).and_then(|s| match s.deleted {
            true => Err(unknown(name)),
            false => Ok(s),
        }),
        None => Err(unknown(name)),
    }
}

/// Records what was seen of `s` (signed by us or checked), outside the
/// store; a failure is said, never fatal (the record itself is signed).
pub fn raise_seen(root: &Root, s: &Schedule, anchor: f64) {
    let entry = Entry {
        version: s.version,
        deleted: s.deleted,
        anchor,
    };
    if let Err(e) = seen::raise(root, &s.name, entry) {
        overlord::log::line(&format!("schedule {}: cannot keep its version: {e}", s.name));
    }
}

/// Notes every trusted version and tombstone the store holds (another
/// func-api's changes and deletions), so that an older record put back
/// later is refused here too. Run now and then by the scheduler.
pub fn observe(store: &Store, root: &Root) -> Result<(), GateError> {
    let seen = seen::all(root);
    for s in records(store)? {
        let known = seen.get(&s.name).map_or(0, |e| e.version);
        if s.version > known && super::signed(root, &s) {
            raise_seen(root, &s, 0.0);
        }
    }
    Ok(())
}

/// Changes schedule `name` with `f` and signs it anew (a version above any
/// seen here, its runs counted from now), in one transaction. The record
/// must be trusted first, so that a record the store changed is never
/// signed: a version-1 record (an older func's) is signed anew too.
fn signed_change(
    store: &Store,
    root: &Root,
    name: &str,
    f: &mut dyn FnMut(&mut Schedule) -> Result<bool, GateError>,
) -> Result<Schedule, GateError> {
    let now = overlord::store::now();
    let s = change(store, name, &mut |s| {
        let seen = seen::get(root, name);
        let older = s.version == 0 && super::signed_v1(root, s);
        if let (Err(why), false) = (super::trusted_against(root, s, seen), older) {
            return Err(GateError::Forbidden(format!(
                "schedule {name} cannot be trusted ({why}): remove it and add it again"
            )));
        }
        if !f(s)? && !older {
            return Ok(false);
        }
        s.version = s.version.max(seen.version) + 1;
        s.since = now;
        s.due = s.enabled.then(|| super::due_time(s, 0.0)).flatten();
        seal(root, s)?;
        Ok(true)
    })?;
    raise_seen(root, &s, 0.0);
    Ok(s)
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

/// Enables (the next run from now) or disables schedule `name` (signed
/// again here, with the flag).
pub fn set_enabled(store: &Store, root: &Root, name: &str, enabled: bool) -> Result<Schedule, GateError> {
    get(store, name)?;
    signed_change(store, root, name, &mut |s| {
        if s.enabled == enabled {
            return Ok(false);
        }
        s.enabled = enabled;
        s.disabled_reason = None;
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
    When::parse(cron.as_deref(), every)?;
    get(store, name)?;
    signed_change(store, root, name, &mut |s| {
        s.cron = cron.clone();
        s.every = every;
        Ok(true)
    })
}

/// Removes schedule `name` (404 when there is none): a trusted record
/// becomes a signed tombstone (a saved copy put back is refused); one the
/// store changed or made up is simply deleted.
pub fn remove(store: &Store, root: &Root, name: &str) -> Result<(), GateError> {
    let s = get(store, name)?;
    if super::trusted(root, &s).is_err() {
        return match store.remove_schedule(name).map_err(store_err)? {
            true => Ok(()),
            false => Err(unknown(name)),
        };
    }
    let mut tomb = s;
    tomb.deleted = true;
    tomb.enabled = false;
    tomb.due = None;
    tomb.version = tomb.version.max(seen::get(root, name).version) + 1;
    tomb.since = overlord::store::now();
    seal(root, &mut tomb)?;
    match store.bury_schedule(name, &encode(&tomb)).map_err(store_err)? {
        true => {
            raise_seen(root, &tomb, 0.0);
            Ok(())
        }
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
/// (`reason` is kept and shown), signed again; whether it was enabled.
pub fn stop(store: &Store, root: &Root, name: &str, reason: &str) -> Result<bool, GateError> {
    let mut was = false;
    signed_change(store, root, name, &mut |s| {
        was = s.enabled;
        s.enabled = false;
        s.disabled_reason = Some(reason.to_string());
        s.last_error = Some(reason.to_string());
        Ok(true)
    })?;
    Ok(was)
}

/// Disables a record that cannot be trusted (`reason` shown), without
/// signing it: it stays untrusted and never runs.
pub fn stop_untrusted(store: &Store, name: &str, reason: &str) -> Result<(), GateError> {
    change(store, name, &mut |s| {
        s.enabled = false;
        s.due = None;
        s.disabled_reason = Some(reason.to_string());
        s.last_error = Some(reason.to_string());
        Ok(true)
    })
    .map(|_| ())
}

/// Stops every schedule of token `token` (revoked): the names stopped.
pub fn stop_token(store: &Store, root: &Root, token: &str, reason: &str) -> Result<Vec<String>, GateError> {
    let mut stopped = Vec::new();
    for s in list(store)? {
        if s.owner.token.as_ref().is_some_and(|t| t.name == token) {
            let was = match super::trusted(root, &s) {
                Ok(()) => stop(store, root, &s.name, reason)?,
                Err(_) => {
                    stop_untrusted(store, &s.name, reason)?;
                    s.enabled
                }
            };
            if was {
                stopped.push(s.name);
            }
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
    let jobs: Result<std::collections::HashMap<String, overlord::store::JobRecord>, _> = match ids.is_empty()
    {
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
    jobs: Option<&std::collections::HashMap<String, overlord::store::JobRecord>>,
) -> serde_json::Value {
    let outcome = match (&s.last_error, &s.last_job, s.last_run) {
        (Some(e), _, _) if e.starts_with("skipped") => "skipped",
        (Some(_), _, _) => "not started",
        (None, Some(job), _) => match jobs.map(|j| j.get(job)) {
            Some(Some(rec)) => {
                let t = overlord::jobs::tally(rec);
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
        "notify": s.notify,
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

#[cfg(test)]
mod tests {
    use common::Value;

    #[test]
    fn a_method_no_target_has_is_refused() {
        let list =
            |names: &[&str]| Value::Array(names.iter().map(|n| Value::String(n.to_string())).collect());
        let answers = [
            ("m1".to_string(), list(&["test.ping", "test.add"])),
            ("m2".to_string(), list(&["test.ping"])),
        ]
        .into_iter()
        .collect();
        assert!(super::method_known("test.add", &answers).is_ok());
        let err = super::method_known("test.nosuch", &answers).unwrap_err();
        assert!(
            err.to_string().contains("no host the SPEC names has test.nosuch"),
            "{err}"
        );
        let away = [(
            "m1".to_string(),
            common::xmlrpc::remote_error("socket.error", "refused", ""),
        )]
        .into_iter()
        .collect();
        assert!(
            super::method_known("test.nosuch", &away).is_ok(),
            "no answer tells nothing"
        );
    }
}
