//! `func jobs list | lookup | active | kill | rerun`: the overlord's jobs, what
//! Salt users know from the `jobs` runner and `saltutil.kill_job`, which
//! Func never had. One file per subcommand.

pub mod active;
pub mod kill;
pub mod list;
pub mod lookup;
pub mod rerun;

use overlord::plan::{Plan, PlanError};

#[derive(Debug)]
pub enum Jobs {
    List(list::List),
    Lookup(lookup::Lookup),
    Active(active::Active),
    Kill(kill::Kill),
    Rerun(rerun::Rerun),
}

impl Jobs {
    pub fn from_cli(c: crate::cli::JobsCommand) -> Result<Self, PlanError> {
        use crate::cli::JobsCommand as C;
        Ok(match c {
            C::List(args) => Jobs::List(list::List::from_args(args)?),
            C::Lookup { id, missing } => Jobs::Lookup(lookup::Lookup { id, missing }),
            C::Active { spec } => Jobs::Active(active::Active { spec }),
            C::Kill { id, signal } => Jobs::Kill(kill::Kill::new(id, signal)?),
            C::Rerun { id, failed } => Jobs::Rerun(rerun::Rerun { id, failed }),
        })
    }

    pub fn run(&self, plan: &Plan) -> Result<i32, PlanError> {
        match self {
            Jobs::List(c) => c.run(plan),
            Jobs::Lookup(c) => c.run(plan),
            Jobs::Active(c) => c.run(plan),
            Jobs::Kill(c) => c.run(plan),
            Jobs::Rerun(c) => c.run(plan),
        }
    }
}
