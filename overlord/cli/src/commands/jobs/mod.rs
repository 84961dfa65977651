//! `func jobs list | lookup | active | kill | rerun`: the overlord's jobs, what
//! Salt users know from the `jobs` runner and `saltutil.kill_job`, which
//! Func never had. One file per subcommand.

pub mod active;
pub mod kill;
pub mod list;
pub mod lookup;
pub mod rerun;

use overlord::plan::{Plan, PlanError};

/// A `func jobs` subcommand: its arguments (clap, in its own file) and
/// what it does. A new subcommand is a variant here and a file.
#[derive(clap::Subcommand, Debug)]
pub enum Jobs {
    /// Jobs in the overlord's store, newest first
    List(list::ListArgs),
    /// One job's hosts and results (asking the unfinished hosts)
    Lookup(lookup::Lookup),
    /// What the minions run right now
    Active(active::Active),
    /// Kill a job on every host still running it
    Kill(kill::Kill),
    /// Run a job again as a new job (the same signed request)
    Rerun(rerun::Rerun),
}

impl Jobs {
    /// Checks what clap could not (a signal's name, globs, times) before
    /// anything is done.
    pub fn checked(self) -> Result<Self, PlanError> {
        match &self {
            Jobs::Kill(k) => overlord::gate::jobs::signal(&k.signal).map(|_| ())?,
            Jobs::List(args) => list::List::from_args(args.clone()).map(|_| ())?,
            _ => {}
        }
        Ok(self)
    }

    pub fn run(&self, plan: &Plan) -> Result<i32, PlanError> {
        match self {
            Jobs::List(args) => list::List::from_args(args.clone())?.run(plan),
            Jobs::Lookup(c) => c.run(plan),
            Jobs::Active(c) => c.run(plan),
            Jobs::Kill(c) => c.run(plan),
            Jobs::Rerun(c) => c.run(plan),
        }
    }

    /// The job id it names (`last` is resolved before it runs).
    pub fn job_id(&mut self) -> Option<&mut String> {
        match self {
            Jobs::Lookup(c) => Some(&mut c.id),
            Jobs::Kill(c) => Some(&mut c.id),
            Jobs::Rerun(c) => Some(&mut c.id),
            Jobs::List(_) | Jobs::Active(_) => None,
        }
    }

    /// What the audit trail calls it, if it changes something.
    pub fn audited(&self) -> Option<String> {
        match self {
            Jobs::Kill(k) => Some(format!("kill {}", k.id)),
            Jobs::Rerun(r) => Some(format!("rerun {}", r.id)),
            _ => None,
        }
    }
}
