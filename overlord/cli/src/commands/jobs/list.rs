//! `func jobs list`: jobs in the overlord store, newest first — id,
//! function, target, user, started, ended, outcome and host counts (as
//! recorded: `job_status` or `lookup` refresh them). Filters: `--function
//! GLOB`, `--target GLOB`, `--schedule GLOB`, `--since TIME`, `--until TIME`
//! (on the start time), `--before JOB_ID`, `--limit N`. `--json` prints the
//! page `GET /api/v1/jobs` answers (`jobs::row`): `{"jobs": [...], "next"}`.

use overlord::jobs::row::{JobPage, JobRow};
use overlord::plan::{Plan, PlanError};
use overlord::when;

#[derive(Debug, Default)]
pub struct List {
    pub function: Option<glob::Pattern>,
    pub target: Option<glob::Pattern>,
    pub schedule: Option<glob::Pattern>,
    pub before: Option<String>,
    pub since: Option<f64>,
    pub until: Option<f64>,
    pub limit: Option<usize>,
}

impl List {
    pub fn from_args(a: crate::cli::JobsListArgs) -> Result<Self, PlanError> {
        let now = overlord::store::now();
        let pattern = |flag: &str, v: String| {
            overlord::gate::jobs::glob(flag.trim_start_matches('-'), &v).map_err(PlanError::from)
        };
        let time = |flag: &str, v: String| {
            when::parse(&v, now).ok_or_else(|| {
                PlanError::usage(format!(
                    "{flag}: {v:?} is not a time (epoch seconds, 10m/2h/7d ago, or YYYY-MM-DD[THH:MM[:SS]] UTC)"
                ))
            })
        };
        Ok(Self {
            function: a.function.map(|v| pattern("--function", v)).transpose()?,
            target: a.target.map(|v| pattern("--target", v)).transpose()?,
            schedule: a.schedule.map(|v| pattern("--schedule", v)).transpose()?,
            before: a.before.filter(|b| !b.is_empty()),
            since: a.since.map(|v| time("--since", v)).transpose()?,
            until: a.until.map(|v| time("--until", v)).transpose()?,
            limit: a.limit.map(|n| n as usize),
        })
    }

    fn keeps(&self, meta: &overlord::store::JobMeta) -> bool {
        self.function.as_ref().is_none_or(|p| p.matches(&meta.function))
            && self.target.as_ref().is_none_or(|p| p.matches(&meta.spec))
            && self
                .schedule
                .as_ref()
                .is_none_or(|p| meta.schedule.as_deref().is_some_and(|s| p.matches(s)))
            && self.since.is_none_or(|t| meta.started >= t)
            && self.until.is_none_or(|t| meta.started <= t)
    }

    /// The ids of the matching jobs, newest first (below `--before`), up
    /// to `--limit` and one more (whether there is a next page): read a
    /// page at a time from the store (newest first), stopping once enough
    /// matched or the jobs are older than `--since`.
    fn matching_ids(
        &self,
        store: &dyn overlord::store::JobStore,
        below: Option<overlord::store::Cursor>,
    ) -> Result<Vec<String>, overlord::store::StoreError> {
        const PAGE: usize = 500;
        let limit = self.limit.map_or(usize::MAX, |l| l.saturating_add(1));
        let mut ids = Vec::new();
        let mut cursor = below;
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
        let below = match &self.before {
            Some(id) => Some(
                overlord::jobs::row::cursor_below(&store, id)
                    .map_err(config)?
                    .ok_or_else(|| PlanError::usage(format!("--before: {id:?} is not a job id")))?,
            ),
            None => None,
        };
        let mut ids = self.matching_ids(&store, below).map_err(config)?;
        let more = self.limit.is_some_and(|l| ids.len() > l);
        ids.truncate(self.limit.unwrap_or(usize::MAX));
        let records = overlord::store::JobStore::load_many(&store, &ids).map_err(config)?;
        // Unfinished batches nobody drives read as interrupted, not running.
        let rows: Vec<JobRow> = records.iter().map(|r| JobRow::of(&store, r)).collect();
        if plan.json {
            let next = rows.last().filter(|_| more).map(|r| r.id.clone());
            crate::display::output::print_doc(plan.out, &JobPage { jobs: rows, next });
            return Ok(0);
        }
        if records.is_empty() {
            overlord::outln!("no jobs in {}", store.shown());
            return Ok(0);
        }
        // A finished job's record is final; an unfinished one is as last
        // recorded: its hosts were not asked now ("running?").
        let status = |r: &JobRow| match r.outcome {
            "running" => "running?",
            o => o,
        };
        let mut table = vec![[
            "JOB_ID".to_string(),
            "FUNCTION".into(),
            "TARGET".into(),
            "USER".into(),
            "STARTED (UTC)".into(),
            "ENDED (UTC)".into(),
            "OUTCOME".into(),
            "HOSTS".into(),
        ]];
        for r in &rows {
            table.push([
                r.id.clone(),
                r.function.clone(),
                r.target.clone(),
                r.user.clone(),
                when::show(r.started),
                r.ended.map(when::show).unwrap_or_else(|| "-".into()),
                status(r).to_string(),
                r.counts.summary(),
            ]);
        }
        // Cells are terminal-safe and one line each.
        crate::display::output::print_table(&mut table);
        if rows.iter().any(|r| status(r) == "running?") {
            overlord::outln!(
                "running? = as last recorded, its hosts not asked now: func job_status ID (or jobs lookup ID) refreshes it"
            );
        }
        if let Some(id) = rows.iter().find(|r| r.outcome == "interrupted").map(|r| &r.id) {
            overlord::outln!(
                "interrupted = a batch nobody drives (Ctrl-C, or its driver died): func batch recover {} resumes it",
                overlord::interrupt::shell_quote(id)
            );
        }
        Ok(0)
    }
}
