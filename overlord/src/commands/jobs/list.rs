//! `func jobs list`: jobs in the overlord store, newest first — id,
//! function, target, user, started, ended, status and host counts
//! (done/failed/pending, as recorded: `job_status` or `lookup` refresh
//! them). Filters: `--function GLOB`, `--target GLOB`, `--since TIME`,
//! `--until TIME` (on the start time), `--limit N`; `--json`.

use serde_json::json;

use crate::plan::{Plan, PlanError};
use crate::when;

#[derive(Debug, Default)]
pub struct List {
    pub function: Option<glob::Pattern>,
    pub target: Option<glob::Pattern>,
    pub since: Option<f64>,
    pub until: Option<f64>,
    pub limit: Option<usize>,
}

impl List {
    pub fn from_args(a: crate::cli::JobsListArgs) -> Result<Self, PlanError> {
        let now = crate::store::now();
        let pattern = |flag: &str, v: String| {
            crate::gate::jobs::glob(flag.trim_start_matches('-'), &v).map_err(PlanError::from)
        };
        let time = |flag: &str, v: String| {
            when::parse(&v, now).ok_or_else(|| {
                PlanError::Usage(format!(
                    "{flag}: {v:?} is not a time (epoch seconds, 10m/2h/7d ago, or YYYY-MM-DD[THH:MM[:SS]] UTC)"
                ))
            })
        };
        Ok(Self {
            function: a.function.map(|v| pattern("--function", v)).transpose()?,
            target: a.target.map(|v| pattern("--target", v)).transpose()?,
            since: a.since.map(|v| time("--since", v)).transpose()?,
            until: a.until.map(|v| time("--until", v)).transpose()?,
            limit: a.limit.map(|n| n as usize),
        })
    }

    fn keeps(&self, meta: &crate::store::JobMeta) -> bool {
        self.function.as_ref().is_none_or(|p| p.matches(&meta.function))
            && self.target.as_ref().is_none_or(|p| p.matches(&meta.spec))
            && self.since.is_none_or(|t| meta.started >= t)
            && self.until.is_none_or(|t| meta.started <= t)
    }

    /// The ids of the matching jobs, newest first, up to `--limit`: read a
    /// page at a time from the store (newest first), stopping once enough
    /// matched or the jobs are older than `--since`.
    fn matching_ids(
        &self,
        store: &dyn crate::store::JobStore,
    ) -> Result<Vec<String>, crate::store::StoreError> {
        const PAGE: usize = 500;
        let limit = self.limit.unwrap_or(usize::MAX);
        let mut ids = Vec::new();
        let mut cursor: Option<crate::store::Cursor> = None;
        while ids.len() < limit {
            let page = store.list_page(PAGE, cursor.as_ref())?;
            let Some(last) = page.last() else { break };
            cursor = Some((last.started, last.id.clone()));
            let older = self.since.is_some_and(|t| last.started < t);
            ids.extend(
                page.into_iter()
                    .filter(|m| self.keeps(m))
                    .map(|m| m.id)
                    .take(limit - ids.len()),
            );
            if older {
                break;
            }
        }
        Ok(ids)
    }

    pub fn run(&self, plan: &Plan) -> Result<i32, PlanError> {
        let store = plan.store();
        let config = PlanError::from;
        let ids = self.matching_ids(&store).map_err(config)?;
        let records = crate::store::JobStore::load_many(&store, &ids).map_err(config)?;
        // Unfinished batches nobody drives read as interrupted, not running.
        let interrupted: std::collections::HashSet<String> = records
            .iter()
            .filter(|r| r.meta.batch && r.meta.ended.is_none())
            .filter(|r| crate::batch::control::interrupted(&store, &r.meta.id))
            .map(|r| r.meta.id.clone())
            .collect();
        let status = |m: &crate::store::JobMeta| match m.ended {
            Some(_) => "finished",
            None if interrupted.contains(&m.id) => "interrupted",
            None => "running?",
        };
        let rows: Vec<serde_json::Value> = records
            .iter()
            .map(|r| {
                let (done, failed, pending) = crate::jobs::counts(r);
                let m = &r.meta;
                json!({
                    "id": m.id,
                    "function": m.function,
                    "args": m.args_json(),
                    "target": m.spec,
                    "user": m.user,
                    "started": m.started,
                    "ended": m.ended,
                    "status": match status(m) { "running?" => "running", s => s },
                    // A finished job's record is final; an unfinished one is
                    // as last recorded: its hosts were not asked now.
                    "refreshed": m.ended.is_some(),
                    "hosts": {"total": r.hosts.len(), "done": done, "failed": failed, "pending": pending},
                })
            })
            .collect();
        if plan.json {
            crate::output::print_doc(plan.out, &rows);
            return Ok(0);
        }
        if records.is_empty() {
            crate::outln!("no jobs in {}", store.shown());
            return Ok(0);
        }
        let mut table = vec![[
            "JOB_ID".to_string(),
            "FUNCTION".into(),
            "TARGET".into(),
            "USER".into(),
            "STARTED (UTC)".into(),
            "ENDED (UTC)".into(),
            "STATUS".into(),
            "DONE/FAILED/PENDING".into(),
        ]];
        for r in &records {
            let (done, failed, pending) = crate::jobs::counts(r);
            table.push([
                r.meta.id.clone(),
                r.meta.function.clone(),
                r.meta.spec.clone(),
                r.meta.user.clone(),
                when::show(r.meta.started),
                r.meta.ended.map(when::show).unwrap_or_else(|| "-".into()),
                status(&r.meta).to_string(),
                format!("{done}/{failed}/{pending}"),
            ]);
        }
        // Cells are terminal-safe and one line each.
        crate::output::print_table(&mut table);
        if records.iter().any(|r| status(&r.meta) == "running?") {
            crate::outln!(
                "running? = as last recorded, its hosts not asked now: func job_status ID (or jobs lookup ID) refreshes it"
            );
        }
        if let Some(id) = records
            .iter()
            .map(|r| &r.meta.id)
            .find(|id| interrupted.contains(*id))
        {
            crate::outln!(
                "interrupted = a batch nobody drives (Ctrl-C, or its driver died): func batch recover {} resumes it",
                crate::interrupt::shell_quote(id)
            );
        }
        Ok(0)
    }
}
