//! What runs now (`func jobs active`, Salt's `jobs.active`): the minions a
//! SPEC names are asked (`jobs.running`) and the answers are grouped by
//! overlord job: which hosts still run it and which have returned. Minion
//! jobs this overlord did not start (another overlord, a Python client) are
//! kept apart; hosts that could not be asked are said with why.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use common::Value;

use crate::plan::{Plan, PlanError};
use crate::store::{HostState, JobRecord, JobStore as _};

/// One job running on a minion, from `jobs.running`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Running {
    pub id: String,
    pub method: String,
    pub pid: i64,
    pub caller: String,
}

/// An overlord job some hosts still run.
#[derive(Debug)]
pub struct ActiveJob {
    pub id: String,
    pub function: String,
    pub args: Vec<String>,
    pub running: BTreeSet<String>,
    pub returned: Vec<String>,
}

/// The answer: jobs of this overlord, others' jobs per host, hosts not asked.
#[derive(Debug, Default)]
pub struct Active {
    pub jobs: Vec<ActiveJob>,
    pub others: Vec<(String, Running)>,
    pub unreachable: BTreeMap<String, Value>,
    /// How many hosts were asked.
    pub asked: usize,
}

/// Asks the hosts `spec` names what runs now.
pub fn active(plan: &Plan, spec: &str) -> Result<Active, PlanError> {
    let targets = crate::targets::resolve(&plan.root, spec, plan.exclude.as_deref())?;
    let answers = crate::calling::call(plan, &targets, "jobs.running", Vec::new(), |_, _| {})?;
    let records = open_jobs(plan)?;
    // Which overlord job each (host, minion job) belongs to.
    let mut owner: HashMap<(&str, &str), &str> = HashMap::new();
    for r in &records {
        for (host, e) in &r.hosts {
            if let Some(job) = &e.minion_job {
                owner.insert((host, job), &r.meta.id);
            }
        }
    }
    let mut found = Active {
        asked: answers.len(),
        ..Active::default()
    };
    let mut running_by_job: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for (host, value) in &answers {
        let Some(list) = parse_running(value) else {
            found.unreachable.insert(host.clone(), value.clone());
            continue;
        };
        for job in list {
            match owner.get(&(host.as_str(), job.id.as_str())) {
                Some(id) => {
                    running_by_job.entry(id).or_default().insert(host.clone());
                }
                None => found.others.push((host.clone(), job)),
            }
        }
    }
    for r in &records {
        let Some(running) = running_by_job.remove(r.meta.id.as_str()) else {
            continue;
        };
        let returned = r
            .hosts
            .iter()
            .filter(|(h, e)| {
                e.state == HostState::Finished || (answers.contains_key(*h) && !running.contains(*h))
            })
            .map(|(h, _)| h.clone())
            .collect();
        found.jobs.push(ActiveJob {
            id: r.meta.id.clone(),
            function: r.meta.function.clone(),
            args: r.meta.args.clone(),
            running,
            returned,
        });
    }
    Ok(found)
}

/// Every job of the store that has not ended.
fn open_jobs(plan: &Plan) -> Result<Vec<JobRecord>, PlanError> {
    let store = plan.store();
    let open: Vec<String> = store
        .list()?
        .into_iter()
        .filter(|m| m.ended.is_none())
        .map(|m| m.id)
        .collect();
    Ok(store.load_many(&open)?)
}

/// The structs of a `jobs.running` answer; `None` for an error or junk.
fn parse_running(value: &Value) -> Option<Vec<Running>> {
    if common::xmlrpc::is_remote_error(value) {
        return None;
    }
    let Value::Array(items) = value else { return None };
    Some(
        items
            .iter()
            .filter_map(|item| {
                let Value::Struct(m) = item else { return None };
                let text = |k: &str| match m.get(k) {
                    Some(Value::String(s)) => s.clone(),
                    _ => String::new(),
                };
                let pid = match m.get("pid") {
                    Some(Value::Integer(i)) => i64::from(*i),
                    Some(Value::Long(l)) => *l,
                    _ => 0,
                };
                Some(Running {
                    id: text("id"),
                    method: text("method"),
                    pid,
                    caller: text("caller"),
                })
            })
            .collect(),
    )
}
