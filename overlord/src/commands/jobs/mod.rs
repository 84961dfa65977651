//! `func jobs list | lookup | active | kill`: the overlord's jobs, what
//! Salt users know from the `jobs` runner and `saltutil.kill_job`, which
//! Func never had. One file per subcommand.

pub mod active;
pub mod kill;
pub mod list;
pub mod lookup;

use crate::jobs::{self, Status};
use crate::plan::{Globals, Plan, PlanError};
use crate::store::{HostState, JobRecord};

/// The subcommands that follow `jobs` (a word there is otherwise a SPEC).
pub const SUBCOMMANDS: [&str; 4] = ["list", "lookup", "active", "kill"];

#[derive(Debug)]
pub enum Jobs {
    List(list::List),
    Lookup(lookup::Lookup),
    Active(active::Active),
    Kill(kill::Kill),
}

impl Jobs {
    pub fn parse(rest: &[String], globals: &mut Globals) -> Result<Self, PlanError> {
        let words = super::words(rest, globals);
        let (sub, args) = words
            .split_first()
            .ok_or_else(|| PlanError::Usage(USAGE.into()))?;
        Ok(match sub.as_str() {
            "list" => Jobs::List(list::List::parse(args)?),
            "lookup" => Jobs::Lookup(lookup::Lookup::parse(args)?),
            "active" => Jobs::Active(active::Active::parse(args)?),
            "kill" => Jobs::Kill(kill::Kill::parse(args)?),
            other => {
                return Err(PlanError::Usage(format!(
                    "jobs: unknown subcommand {other:?}\n{USAGE}"
                )))
            }
        })
    }

    pub fn run(&self, plan: &Plan) -> Result<i32, PlanError> {
        match self {
            Jobs::List(c) => c.run(plan),
            Jobs::Lookup(c) => c.run(plan),
            Jobs::Active(c) => c.run(plan),
            Jobs::Kill(c) => c.run(plan),
        }
    }
}

pub const USAGE: &str =
    "usage: func jobs list [--function GLOB] [--target GLOB] [--since TIME] [--until TIME] [--limit N]
       func jobs lookup JOB_ID [--missing]
       func jobs active [SPEC]
       func jobs kill JOB_ID [--signal NAME]";

/// Host counts of a job as the store has it: (done, failed, pending).
pub fn counts(record: &JobRecord) -> (usize, usize, usize) {
    let (mut done, mut failed, mut pending) = (0, 0, 0);
    for entry in record.hosts.values() {
        match (&entry.state, &entry.result_xml) {
            (HostState::Finished, Some(xml))
                if !common::outcome::ok(&record.meta.function, &jobs::decode_result(xml)) =>
            {
                failed += 1
            }
            (HostState::Finished, _) => done += 1,
            _ => pending += 1,
        }
    }
    (done, failed, pending)
}

/// The status of job `id` after asking its unfinished hosts.
pub fn refreshed(plan: &Plan, id: &str) -> Result<Status, PlanError> {
    super::job_status::check(plan, id, false)
}

/// One JOB_ID argument, or a usage error naming `what`.
pub fn one_id(ids: &[String], what: &str) -> Result<String, PlanError> {
    match ids {
        [id] if !id.is_empty() => Ok(id.clone()),
        _ => Err(PlanError::Usage(format!("usage: func jobs {what}"))),
    }
}
