//! `func jobs list`: jobs in the overlord store, newest first — id,
//! function, target, user, started, ended, outcome and host counts (as
//! recorded: `job_status` or `lookup` refresh them). Filters: `--function
//! GLOB`, `--target GLOB`, `--schedule GLOB`, `--since TIME`, `--until TIME`
//! (on the start time), `--before JOB_ID`, `--limit N`. `--json` prints the
//! page `GET /api/v1/jobs` answers (`jobs::row`): `{"jobs": [...], "next"}`.

use overlord::engine::{self, Answer, Request};
use overlord::jobs::listing::Query;
use overlord::jobs::row::{JobPage, JobRow};
use overlord::plan::{Plan, PlanError};
use overlord::store::when;

#[derive(clap::Args, Debug, Default, Clone)]
pub struct ListArgs {
    /// Only jobs whose module.method matches GLOB
    #[arg(long, value_name = "GLOB")]
    pub function: Option<String>,
    /// Only jobs whose SPEC matches GLOB
    #[arg(long, value_name = "GLOB")]
    pub target: Option<String>,
    /// Only the runs of schedules whose name matches GLOB
    #[arg(long, value_name = "GLOB")]
    pub schedule: Option<String>,
    /// Only jobs older than JOB_ID (the "next" of a --json page)
    #[arg(long, value_name = "JOB_ID")]
    pub before: Option<String>,
    /// Started at or after TIME (epoch seconds, 10m/2h/7d ago, or YYYY-MM-DD[THH:MM[:SS]] UTC)
    #[arg(long, value_name = "TIME")]
    pub since: Option<String>,
    /// Started at or before TIME
    #[arg(long, value_name = "TIME")]
    pub until: Option<String>,
    /// At most N jobs
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub limit: Option<u64>,
}

#[derive(Debug, Default)]
pub struct List(pub Box<Query>);

impl List {
    pub fn from_args(a: ListArgs) -> Result<Self, PlanError> {
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
        Ok(Self(Box::new(Query {
            function: a.function.map(|v| pattern("--function", v)).transpose()?,
            target: a.target.map(|v| pattern("--target", v)).transpose()?,
            schedule: a.schedule.map(|v| pattern("--schedule", v)).transpose()?,
            before: a.before.filter(|b| !b.is_empty()),
            since: a.since.map(|v| time("--since", v)).transpose()?,
            until: a.until.map(|v| time("--until", v)).transpose()?,
            limit: a.limit.map(|n| n as usize),
            // A local administrator's listing is never cut short.
            max_scan: None,
        })))
    }

    pub fn run(&self, plan: &Plan) -> Result<i32, PlanError> {
        let request = Request::JobsList((*self.0).clone());
        let answer = engine::serve(plan, None, request, &mut engine::Unwatched)?;
        let Answer::Jobs(JobPage { jobs: rows, .. }) = &answer else {
            return Err(PlanError::Config(
                "the engine answered jobs list with something else".into(),
            ));
        };
        if plan.json {
            crate::display::output::print_doc(plan.out, &answer.document());
            return Ok(0);
        }
        if rows.is_empty() {
            overlord::outln!("no jobs in {}", plan.store().shown());
            return Ok(0);
        }
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
        for r in rows {
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
