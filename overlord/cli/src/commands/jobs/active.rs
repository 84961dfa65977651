//! `func jobs active [SPEC]`: asks the minions (`jobs.running`, default
//! SPEC `*`) what runs now and groups the answers by overlord job: which
//! hosts still run it and which have returned. Minion jobs this overlord
//! did not start (another overlord, a Python client) are listed apart.

use overlord::store::JobStore as _;
use std::collections::{BTreeMap, BTreeSet, HashMap};

use common::Value;
use serde_json::json;

use overlord::plan::{Plan, PlanError};
use overlord::store::HostState;

#[derive(Debug)]
pub struct Active {
    pub spec: String,
}

/// One job running on a minion, from `jobs.running`.
struct Running {
    id: String,
    method: String,
    pid: i64,
    caller: String,
}

impl Active {
    pub fn run(&self, plan: &Plan) -> Result<i32, PlanError> {
        let targets = overlord::targets::resolve(&plan.root, &self.spec, plan.exclude.as_deref())?;
        let action = overlord::calling::call_action("jobs.running", Vec::new())?;
        let answers = overlord::calling::dispatch_to(plan, &targets, &action, |_, _| {})?;
        // Which overlord job each (host, minion job) belongs to.
        let store = plan.store();
        let config = PlanError::from;
        let open: Vec<String> = store
            .list()
            .map_err(config)?
            .into_iter()
            .filter(|m| m.ended.is_none())
            .map(|m| m.id)
            .collect();
        let records = store.load_many(&open).map_err(config)?;
        let mut owner: HashMap<(String, String), String> = HashMap::new();
        for r in &records {
            for (host, e) in &r.hosts {
                if let Some(job) = &e.minion_job {
                    owner.insert((host.clone(), job.clone()), r.meta.id.clone());
                }
            }
        }
        let mut running_by_job: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        let mut others: Vec<(String, Running)> = Vec::new();
        let mut failed: BTreeMap<String, String> = BTreeMap::new();
        for (host, value) in &answers {
            let Some(list) = parse_running(value) else {
                failed.insert(host.clone(), crate::display::output::error_line(value));
                continue;
            };
            for job in list {
                match owner.get(&(host.clone(), job.id.clone())) {
                    Some(overlord_job) => {
                        running_by_job
                            .entry(overlord_job.clone())
                            .or_default()
                            .insert(host.clone());
                    }
                    None => others.push((host.clone(), job)),
                }
            }
        }
        let asked: BTreeSet<&String> = answers.keys().collect();
        let mut jobs_doc = serde_json::Map::new();
        let mut text = String::new();
        for r in records.iter().filter(|r| running_by_job.contains_key(&r.meta.id)) {
            let running = &running_by_job[&r.meta.id];
            let returned: Vec<&String> = r
                .hosts
                .iter()
                .filter(|(h, e)| {
                    e.state == HostState::Finished || (asked.contains(h) && !running.contains(*h))
                })
                .map(|(h, _)| h)
                .collect();
            text.push_str(&format!(
                "{}  {} {}\n    running ({}): {}\n    returned ({}): {}\n",
                r.meta.id,
                r.meta.function,
                crate::display::output::shown_line(&r.meta.args.join(" ")),
                running.len(),
                join(running.iter()),
                returned.len(),
                join(returned.iter().copied())
            ));
            jobs_doc.insert(
                r.meta.id.clone(),
                json!({"function": r.meta.function, "running": running, "returned": returned}),
            );
        }
        if !others.is_empty() {
            text.push_str("not started by this overlord:\n");
        }
        let mut others_doc = Vec::new();
        for (host, job) in &others {
            // A row a minion wrote: every field kept on this one line.
            let line = crate::display::output::shown_line;
            text.push_str(&format!(
                "    {host}: {} {} (pid {}, caller {})\n",
                line(&job.id),
                line(&job.method),
                job.pid,
                line(&job.caller)
            ));
            others_doc.push(json!({"host": host, "id": job.id, "method": job.method, "pid": job.pid, "caller": job.caller}));
        }
        for (host, why) in &failed {
            text.push_str(&format!("{host}: not asked: {why}\n"));
        }
        if plan.json {
            let doc = json!({"jobs": jobs_doc, "other": others_doc, "unreachable": failed});
            crate::display::output::print_doc(plan.out, &doc);
        } else if text.is_empty() {
            overlord::outln!("no jobs running on {} hosts", answers.len());
        } else {
            overlord::out!("{text}");
        }
        Ok(i32::from(!failed.is_empty()))
    }
}

fn join<'a>(items: impl Iterator<Item = &'a String>) -> String {
    let v: Vec<&str> = items.map(String::as_str).collect();
    if v.is_empty() {
        "-".into()
    } else {
        v.join(", ")
    }
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
