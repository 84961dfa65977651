//! `func jobs lookup JOB_ID [--missing]`: per-host results like
//! `job_status` (unfinished hosts are asked first); `--missing` lists only
//! the hosts that have not returned, with why: not dispatched yet, running,
//! or unreachable (and the error).

use overlord::engine::{self, Answer, Request};
use overlord::jobs;
use overlord::plan::{Plan, PlanError};

#[derive(clap::Args, Debug)]
pub struct Lookup {
    #[arg(value_name = "JOB_ID")]
    pub id: String,
    /// Only the hosts that have not answered
    #[arg(long)]
    pub missing: bool,
}

impl Lookup {
    pub fn run(&self, plan: &Plan) -> Result<i32, PlanError> {
        if !self.missing {
            return crate::commands::job_status::show(plan, &self.id, false);
        }
        let request = Request::JobStatus {
            id: self.id.clone(),
            look: engine::Look::Asked,
        };
        let Answer::Status { status, .. } = engine::serve(plan, None, request, &mut engine::Unwatched)?
        else {
            return Err(PlanError::Config(
                "the engine answered a status with something else".into(),
            ));
        };
        if status.code == jobs::LOST_IN_SPACE {
            crate::display::show_status(plan, &self.id, &status);
            return Ok(1);
        }
        if plan.json {
            crate::display::output::print_doc(plan.out, &status.waiting);
        } else if status.waiting.is_empty() {
            overlord::outln!(
                "nothing missing: all {} hosts have answered",
                status.results.len()
            );
        } else {
            for (host, why) in &status.waiting {
                overlord::outln!("{host}: {}", crate::display::output::shown_line(why));
            }
        }
        Ok(0)
    }
}
