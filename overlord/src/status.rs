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
