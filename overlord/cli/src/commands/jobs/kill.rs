//! `func jobs kill JOB_ID [--signal NAME]`: signals the job on every host
//! still running it (`jobs.signal_job`, which reaches the job's whole
//! process group; default KILL). A driver still dispatching gets until the
//! deadline to finish (so every job it started is signalled); past that it
//! is stopped and the hosts it had not reached end as killed before dispatch.
//! Then the job is polled until the signalled hosts have ended (the minions
//! record them as killed, and by whom), at most `-t` seconds (default 10).

use std::time::{Duration, Instant};

use overlord::jobs::{self, kill::Signalled};
use overlord::plan::{Plan, PlanError};

#[derive(Debug)]
pub struct Kill {
    pub id: String,
    pub signal: String,
}

impl Kill {
    pub fn new(id: String, signal: String) -> Result<Self, PlanError> {
        overlord::gate::jobs::signal(&signal)?;
        Ok(Self { id, signal })
    }

    pub fn run(&self, plan: &Plan) -> Result<i32, PlanError> {
        let signal = overlord::gate::jobs::signal(&self.signal)?;
        let limit = Duration::from_secs_f64(plan.timeout.unwrap_or(10.0));
        let who = format!("{} via func jobs kill", jobs::current_user());
        jobs::kill::settle_dispatch(&plan.store(), &self.id, Instant::now() + limit, signal, &who)?;
        let status = overlord::status::refreshed(plan, &self.id)?;
        let Some(record) = &status.record else {
            match plan.json {
                true => crate::display::show_status(plan, &self.id, &status),
                false => overlord::errln!(
                    "func jobs kill: no job {} (unknown, or expired): nothing to kill (func jobs list shows the jobs)",
                    overlord::interrupt::shell_quote(&self.id)
                ),
            }
            return Ok(1);
        };
        if status.finished() {
            let q = overlord::interrupt::shell_quote(&self.id);
            match plan.json {
                // The same document as every `jobs kill --json`: the job's status.
                true => crate::display::show_status(plan, &self.id, &status),
                false => overlord::outln!(
                    "job {q} already finished: nothing to kill (func job_status {q} shows its results)"
                ),
            }
            return Ok(0);
        }
        let calls = jobs::kill::signal_calls(&plan.root, record, &self.signal);
        let mut failed = false;
        if !calls.is_empty() {
            let mut poller = overlord::status::new_poller(plan).map_err(PlanError::Config)?;
            let mut replies = poller.call_each(calls);
            replies.sort_by(|a, b| a.0.cmp(&b.0));
            for (host, reply) in replies {
                let took = jobs::kill::signalled(reply);
                failed |= !took.sent();
                let line = match &took {
                    Signalled::Failed(v) => crate::display::output::error_line(v),
                    other => other.line(),
                };
                overlord::errln!("{host}: {line}");
            }
        }
        // The minions now report the signalled jobs as ended; collect that.
        let status = overlord::status::watch(plan, &self.id, Some(Instant::now() + limit), |_| {})?;
        crate::display::show_status(plan, &self.id, &status);
        Ok(i32::from(failed || !status.finished()))
    }
}
