//! func-api's scheduler (DESIGN §14): runs the store's schedules. It sleeps
//! until the earliest next run (looking again at least every second, for
//! schedules other func-api added), takes each due run with a compare-and-
//! set of the schedule's next run in one transaction (with several func-api
//! on one store, only one takes a run: the run's lease), and starts it as a
//! job carrying `"schedule": NAME`, as its owner:
//!
//! - the record must verify (signed when it was made: the store is data);
//!   one that does not is disabled, never run;
//! - a token owner must still hold that token (neither expired nor made
//!   anew): otherwise the schedule is disabled, with the reason, in the
//!   audit trail and as event `schedule/<name>/stopped` (`func-api token
//!   revoke` stops a token's schedules itself). A func-api whose token file
//!   does not know the owner's token leaves the run to one that does
//!   (several func-api on one store with token files of their own);
//! - the request is judged against the owner's rights now (a token whose
//!   rules narrowed refuses the run: `last_error`), and the run is skipped
//!   while the schedule's previous run still runs (one at a time each).
//!
//! Each run started is event `schedule/<name>/run {"job_id", "due",
//! "made_up"}` (`…/refused {"error"}`, `…/skipped {"error"}`, `…/stopped
//! {"reason"}` otherwise) and an audit line.

use std::sync::Arc;
use std::time::Duration;

use super::state::Api;
use overlord::gate::rights::Rights;
use overlord::gate::GateError;
use overlord_schedule::{self as schedule, manage, Schedule};

/// The longest sleep between two looks at the store.
const LOOK_EVERY: f64 = 1.0;
/// Due runs taken per look at most (the rest at the next look, at once).
const BATCH: usize = 100;
/// How often the versions and tombstones in the store are noted.
const OBSERVE_EVERY: Duration = Duration::from_secs(60);

/// Starts the scheduler on the service's runtime; abort the handle to stop it.
pub fn start(api: Arc<Api>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(run(api))
}

async fn run(api: Arc<Api>) {
    let holder = format!(
        "{}:{}",
        nix::unistd::gethostname()
            .ok()
            .and_then(|h| h.into_string().ok())
            .unwrap_or_default(),
        std::process::id()
    );
    let mut said: Option<std::time::Instant> = None;
    let mut observed: Option<std::time::Instant> = None;
    loop {
        // Now and then, the versions and tombstones other func-api signed
        // are noted here (an older record put back is then refused here too).
        if observed.is_none_or(|t| t.elapsed() >= OBSERVE_EVERY) {
            observed = Some(std::time::Instant::now());
            let api2 = Arc::clone(&api);
            let _ = tokio::task::spawn_blocking(move || manage::observe(&api2.store, &api2.root)).await;
        }
        let now = overlord::store::now();
        let api2 = Arc::clone(&api);
        let looked = tokio::task::spawn_blocking(move || api2.store.due_schedules(now, BATCH)).await;
        let (due, next) = match looked {
            Ok(Ok(found)) => {
                said = None;
                found
            }
            Ok(Err(e)) => {
                // The store away: said once a minute, tried again each second.
                if said.is_none_or(|t| t.elapsed() >= Duration::from_secs(60)) {
                    tracing::warn!(error = %e, "scheduler: cannot read the schedules");
                    said = Some(std::time::Instant::now());
                }
                (Vec::new(), None)
            }
            Err(_) => (Vec::new(), None),
        };
        let mut took = false;
        for name in due {
            took |= run_due(&api, &name, now, &holder).await;
        }
        // A run taken moved its schedule's next run: look again at once for
        // the earliest one (else the sleep below would be a whole second,
        // and each run of a 1-second schedule later than the last).
        if took {
            continue;
        }
        let until = next.map_or(LOOK_EVERY, |n| {
            (n - overlord::store::now()).clamp(0.0, LOOK_EVERY)
        });
        tokio::time::sleep(Duration::from_secs_f64(until.max(0.005))).await;
    }
}

/// What came of a run, for the record, the audit trail and the events.
enum Outcome {
    Started {
        job: String,
        hosts: Vec<String>,
    },
    /// Not started because its previous run still runs, or its limited
    /// owner's runs in progress are at the limit: no refusal (409).
    Skipped(String),
    /// Not started: refused (the owner's rights, a call that cannot be
    /// made, a filter no host holds) or failed to start (403).
    NotStarted(String),
    /// The schedule is stopped (its owner's token is gone or narrowed).
    Stopped(String),
}

async fn run_due(api: &Arc<Api>, name: &str, now: f64, holder: &str) -> bool {
    let claimed = match claim_due(api, name, now, holder).await {
        Due::Claimed(claimed) => claimed,
        Due::Untrusted(why) => {
            stop_untrusted(api, name, why).await;
            return true;
        }
        Due::Not => return false,
    };
    let s = &claimed.schedule;
    let outcome = match owner_rights(api, s) {
        Err(why) => Outcome::Stopped(why),
        Ok(rights) => match trusted_call(api, s, &rights).await {
            Err(outcome) => outcome,
            Ok(call) => start_run(api, s, &rights, call).await,
        },
    };
    record_outcome(api, &claimed, outcome).await;
    true
}

/// What [`claim_due`] found of a schedule listed as due.
enum Due {
    /// Taken for a run by this func-api.
    Claimed(Box<schedule::Claimed>),
    /// A record the store changed, made up, put back or deleted.
    Untrusted(String),
    /// Not to be run here now (not due by its signed times, another holder,
    /// an owner this func-api does not know, an unreadable record).
    Not,
}

/// Claims schedule `name` for a run due at `now`, if it may be trusted.
async fn claim_due(api: &Arc<Api>, name: &str, now: f64, holder: &str) -> Due {
    let (api2, name2, holder2) = (Arc::clone(api), name.to_string(), holder.to_string());
    let claimed = tokio::task::spawn_blocking(move || {
        let (mut taken, mut untrusted) = (None, None);
        let result = manage::change(&api2.store, &name2, &mut |s| {
            // A record the store changed, made up, put back or deleted is
            // never claimed (DESIGN §9): looked at before anything else.
            let seen = schedule::seen::get(&api2.root, &s.name);
            if let Err(why) = schedule::trusted_against(&api2.root, s, seen) {
                untrusted = Some(why);
                return Ok(false);
            }
            // A token owner this func-api does not know (several func-api
            // with their own token files on one store): the run is left to
            // one that knows it.
            if let Some(owner) = &s.owner.token {
                let mut tokens = api2.tokens.lock().unwrap_or_else(|p| p.into_inner());
                if tokens.named(&owner.name).is_none() {
                    return Ok(false);
                }
            }
            taken = schedule::claim(s, now, &holder2, seen.anchor);
            // Taken, or listed as due but not due by its signed times: the
            // store's due time is written (set right) either way.
            Ok(true)
        });
        if let (Ok(s), Some(_)) = (&result, &taken) {
            manage::raise_seen(&api2.root, s, s.anchor.unwrap_or(0.0));
        }
        (result, taken, untrusted)
    })
    .await;
    let Ok((result, taken, untrusted)) = claimed else {
        return Due::Not;
    };
    if let Some(why) = untrusted {
        return Due::Untrusted(why);
    }
    match result {
        Ok(_) => taken.map_or(Due::Not, |c| Due::Claimed(Box::new(c))),
        Err(GateError::Engine(overlord::error::EngineError::Record(why))) => {
            // A record that cannot be read is never run; said once.
            static SAID: std::sync::Mutex<Option<std::collections::HashSet<String>>> =
                std::sync::Mutex::new(None);
            let mut said = SAID.lock().unwrap_or_else(|p| p.into_inner());
            if said.get_or_insert_with(Default::default).insert(name.to_string()) {
                tracing::warn!(schedule = name, %why, "schedule not run: its record is unreadable");
            }
            Due::Not
        }
        Err(_) => Due::Not,
    }
}

/// Disables a schedule that cannot be trusted, saying why (log, audit
/// trail, event).
async fn stop_untrusted(api: &Arc<Api>, name: &str, why: String) {
    let why =
        format!("the schedule cannot be trusted (changed or made outside func): {why}: schedule disabled");
    tracing::warn!(schedule = name, reason = %why, "schedule stopped");
    let (api2, name2, why2) = (Arc::clone(api), name.to_string(), why.clone());
    let _ = tokio::task::spawn_blocking(move || manage::stop_untrusted(&api2.store, &name2, &why2)).await;
    api.audit.line(
        &format!("schedule:{name}"),
        None,
        &format!("schedule {name} stopped: {why}"),
        &[],
        403,
    );
    api.bus.publish(
        format!("schedule/{name}/stopped"),
        &serde_json::json!({"reason": why}),
        "",
        Arc::from(Vec::new()),
    );
}

/// Records what came of a claimed run: in the schedule's record, the log,
/// the audit trail and the event stream.
async fn record_outcome(api: &Arc<Api>, claimed: &schedule::Claimed, outcome: Outcome) {
    let s = &claimed.schedule;
    let name = s.name.as_str();
    let function = s.call().map(|c| c.function()).unwrap_or_default();
    let (api2, name2) = (Arc::clone(api), name.to_string());
    let record = |result: Result<String, String>| {
        let (api2, name2) = (Arc::clone(&api2), name2.clone());
        tokio::task::spawn_blocking(move || manage::record_run(&api2.store, &name2, result))
    };
    let (event, data, status, hosts) = match outcome {
        Outcome::Started { job, hosts } => {
            let _ = record(Ok(job.clone())).await;
            let data = serde_json::json!({"job_id": job, "due": claimed.due, "made_up": claimed.made_up});
            ("run", data, 202, hosts)
        }
        Outcome::Skipped(why) => {
            tracing::info!(schedule = name, reason = %why, "scheduled run skipped");
            let data = serde_json::json!({"error": why, "due": claimed.due});
            let _ = record(Err(why)).await;
            ("skipped", data, 409, Vec::new())
        }
        Outcome::NotStarted(why) => {
            tracing::info!(schedule = name, reason = %why, "scheduled run not started");
            let data = serde_json::json!({"error": why, "due": claimed.due});
            let _ = record(Err(why)).await;
            ("refused", data, 403, Vec::new())
        }
        Outcome::Stopped(why) => {
            tracing::warn!(schedule = name, reason = %why, "schedule stopped");
            let data = serde_json::json!({"reason": why});
            let _ = tokio::task::spawn_blocking(move || manage::stop(&api2.store, &api2.root, &name2, &why))
                .await;
            ("stopped", data, 403, Vec::new())
        }
    };
    api.audit.line(
        &format!("schedule:{name}"),
        None,
        &format!("schedule {name} {event}: {function} as {}", s.owner.user),
        &hosts,
        status,
    );
    api.bus.publish(
        format!("schedule/{name}/{event}"),
        &data,
        &function,
        Arc::from(hosts),
    );
}

/// The owner's rights now: an administrator's, or its token's current
/// rules (the token must be the very one that made the schedule, alive).
fn owner_rights(api: &Api, s: &Schedule) -> Result<Rights, String> {
    if let Some(person) = &s.owner.person {
        // A person's: what its groups give under [roles] now.
        let rights = api
            .sso
            .as_ref()
            .and_then(|sso| sso.roles.rights_of(&person.groups));
        return rights.ok_or_else(|| {
            format!(
                "its owner {}'s groups are given no rights any more ([roles], [oidc]): schedule disabled",
                s.owner.user
            )
        });
    }
    let Some(owner) = &s.owner.token else {
        return Ok(Rights::admin());
    };
    let token = api
        .tokens
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .named(&owner.name);
    match token {
        Some(t) if schedule::OwnerToken::check_of(&t.hash) != owner.check => Err(format!(
            "its owner's token {} was revoked (a new token has its name): schedule disabled",
            owner.name
        )),
        Some(t) if t.expired(overlord::store::now()) => Err(format!(
            "its owner's token {} expired: schedule disabled",
            owner.name
        )),
        Some(t) => Ok(Rights {
            admin: t.admin,
            rules: t.allow,
        }),
        None => Err(format!(
            "its owner's token {} was revoked: schedule disabled",
            owner.name
        )),
    }
}

/// The schedule's call, if its record verifies, its previous run ended, and
/// the owner may make it now: with the hosts it reaches.
async fn trusted_call(
    api: &Arc<Api>,
    s: &Schedule,
    rights: &Rights,
) -> Result<overlord::gate::Call, Outcome> {
    let (api2, s2, rights2) = (Arc::clone(api), s.clone(), rights.clone());
    let judged = tokio::task::spawn_blocking(move || -> Result<_, Outcome> {
        if let Some(job) = &s2.last_job {
            if let Ok(Some(rec)) = overlord::store::JobStore::load(&api2.store, job) {
                if running(&rec) {
                    return Err(Outcome::Skipped(format!(
                        "skipped: the previous run {job} is still running"
                    )));
                }
            }
        }
        // A limited owner's runs in progress are bounded: its many
        // schedules cannot keep the minions' shared budget busy.
        if s2.owner.limited() {
            let max = api2.settings.max_running_per_owner;
            let others: Vec<String> = manage::list(&api2.store)
                .unwrap_or_default()
                .into_iter()
                .filter(|o| o.owner.user == s2.owner.user && o.name != s2.name)
                .filter_map(|o| o.last_job)
                .collect();
            let busy = match others.is_empty() {
                true => 0,
                false => overlord::store::JobStore::load_many(&api2.store, &others).unwrap_or_default().iter().filter(|r| running(r)).count(),
            };
            if busy >= max {
                return Err(Outcome::Skipped(format!(
                    "skipped: {} has {busy} scheduled runs in progress, as many as a limited owner may ([api] max_running_per_owner)",
                    s2.owner.user
                )));
            }
        }
        let refused = |e: GateError| Outcome::NotStarted(format!("refused: {e}"));
        let call = s2.call().map_err(refused)?;
        overlord::gate::rights::authorize_call(&api2.root, &rights2, &call).map_err(refused)?;
        Ok(call)
    })
    .await
    .map_err(|e| Outcome::NotStarted(e.to_string()))??;
    Ok(judged)
}

/// Whether a scheduled run's job still runs (a job whose driver died
/// before it dispatched will not go on: it holds nothing back).
fn running(rec: &overlord::store::JobRecord) -> bool {
    let stalled = !rec.meta.dispatched && !rec.meta.batch && overlord::jobs::driver_gone(&rec.meta);
    rec.meta.ended.is_none() && overlord::jobs::tally(rec).pending > 0 && !stalled
}

/// Starts the run as a job of the owner carrying the schedule's name,
/// through the engine as every door's call (a batch has its own driver:
/// `schedule::call_of` reads every request as async); a fact filter is
/// judged by the hosts first.
async fn start_run(api: &Arc<Api>, s: &Schedule, rights: &Rights, call: overlord::gate::Call) -> Outcome {
    let who = overlord::jobs::start::Caller {
        user: s.owner.user.clone(),
        rights: rights.signed(),
        schedule: Some(s.name.clone()),
    };
    let filter = call.filter.as_deref().map(|f| f.describe());
    let api2 = Arc::clone(api);
    let done = match tokio::task::spawn_blocking(move || super::auth::call_as(&api2, who, call, None)).await {
        Ok(Ok((ready, unjudged))) => Ok(ready
            .finish()
            .await
            .map(|a| (a, unjudged))
            .map_err(GateError::from)),
        Ok(Err(e)) => Ok(Err(e)),
        Err(e) => Err(e),
    };
    match done {
        Ok(Ok((overlord::engine::Answer::Started { id, hosts, .. }, _))) => {
            api.metrics
                .jobs
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Outcome::Started { job: id, hosts }
        }
        Ok(Ok(_)) => Outcome::NotStarted("not started: the run was not made a job".into()),
        Ok(Err(e @ GateError::Forbidden(_))) => Outcome::NotStarted(format!("refused: {e}")),
        Ok(Err(GateError::Targets(overlord::targets::TargetError::NoMatch(_)))) if filter.is_some() => {
            Outcome::NotStarted(format!(
                "not started: no host holds {}",
                filter.unwrap_or_default()
            ))
        }
        Ok(Err(e)) => Outcome::NotStarted(format!("not started: {e}")),
        Err(e) => Outcome::NotStarted(format!("not started: {e}")),
    }
}
