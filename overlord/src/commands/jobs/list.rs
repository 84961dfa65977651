//! `func jobs list`: jobs in the overlord store, newest first — id,
//! function, target, user, started, ended, status and host counts
//! (done/failed/pending, as recorded: `job_status` or `lookup` refresh
//! them). Filters: `--function GLOB`, `--target GLOB`, `--since TIME`,
//! `--until TIME` (on the start time), `--limit N`; `--json`.

use serde_json::json;

use crate::plan::{option_value, split_flag, Plan, PlanError};
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
    pub fn parse(args: &[String]) -> Result<Self, PlanError> {
        let mut list = Self::default();
        let now = crate::store::now();
        let mut i = 0;
        while i < args.len() {
            let (flag, inline) = split_flag(&args[i]);
            let pattern = |v: String| {
                glob::Pattern::new(&v)
                    .map_err(|e| PlanError::Usage(format!("{flag}: bad pattern {v:?}: {e}")))
            };
            let time = |v: String| {
                when::parse(&v, now).ok_or_else(|| {
                    PlanError::Usage(format!(
                        "{flag}: {v:?} is not a time (epoch seconds, 10m/2h/7d ago, or YYYY-MM-DD[THH:MM[:SS]] UTC)"
                    ))
                })
            };
            match flag.as_str() {
                "--function" => list.function = Some(pattern(option_value(args, &mut i, &flag, inline)?)?),
                "--target" => list.target = Some(pattern(option_value(args, &mut i, &flag, inline)?)?),
                "--since" => list.since = Some(time(option_value(args, &mut i, &flag, inline)?)?),
                "--until" => list.until = Some(time(option_value(args, &mut i, &flag, inline)?)?),
                "--limit" => {
                    let v = option_value(args, &mut i, &flag, inline)?;
                    list.limit = Some(v.parse::<usize>().ok().filter(|n| *n > 0).ok_or_else(|| {
                        PlanError::Usage(format!("--limit takes a positive number, not {v:?}"))
                    })?);
                }
                other => {
                    return Err(PlanError::Usage(format!(
                        "jobs list: unknown argument {other:?}\n{}",
                        super::USAGE
                    )))
                }
            }
            i += 1;
        }
        Ok(list)
    }

    fn keeps(&self, meta: &crate::store::JobMeta) -> bool {
        self.function.as_ref().is_none_or(|p| p.matches(&meta.function))
            && self.target.as_ref().is_none_or(|p| p.matches(&meta.spec))
            && self.since.is_none_or(|t| meta.started >= t)
            && self.until.is_none_or(|t| meta.started <= t)
    }

    pub fn run(&self, plan: &Plan) -> Result<i32, PlanError> {
        let store = plan.store();
        let config = |e: crate::store::StoreError| PlanError::Config(e.to_string());
        let ids: Vec<String> = store
            .list()
            .map_err(config)?
            .into_iter()
            .filter(|m| self.keeps(m))
            .take(self.limit.unwrap_or(usize::MAX))
            .map(|m| m.id)
            .collect();
        let records = store.load_many(&ids).map_err(config)?;
        let rows: Vec<serde_json::Value> = records
            .iter()
            .map(|r| {
                let (done, failed, pending) = super::counts(r);
                let m = &r.meta;
                json!({
                    "id": m.id,
                    "function": m.function,
                    "args": m.args,
                    "target": m.spec,
                    "user": m.user,
                    "started": m.started,
                    "ended": m.ended,
                    "status": if m.ended.is_some() { "finished" } else { "running" },
                    "hosts": {"total": r.hosts.len(), "done": done, "failed": failed, "pending": pending},
                })
            })
            .collect();
        if plan.json {
            crate::outln!("{}", serde_json::to_string_pretty(&rows).unwrap_or_default());
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
        for (row, r) in rows.iter().zip(&records) {
            let (done, failed, pending) = super::counts(r);
            table.push([
                r.meta.id.clone(),
                r.meta.function.clone(),
                r.meta.spec.clone(),
                r.meta.user.clone(),
                when::show(r.meta.started),
                r.meta.ended.map(when::show).unwrap_or_else(|| "-".into()),
                row["status"].as_str().unwrap_or("").to_string(),
                format!("{done}/{failed}/{pending}"),
            ]);
        }
        let widths: Vec<usize> = (0..8)
            .map(|c| table.iter().map(|row| row[c].chars().count()).max().unwrap_or(0))
            .collect();
        for row in &table {
            let line: Vec<String> = row
                .iter()
                .zip(&widths)
                .map(|(cell, w)| format!("{cell:<w$}"))
                .collect();
            crate::outln!("{}", line.join("  ").trim_end());
        }
        Ok(0)
    }
}
