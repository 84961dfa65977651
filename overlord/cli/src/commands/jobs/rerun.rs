//! `func jobs rerun JOB_ID [--failed]`: a new job from the same signed
//! request (AWX's relaunch; `POST /api/v1/jobs/{id}/rerun` in func-api):
//! every host, or with `--failed` those that failed, were unreachable or
//! timed out. Prints the new job's id (`JOB_ID: …`, or `{"job_id",
//! "rerun_of", "hosts"}` with `--json`) and returns; `func job_status ID
//! --wait` follows it.

use overlord::plan::{Plan, PlanError};

#[derive(Debug)]
pub struct Rerun {
    pub id: String,
    pub failed: bool,
}

impl Rerun {
    pub fn run(&self, plan: &Plan) -> Result<i32, PlanError> {
        plan.check_credentials()?;
        let store = plan.store();
        // A local door's user holds the overlord's key: an administrator.
        let rerun = overlord::jobs::rerun::prepare(&store, &plan.root, &self.id, self.failed, &|_| true)?;
        let hosts = rerun.hosts.len();
        let started = overlord::jobs::rerun::start(&store, &plan.root, rerun, None)?;
        let doc = serde_json::json!({"job_id": started.id, "rerun_of": self.id, "hosts": hosts});
        match plan.json {
            true => crate::display::output::print_doc(plan.out, &doc),
            false => overlord::outln!(
                "JOB_ID: {} (re-run of {} on {hosts} host{})",
                overlord::interrupt::shell_quote(&started.id),
                overlord::interrupt::shell_quote(&self.id),
                if hosts == 1 { "" } else { "s" }
            ),
        }
        Ok(0)
    }
}
