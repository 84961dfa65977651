//! A job as a listing shows it, one shape for every door: `func --json jobs
//! list` prints the page `GET /api/v1/jobs` answers (`{"jobs": [rows],
//! "next"}`), and the web UI's jobs page reads it.

use serde::Serialize;

use crate::store::{Cursor, JobRecord, JobStore, StoreError};

/// One job of a listing.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct JobRow {
    pub id: String,
    /// `module.method`.
    pub function: String,
    /// Its arguments, as sent.
    #[schema(value_type = Vec<serde_json::Value>)]
    pub args: serde_json::Value,
    /// The SPEC it was started with.
    pub target: String,
    /// Who started it (`cli:USER`, `api:NAME`).
    pub user: String,
    /// Epoch seconds.
    pub started: f64,
    pub ended: Option<f64>,
    pub hosts: usize,
    pub batch: bool,
    /// Whether every host is finished (its record is final; an unfinished
    /// job's counts are as last recorded, its hosts not asked now).
    pub finished: bool,
    /// Its hosts by how they ended (and those still pending).
    pub counts: super::Tally,
    /// `ok`, `failed`, `stopped`, `interrupted` (a batch nobody drives) or
    /// `running`.
    pub outcome: &'static str,
    /// The schedule whose run it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schedule: Option<String>,
    /// The job it re-runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rerun_of: Option<String>,
}

/// A page of jobs, newest first.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct JobPage {
    pub jobs: Vec<JobRow>,
    /// The `before` of the next page (null: this is the last).
    pub next: Option<String>,
}

impl JobRow {
    /// The row of `record` as `store` holds it: an unfinished batch nobody
    /// drives reads as `interrupted` (`batch::control::interrupted`).
    pub fn of(store: &dyn JobStore, record: &JobRecord) -> Self {
        let tally = super::tally(record);
        let meta = &record.meta;
        let interrupted =
            meta.batch && meta.ended.is_none() && crate::batch::control::interrupted(store, &meta.id);
        let outcome = if interrupted {
            "interrupted"
        } else if meta.ended.is_some() || tally.pending == 0 {
            tally.outcome()
        } else {
            "running"
        };
        JobRow {
            id: meta.id.clone(),
            function: meta.function.clone(),
            args: meta.args_json(),
            target: meta.spec.clone(),
            user: meta.user.clone(),
            started: meta.started,
            ended: meta.ended,
            hosts: meta.hosts,
            batch: meta.batch,
            finished: meta.ended.is_some(),
            counts: tally,
            outcome,
            schedule: meta.schedule.clone(),
            rerun_of: meta.rerun_of.clone(),
        }
    }
}

/// Where a page below job `id` starts: its start time (from the store, or
/// from the id's own stamp if the job expired meanwhile); `None`: `id` is
/// not a job id.
pub fn cursor_below(store: &dyn JobStore, id: &str) -> Result<Option<Cursor>, StoreError> {
    if let Some(rec) = store.load(id)? {
        return Ok(Some((rec.meta.started, id.to_string())));
    }
    Ok(id
        .rsplit('-')
        .next()
        .and_then(|t| t.parse::<f64>().ok())
        .filter(|t| t.is_finite())
        .map(|t| (t, id.to_string())))
}

impl super::Tally {
    /// "3 ok, 1 failed, 2 pending": the counts that are not zero.
    pub fn summary(&self) -> String {
        let parts: Vec<String> = [
            ("ok", self.ok),
            ("failed", self.failed),
            ("unreachable", self.unreachable),
            ("abandoned", self.abandoned),
            ("pending", self.pending),
        ]
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(what, n)| format!("{n} {what}"))
        .collect();
        if parts.is_empty() {
            "no hosts".to_string()
        } else {
            parts.join(", ")
        }
    }
}
