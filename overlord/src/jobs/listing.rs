//! A page of the job listing, for every door (`func jobs list`, `GET
//! /api/v1/jobs`): a walk down the store's start-time index keeping the
//! jobs the filters match and the caller may see (its rights reach every
//! host with the job's function), newest first, with the cursor of the
//! next page. A walk is bounded (`max_scan` jobs looked at), so a filter
//! that matches nothing cannot make one request read the whole store.

use std::collections::{BTreeSet, HashMap};

use crate::gate::rights::Rights;
use crate::gate::GateError;
use crate::store::{Cursor, JobMeta, JobRecord, JobStore};

use super::row::{JobPage, JobRow};

/// What to list.
#[derive(Debug, Default, Clone)]
pub struct Query {
    pub function: Option<glob::Pattern>,
    pub target: Option<glob::Pattern>,
    pub schedule: Option<glob::Pattern>,
    /// Started at or after / at or before (epoch seconds).
    pub since: Option<f64>,
    pub until: Option<f64>,
    /// Rows at most (`None`: every one).
    pub limit: Option<usize>,
    /// Below this job (the `next` of the page above).
    pub before: Option<String>,
    /// Jobs looked at, at most (`None`: no bound).
    pub max_scan: Option<usize>,
}

impl Query {
    fn filters_nothing(&self) -> bool {
        self.function.is_none()
            && self.target.is_none()
            && self.schedule.is_none()
            && self.since.is_none()
            && self.until.is_none()
    }

    fn keeps(&self, m: &JobMeta) -> bool {
        self.function.as_ref().is_none_or(|g| g.matches(&m.function))
            && self.target.as_ref().is_none_or(|g| g.matches(&m.spec))
            && self
                .schedule
                .as_ref()
                .is_none_or(|g| m.schedule.as_deref().is_some_and(|s| g.matches(s)))
            && self.since.is_none_or(|t| m.started >= t)
            && self.until.is_none_or(|t| m.started <= t)
    }
}

/// One walk down the index for one caller.
struct Walk<'a> {
    store: &'a dyn JobStore,
    root: &'a common::paths::Root,
    rights: &'a Rights,
    query: &'a Query,
    /// What the rights reach, per function: judged once per walk.
    reach: HashMap<String, BTreeSet<String>>,
}

/// The page `query` asks for, as `rights` may see it: up to `limit` rows
/// and the `next` cursor (below the last row when the page is full and
/// more jobs are below; below the last job looked at when the scan bound
/// cut the walk short; else none).
pub fn page(
    store: &dyn JobStore,
    root: &common::paths::Root,
    rights: &Rights,
    query: &Query,
) -> Result<JobPage, GateError> {
    let mut walk = Walk {
        store,
        root,
        rights,
        query,
        reach: HashMap::new(),
    };
    walk.page()
}

fn store_err(e: crate::store::StoreError) -> GateError {
    GateError::Engine(e.into())
}

impl Walk<'_> {
    fn page(&mut self) -> Result<JobPage, GateError> {
        let (limit, max_scan) = (
            self.query.limit.unwrap_or(usize::MAX),
            self.query.max_scan.unwrap_or(usize::MAX),
        );
        let mut cursor = match &self.query.before {
            Some(id) => Some(
                super::row::cursor_below(self.store, id)
                    .map_err(store_err)?
                    .ok_or_else(|| {
                        GateError::Invalid(format!(
                            "before: {:?} is not a job id",
                            common::paths::shorten(id)
                        ))
                    })?,
            ),
            None => None,
        };
        let mut jobs: Vec<JobRow> = Vec::new();
        let mut last_returned: Option<Cursor> = None;
        let (mut scanned, mut exhausted, mut cut) = (0, false, false);
        while jobs.len() < limit && scanned < max_scan {
            let want = match self.query.filters_nothing() && self.rights.admin {
                true => (limit - jobs.len()).min(1000),
                false => limit.saturating_mul(4).clamp(50, 1000).min(max_scan - scanned),
            };
            let page = self.store.list_page(want, cursor.as_ref()).map_err(store_err)?;
            let Some(last) = page.last() else {
                exhausted = true;
                break;
            };
            cursor = Some((last.started, last.id.clone()));
            scanned += page.len();
            // Newest first: once older than `since`, nothing below matches.
            exhausted = page.len() < want || self.query.since.is_some_and(|t| last.started < t);
            let (kept, records) = self.visible(page)?;
            let total = kept.len();
            for (i, meta) in kept.into_iter().enumerate() {
                last_returned = Some((meta.started, meta.id.clone()));
                let Some(record) = records.get(&meta.id) else {
                    continue;
                };
                jobs.push(JobRow::of(self.store, record));
                if jobs.len() == limit {
                    cut = i + 1 < total;
                    break;
                }
            }
            if exhausted {
                break;
            }
        }
        let next = if exhausted && !cut {
            None
        } else if jobs.len() == limit {
            // The last row is its own cursor: one more job below it?
            let more = match &last_returned {
                Some(below) => !self
                    .store
                    .list_page(1, Some(below))
                    .map_err(store_err)?
                    .is_empty(),
                None => true,
            };
            last_returned.filter(|_| more).map(|(_, id)| id)
        } else {
            cursor.map(|c| c.1)
        };
        Ok(JobPage { jobs, next })
    }

    /// The jobs of a store page the query keeps and the caller may see,
    /// with their records (read once: for the rows' tallies and the rights).
    fn visible(
        &mut self,
        page: Vec<JobMeta>,
    ) -> Result<(Vec<JobMeta>, HashMap<String, JobRecord>), GateError> {
        let mut kept: Vec<JobMeta> = page.into_iter().filter(|m| self.query.keeps(m)).collect();
        if kept.is_empty() {
            return Ok((kept, HashMap::new()));
        }
        let ids: Vec<String> = kept.iter().map(|m| m.id.clone()).collect();
        let mut records: HashMap<String, JobRecord> = self
            .store
            .load_many(&ids)
            .map_err(store_err)?
            .into_iter()
            .map(|r| (r.meta.id.clone(), r))
            .collect();
        if !self.rights.admin {
            let (root, rights, reach) = (self.root, self.rights, &mut self.reach);
            records.retain(|_, r| {
                let allowed = reach
                    .entry(r.meta.function.clone())
                    .or_insert_with(|| rights.hosts_for(root, Some(&r.meta.function)));
                r.hosts.keys().all(|h| allowed.contains(h))
            });
        }
        kept.retain(|m| records.contains_key(&m.id));
        Ok((kept, records))
    }
}
