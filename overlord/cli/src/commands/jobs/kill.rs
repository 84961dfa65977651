//! `func jobs kill JOB_ID [--signal NAME]`: signals the job on every host
//! still running it (`jobs.signal_job`, which reaches the job's whole
//! process group; default KILL). A driver still dispatching gets until the
//! deadline to finish (so every job it started is signalled); past that it
//! is stopped and the hosts it had not reached end as killed before dispatch.
//! Then the job is polled until the signalled hosts have ended (the minions
//! record them as killed, and by whom), at most `-t` seconds (default 10).

use overlord::engine::{self, Answer, Request};
use overlord::jobs::kill::Signalled;
use overlord::plan::{Plan, PlanError};

#[derive(clap::Args, Debug)]
pub struct Kill {
    #[arg(value_name = "JOB_ID")]
    pub id: String,
    /// Signal to send (name or number)
    #[arg(short = 's', long, value_name = "NAME", default_value = "KILL")]
    pub signal: String,
}

impl Kill {
    pub fn run(&self, plan: &Plan) -> Result<i32, PlanError> {
        let request = Request::JobKill {
            id: self.id.clone(),
            signal: self.signal.clone(),
            wait: true,
        };
        let answer = engine::serve(plan, None, request, &mut engine::Unwatched)?;
        let Answer::Killed {
            id,
            status,
            signalled,
        } = &answer
        else {
            return Err(PlanError::Config(
                "the engine answered a kill with something else".into(),
            ));
        };
        let q = overlord::interrupt::shell_quote(id);
        match (signalled, plan.json) {
            // The same document as every `jobs kill --json`: the job's status.
            (None, true) => crate::display::show_status(plan, id, status),
            (None, false) if status.record.is_none() => overlord::errln!(
                "func jobs kill: no job {q} (unknown, or expired): nothing to kill (func jobs list shows the jobs)"
            ),
            (None, false) => overlord::outln!(
                "job {q} already finished: nothing to kill (func job_status {q} shows its results)"
            ),
            (Some(replies), _) => {
                for (host, took) in replies {
                    let line = match took {
                        Signalled::Failed(v) => overlord::out::error_line(v),
                        other => other.line(),
                    };
                    overlord::errln!("{host}: {line}");
                }
                crate::display::show_status(plan, id, status);
            }
        }
        Ok(answer.exit_code())
    }
}
