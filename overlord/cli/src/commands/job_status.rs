//! `func job_status JOB_ID [--wait] [--json]` (and its alias
//! `func SPEC call --jobstatus JOB_ID`): Func's status codes — `(0, -1)`
//! nothing dispatched yet, `(3, {finished hosts})` partial, `(1, {host:
//! result})` finished, `(2, 0)` unknown or expired. Only unfinished hosts
//! are asked; once every host is done the answer comes from the store.
//! `--wait` polls until finished, or until the `-t` deadline.
//!
//! Asking and showing live in `overlord::status` (also used by `call --async`
//! and `jobs lookup`/`kill`); exit status 3 while not finished yet.

use overlord::plan::{Plan, PlanError};
use overlord::status::{check, exit_code};

use crate::display::show_status as print;

#[derive(Debug)]
pub struct JobStatus {
    pub id: String,
    pub wait: bool,
}

impl JobStatus {
    pub fn run(&self, plan: &Plan) -> Result<i32, PlanError> {
        let status = check(plan, &self.id, self.wait)?;
        print(plan, &self.id, &status);
        Ok(exit_code(&status))
    }
}
