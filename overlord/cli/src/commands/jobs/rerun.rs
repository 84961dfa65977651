//! `func jobs rerun JOB_ID [--failed]`: a new job from the same signed
//! request (AWX's relaunch; `POST /api/v1/jobs/{id}/rerun` in func-api):
//! every host, or with `--failed` those that failed, were unreachable or
//! timed out. Prints the new job's id (`JOB_ID: …`, or `{"job_id",
//! "rerun_of", "hosts"}` with `--json`) and returns; `func job_status ID
//! --wait` follows it.

use overlord::engine::{self, Answer, Request};
use overlord::plan::{Plan, PlanError};

#[derive(clap::Args, Debug)]
pub struct Rerun {
    #[arg(value_name = "JOB_ID")]
    pub id: String,
    /// Only the hosts that failed, were unreachable or timed out
    #[arg(long)]
    pub failed: bool,
}

impl Rerun {
    pub fn run(&self, plan: &Plan) -> Result<i32, PlanError> {
        let request = Request::JobRerun {
            id: self.id.clone(),
            failed: self.failed,
        };
        // A local door's user holds the overlord's key: an administrator.
        let answer = engine::serve(plan, None, request, &mut engine::Unwatched)?;
        let Answer::Rerun { id, of, hosts } = &answer else {
            return Err(PlanError::Config(
                "the engine answered a re-run with something else".into(),
            ));
        };
        match plan.json {
            true => crate::display::output::print_doc(plan.out, &answer.document()),
            false => overlord::outln!(
                "JOB_ID: {} (re-run of {} on {} host{})",
                overlord::interrupt::shell_quote(id),
                overlord::interrupt::shell_quote(of),
                hosts.len(),
                if hosts.len() == 1 { "" } else { "s" }
            ),
        }
        Ok(0)
    }
}
