//! The `jobs.*` calls of a job whose hosts went through relays, answered
//! by the relays (DESIGN §17): a host dispatched through a relay holds
//! `relay:NAME:RELAY_JOB` where a minion job id would stand, and the
//! calls that follow minion jobs are turned into the relay's:
//!
//! - `async.M.m` on hosts the routes put behind a relay (a batch's
//!   window): one relay job per relay for the hosts started together;
//! - `jobs.wait_job`, `jobs.job_status`: the relay job's results for those
//!   hosts (waiting as `wait_job` would), as `[status, result]`;
//! - `jobs.find_job`: whether the host still runs there;
//! - `jobs.kill_job`, `jobs.term_job`, `jobs.signal_job`: the relay's kill
//!   of its job.
//!
//! So the poller, and everything built on it (job status, `--wait`, batches,
//! kill), follows relay hosts as it follows minions; many hosts of one
//! relay job cost one exchange.

use std::collections::BTreeMap;

use common::paths::Root;
use common::Value;

use super::follow::Reply;
use crate::relay::{Order, Routes};
use crate::targets::Target;

/// Delegation for a poller: where the map routes hosts, and the job's order.
#[derive(Clone)]
pub struct Delegation {
    pub routes: Routes,
    pub order: Order,
}

/// Whether this call is a relay's to answer.
pub fn is_relayed(call: &(Target, String, Vec<Value>), delegation: Option<&Delegation>) -> bool {
    let (target, method, params) = call;
    if method.starts_with("async.") {
        return delegation.is_some_and(|d| d.routes.relay_of(&target.name).is_some());
    }
    method.starts_with("jobs.")
        && matches!(params.first(), Some(Value::String(job)) if crate::relay::parse_job_ref(job).is_some())
}

/// Answers relayed `calls` (see the module doc); kills are made for `user`
/// (`None`: this process's, the command line's).
pub async fn answer(
    root: &Root,
    delegation: Option<&Delegation>,
    calls: Vec<(Target, String, Vec<Value>)>,
    user: Option<&str>,
) -> Vec<(String, Reply)> {
    let mut asked = Asked::default();
    for (target, method, params) in calls {
        asked.sort(delegation, target, &method, &params);
    }
    let mut replies = std::mem::take(&mut asked.refused);
    if let (Some(d), false) = (delegation, asked.starts.is_empty()) {
        for (host, started) in crate::relay::start_all(root, &d.routes, &d.order, asked.starts).await {
            replies.push((
                host,
                match started {
                    Ok(job) => Reply::Value(Value::String(job)),
                    Err(v) => Reply::Unreachable(crate::values::error_text(&v)),
                },
            ));
        }
    }
    if !asked.asks.is_empty() {
        replies.extend(statuses(root, asked.asks, asked.waits).await);
    }
    if !asked.finds.is_empty() {
        replies.extend(found(root, asked.finds).await);
    }
    if !asked.kills.is_empty() {
        replies.extend(killed(root, asked.kills, user).await);
    }
    replies
}

/// The calls for hosts behind relays, sorted by what the relays are asked.
#[derive(Default)]
struct Asked {
    /// Hosts whose job to start, per relay.
    starts: BTreeMap<String, Vec<String>>,
    /// (host, job) whose status to collect, waiting at most `waits`.
    asks: Vec<(String, String)>,
    waits: f64,
    finds: Vec<(String, String)>,
    /// (host, job, signal).
    kills: Vec<(String, String, String)>,
    /// Methods not answered for a relayed host.
    refused: Vec<(String, Reply)>,
}

impl Asked {
    fn sort(&mut self, delegation: Option<&Delegation>, target: Target, method: &str, params: &[Value]) {
        let job = match params.first() {
            Some(Value::String(j)) => j.clone(),
            _ => String::new(),
        };
        match method {
            m if m.starts_with("async.") => {
                if let Some(relay) = delegation.and_then(|d| d.routes.relay_of(&target.name)) {
                    self.starts
                        .entry(relay.name.clone())
                        .or_default()
                        .push(target.name);
                }
            }
            "jobs.wait_job" | "jobs.job_status" => {
                if method == "jobs.wait_job" {
                    let secs = match params.get(1) {
                        Some(Value::Double(d)) => *d,
                        Some(Value::Integer(i)) => f64::from(*i),
                        _ => 10.0,
                    };
                    self.waits = self.waits.max(secs);
                }
                self.asks.push((target.name, job));
            }
            "jobs.find_job" => self.finds.push((target.name, job)),
            "jobs.kill_job" | "jobs.term_job" | "jobs.signal_job" => {
                let signal = match (method, params.get(1)) {
                    ("jobs.kill_job", _) => "KILL".to_string(),
                    ("jobs.term_job", _) => "TERM".to_string(),
                    (_, Some(Value::String(s))) => s.trim_start_matches("SIG").to_string(),
                    _ => "TERM".to_string(),
                };
                self.kills.push((target.name, job, signal));
            }
            _ => self.refused.push((
                target.name,
                Reply::Value(common::xmlrpc::remote_error(
                    "func.overlord.RelayError",
                    &format!("{method} is not answered for a host behind a relay"),
                    "",
                )),
            )),
        }
    }
}

/// `jobs.wait_job`/`jobs.job_status` for relayed hosts: Func's `[code, result]`.
async fn statuses(root: &Root, asks: Vec<(String, String)>, waits: f64) -> Vec<(String, Reply)> {
    let got = crate::relay::collect(root, asks, waits.clamp(0.0, 60.0)).await;
    got.into_iter()
        .map(|(host, got)| {
            let reply = match got {
                Ok(Some(result)) => Reply::Value(Value::Array(vec![Value::Integer(1), result])),
                Ok(None) => Reply::Value(Value::Array(vec![Value::Integer(0), Value::Integer(-1)])),
                Err(why) => Reply::Unreachable(why),
            };
            (host, reply)
        })
        .collect()
}

/// `jobs.find_job` for relayed hosts: `{}` once ended, `{"id"}` while running.
async fn found(root: &Root, finds: Vec<(String, String)>) -> Vec<(String, Reply)> {
    let jobs: BTreeMap<String, String> = finds.iter().cloned().collect();
    let got = crate::relay::collect(root, finds, 0.0).await;
    got.into_iter()
        .map(|(host, got)| {
            let reply = match got {
                Ok(Some(_)) => Reply::Value(Value::Struct(Default::default())),
                Ok(None) => {
                    let id = Value::String(jobs.get(&host).cloned().unwrap_or_default());
                    Reply::Value(Value::Struct([("id".to_string(), id)].into_iter().collect()))
                }
                Err(why) => Reply::Unreachable(why),
            };
            (host, reply)
        })
        .collect()
}

/// A kill for relayed hosts, sent through their relays.
async fn killed(
    root: &Root,
    kills: Vec<(String, String, String)>,
    user: Option<&str>,
) -> Vec<(String, Reply)> {
    let signal = kills[0].2.clone();
    let jobs: Vec<String> = kills.iter().map(|(_, j, _)| j.clone()).collect();
    let done: BTreeMap<String, Result<(), String>> = crate::relay::kill_all(root, jobs, &signal, user)
        .await
        .into_iter()
        .collect();
    kills
        .into_iter()
        .map(|(host, job, signal)| {
            let reply = match done.get(&job) {
                Some(Ok(())) => Reply::Value(Value::String(format!(
                    "job {job}: sent {signal} through the relay"
                ))),
                Some(Err(why)) => Reply::Unreachable(why.clone()),
                None => Reply::Unreachable("not sent".into()),
            };
            (host, reply)
        })
        .collect()
}

/// Follows `host`'s relay job until the host ends; its result goes to `ends`.
/// A relay not reached is asked again (the caller's deadlines decide when
/// to give up on it).
pub async fn watch(
    root: Root,
    host: String,
    job: String,
    ends: tokio::sync::mpsc::UnboundedSender<(String, Value)>,
) {
    let first = std::time::Duration::from_millis(200);
    let mut pauses = super::follow::pauses(first);
    loop {
        let got = crate::relay::collect(&root, vec![(host.clone(), job.clone())], 20.0).await;
        match got.into_iter().next().map(|(_, g)| g) {
            Some(Ok(Some(result))) => {
                let _ = ends.send((host, result));
                return;
            }
            Some(Ok(None)) => pauses = super::follow::pauses(first),
            _ => tokio::time::sleep(pauses.next().unwrap_or(super::follow::MAX_PAUSE)).await,
        }
    }
}
