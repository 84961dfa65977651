//! `func store status | import` (DESIGN §15). `status`: the backend, where
//! it is (the redb file, or the PostgreSQL URL without its password), the
//! schema version and counts. `import`: copies the local redb history (jobs,
//! hosts, results, batches) and schedules into the configured shared store;
//! jobs and schedules already there are left alone, so running it twice
//! changes nothing.

use serde_json::json;

use crate::cli::StoreCommand;
use overlord::plan::{Plan, PlanError};
use overlord::store::Store as Backend;

#[derive(Debug)]
pub struct Store(pub StoreCommand);

fn failed(e: overlord::store::StoreError) -> PlanError {
    e.into()
}

impl Store {
    pub fn run(&self, plan: &Plan) -> Result<i32, PlanError> {
        match self.0 {
            StoreCommand::Status => status(plan),
            StoreCommand::Import => import(plan),
        }
    }
}

fn status(plan: &Plan) -> Result<i32, PlanError> {
    let store = plan.store();
    let status = store
        .status(overlord::targets::all_minions(&plan.root).len())
        .map_err(failed)?;
    let location = store.shown();
    if plan.json {
        crate::display::output::print_doc(
            plan.out,
            &json!({"backend": status.backend, "location": location, "schema_version": status.schema_version, "counts": status.counts}),
        );
        return Ok(0);
    }
    overlord::outln!("backend:   {}", status.backend);
    overlord::outln!("location:  {}", crate::display::output::shown_line(&location));
    if let Some(v) = status.schema_version {
        overlord::outln!("schema:    version {v}");
    }
    for (k, v) in &status.counts {
        overlord::outln!("{:<10} {v}", format!("{k}:"));
    }
    Ok(0)
}

fn import(plan: &Plan) -> Result<i32, PlanError> {
    let local = Backend::embedded(&plan.root, f64::MAX);
    let (jobs, written, batches) = plan.store().import_history(&local).map_err(failed)?;
    let (schedules, copied) = overlord_schedule::manage::import(&local, &plan.store())?;
    let mut out = crate::display::output::Lines::new(plan.json, plan.out);
    out.field("jobs", json!(jobs));
    out.field("imported", json!(written));
    out.field("already_there", json!(jobs - written));
    out.field("batches", json!(batches));
    out.field("schedules", json!(schedules));
    out.field("schedules_imported", json!(copied));
    out.line(format!(
        "{jobs} jobs in {}: {written} imported, {} already there ({batches} batch records); {schedules} schedules, {copied} imported",
        local.shown(),
        jobs - written
    ));
    Ok(out.finish(0))
}
