//! `func store status | import` (DESIGN §15). `status`: the backend, where
//! it is (the redb file, or the PostgreSQL URL without its password), the
//! schema version and counts. `import`: copies the local redb history (jobs,
//! hosts, results, batches) into the configured shared store; jobs already
//! there are left alone, so running it twice changes nothing.

use serde_json::json;

use crate::cli::StoreCommand;
use crate::plan::{Plan, PlanError};
use crate::store::{JobStore as _, Store as Backend};

#[derive(Debug)]
pub struct Store(pub StoreCommand);

fn failed(e: impl std::fmt::Display) -> PlanError {
    PlanError::Config(e.to_string())
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
    let (backend, version, counts) = match &store {
        Backend::Postgres(pg) => {
            let (version, counts) = pg.status().map_err(failed)?;
            let counts: serde_json::Map<String, serde_json::Value> = counts
                .into_iter()
                .map(|(k, v)| (k.to_string(), json!(v)))
                .collect();
            ("postgresql", Some(version), counts)
        }
        Backend::Redb(_) => {
            let jobs = store.list().map_err(failed)?;
            let batches = jobs.iter().filter(|m| m.batch).count();
            let mut counts = serde_json::Map::new();
            counts.insert("jobs".into(), json!(jobs.len()));
            counts.insert("batches".into(), json!(batches));
            counts.insert(
                "minions".into(),
                json!(crate::targets::all_minions(&plan.root).len()),
            );
            ("redb", None, counts)
        }
        Backend::Broken(why) => return Err(PlanError::Config(why.clone())),
    };
    let location = store.shown();
    if plan.json {
        crate::output::print_doc(
            plan.out,
            &json!({"backend": backend, "location": location, "schema_version": version, "counts": counts}),
        );
        return Ok(0);
    }
    crate::outln!("backend:   {backend}");
    crate::outln!("location:  {}", crate::output::shown_line(&location));
    if let Some(v) = version {
        crate::outln!("schema:    version {v}");
    }
    for (k, v) in &counts {
        crate::outln!("{:<10} {v}", format!("{k}:"));
    }
    Ok(0)
}

fn import(plan: &Plan) -> Result<i32, PlanError> {
    let Backend::Postgres(pg) = plan.store() else {
        return Err(PlanError::Config(
            "no shared store is configured ([store] url in overlord.conf): nothing to import into".into(),
        ));
    };
    let local = Backend::embedded(&plan.root, f64::MAX);
    let metas = local.list().map_err(failed)?;
    let (mut written, mut batches) = (0, 0);
    for chunk in metas.chunks(500) {
        let ids: Vec<String> = chunk.iter().map(|m| m.id.clone()).collect();
        let records = local.load_many(&ids).map_err(failed)?;
        written += pg.import(&records).map_err(failed)?;
        for m in chunk.iter().filter(|m| m.batch) {
            if let Some(rec) = local.batch(&m.id).map_err(failed)? {
                pg.import_batch(&m.id, &rec).map_err(failed)?;
                batches += 1;
            }
        }
    }
    let mut out = crate::output::Lines::new(plan.json, plan.out);
    out.field("jobs", json!(metas.len()));
    out.field("imported", json!(written));
    out.field("already_there", json!(metas.len() - written));
    out.field("batches", json!(batches));
    out.line(format!(
        "{} jobs in {}: {written} imported, {} already there ({batches} batch records)",
        metas.len(),
        local.shown(),
        metas.len() - written
    ));
    Ok(out.finish(0))
}
