//! A job's status for a front end: asking its unfinished hosts (`check`,
//! `watch`, with one poller whose connections are kept across rounds) and
//! showing it (`print`, Func's codes, the exit status). Used by
//! `job_status`, `call --async`, `jobs lookup` and `jobs kill`; it knows no
//! command.
//!
//! Exit status: 0 when the job is finished and every host succeeded; 1
//! when it is finished and a host failed, or the job is unknown or
//! expired; [`EXIT_NOT_FINISHED`] (3) while it is not finished yet, so a
//! script can tell "not done" from "failed" without reading the output.

use std::time::{Duration, Instant};

use crate::jobs::{self, poller::Poller, Status};
use crate::plan::{Plan, PlanError};

/// The job's status now, or (`wait`) once finished or at the `-t` deadline.
pub fn check(plan: &Plan, id: &str, wait: bool) -> Result<Status, PlanError> {
    let deadline = match wait {
        true => plan.timeout.map(|t| Instant::now() + Duration::from_secs_f64(t)),
        false => Some(Instant::now()),
    };
    watch(plan, id, deadline, |_| {})
}

/// Polls job `id` — one poller, its connections kept across rounds — until
/// it is finished or unknown, or `deadline` has passed; `each` sees every
/// round's status.
pub fn watch(
    plan: &Plan,
    id: &str,
    deadline: Option<Instant>,
    mut each: impl FnMut(&Status),
) -> Result<Status, PlanError> {
    let store = plan.store();
    let mut poller = None;
    let mut round = 0;
    // A warm func: while a func-api serves the root, its watcher follows
    // the job's hosts over its kept connections and records each end, so
    // waiting costs no connection here; the store is read when it changes.
    // Once func-api is gone, or the deadline is reached, the hosts still
    // running are asked as below (their state now, or why not reached).
    let warm = deadline.is_none_or(|d| d > Instant::now()) && plan.dispatch.handoff;
    if warm {
        if let Some(status) = wait_stored(plan, &store, id, deadline, &mut each)? {
            return Ok(status);
        }
    }
    loop {
        // Running hosts answer the moment their job ends (`jobs.wait_job`);
        // a round waits at most a second so new dispatches are seen.
        let wait = match deadline {
            Some(d) => d.saturating_duration_since(Instant::now()).min(LONGEST_WAIT),
            None => LONGEST_WAIT,
        };
        let wait = (!wait.is_zero()).then_some(wait);
        let status = jobs::refresh(&store, &plan.root, id, &mut poller, || new_poller(plan), wait)?;
        each(&status);
        let out_of_time = deadline.is_some_and(|d| Instant::now() >= d);
        let stop = out_of_time || crate::interrupt::requested();
        if status.finished() || status.code == jobs::LOST_IN_SPACE || stop {
            return Ok(status);
        }
        // Nothing was waited on (not dispatched yet, or unreachable): pause,
        // longer the longer nothing is there to wait on.
        if wait.is_none() || !status.waiting.values().any(|why| why == "running") {
            std::thread::sleep(jobs::poll_pause(round));
            round += 1;
        } else {
            round = 0;
        }
    }
}

/// Follows job `id` in the store while a func-api serves the root (see
/// [`watch`]): its status once finished, unknown or interrupted; `None`
/// once func-api is gone or the deadline has passed.
fn wait_stored(
    plan: &Plan,
    store: &dyn crate::store::JobStore,
    id: &str,
    deadline: Option<Instant>,
    each: &mut impl FnMut(&Status),
) -> Result<Option<Status>, PlanError> {
    use crate::relay::local::{announced, may_hand, wait_change, Waited};
    let Some(api) = announced(&plan.root).filter(|_| may_hand()) else {
        return Ok(None);
    };
    if plan.verbose > 0 {
        crate::errln!(
            "func: waiting for job {id} as the func-api at {} records its hosts",
            api.addr
        );
    }
    let mut seen = None;
    loop {
        match wait_change(&plan.root, store, seen, deadline, STORE_PAUSE)? {
            Waited::Gone => {
                if plan.verbose > 0 {
                    crate::errln!("func: the func-api is gone; asking the hosts still running");
                }
                return Ok(None);
            }
            Waited::Changed(generation) => {
                seen = Some(generation);
                let status = jobs::stored(store, id)?;
                each(&status);
                if status.finished() || status.code == jobs::LOST_IN_SPACE {
                    return Ok(Some(status));
                }
            }
            Waited::Quiet => {}
        }
        if crate::interrupt::requested() {
            return Ok(Some(jobs::stored(store, id)?));
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Ok(None);
        }
    }
}

/// How often a front end waiting on a func-api looks at the store.
const STORE_PAUSE: Duration = Duration::from_millis(25);

/// Longest one round of `watch` waits on running hosts.
const LONGEST_WAIT: Duration = Duration::from_secs(1);

pub fn new_poller(plan: &Plan) -> Result<Poller, crate::error::EngineError> {
    let calling = crate::settings::Calling {
        credentials: plan.credentials(),
        max_response: crate::settings::max_response(&plan.root),
    };
    Poller::new(calling, Duration::from_secs_f64(plan.dispatch.timeout_secs))
        .map(|p| p.relaying(plan.root.clone(), None))
}

/// The exit status of a job that is not finished yet (Func's codes 0 and
/// 3: nothing dispatched yet, partial).
pub const EXIT_NOT_FINISHED: i32 = 3;

pub fn exit_code(status: &Status) -> i32 {
    match status.code {
        jobs::FINISHED => i32::from(!all_ok(status.method(), &status.results)),
        jobs::RUNNING | jobs::PARTIAL => EXIT_NOT_FINISHED,
        _ => 1,
    }
}

pub use crate::jobs::code_name;

/// The status of job `id` after asking its unfinished hosts.
pub fn refreshed(plan: &Plan, id: &str) -> Result<Status, PlanError> {
    check(plan, id, false)
}

/// Whether every result of `method` is a success.
pub fn all_ok(method: &str, results: &std::collections::BTreeMap<String, common::Value>) -> bool {
    results.values().all(|v| common::outcome::ok(method, v))
}
