//! `func job_status JOB_ID [--wait] [--json]` (and its alias
//! `func SPEC call --jobstatus JOB_ID`): Func's status codes — `(0, -1)`
//! nothing dispatched yet, `(3, {finished hosts})` partial, `(1, {host:
//! result})` finished, `(2, 0)` unknown or expired. Only unfinished hosts
//! are asked; once every host is done the answer comes from the store.
//! `--wait` polls until finished, or until the `-t` deadline.
//!
//! Asking and showing live in `overlord::status` (also used by `call --async`
//! and `jobs lookup`/`kill`); exit status 3 while not finished yet.

use overlord::engine::{self, Answer, Request};
use overlord::plan::{Plan, PlanError};

#[derive(Debug)]
pub struct JobStatus {
    pub id: String,
    pub wait: bool,
}

impl JobStatus {
    pub fn run(&self, plan: &Plan) -> Result<i32, PlanError> {
        show(plan, &self.id, self.wait)
    }
}

/// Asks the engine for job `id`'s status (followed with `wait`) and shows it.
pub fn show(plan: &Plan, id: &str, wait: bool) -> Result<i32, PlanError> {
    let request = Request::JobStatus {
        id: id.to_string(),
        look: match wait {
            true => overlord::engine::Look::Followed,
            false => overlord::engine::Look::Asked,
        },
    };
    let answer = engine::serve(plan, None, request, &mut engine::Unwatched)?;
    if let Answer::Status { id, status } = &answer {
        crate::display::show_status(plan, id, status);
    }
    Ok(answer.exit_code())
}
