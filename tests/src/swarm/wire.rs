//! The minion wire protocol as the swarm speaks it, answered from memory:
//! `test.ping|echo|add|sleep|explode`, `async.` of those (a job id at
//! once), `jobs.job_status|wait_job|kill_job|term_job|signal_job|running|
//! list_jobs|find_job`, and `system.listMethods|list_modules`. Results and
//! errors have the real minion's shapes (`[status, result]`,
//! `["REMOTE_ERROR", type, message, detail]`), so the overlord cannot tell
//! a swarm minion from a `funcd`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::rpc::http::{self, Reply};
use common::xmlrpc::{self, Limits};
use common::Value;
use tokio::sync::Notify;

const RUNNING: i32 = 0;
const FINISHED: i32 = 1;
const LOST_IN_SPACE: i32 = 2;
/// Jobs kept in all; past this, finished ones are dropped oldest first.
const MAX_JOBS: usize = 2_000_000;
const MAX_SLEEP: i64 = 3600;
const INVALID_METHOD: &str = "func.minion.codes.InvalidMethodException";

struct Job {
    ends: Instant,
    result: Value,
}

/// Every identity's jobs.
#[derive(Default)]
pub struct Jobs {
    table: Mutex<HashMap<(Arc<str>, String), Job>>,
    ended: Notify,
    seq: AtomicU64,
}

impl Jobs {
    fn start(&self, name: &Arc<str>, ends: Instant, result: Value) -> String {
        let secs = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let id = format!(
            "{secs}.{:09}-minion",
            self.seq.fetch_add(1, Ordering::Relaxed) % 1_000_000_000
        );
        let mut table = self.table.lock().unwrap_or_else(|p| p.into_inner());
        if table.len() >= MAX_JOBS {
            let now = Instant::now();
            table.retain(|_, j| j.ends > now);
        }
        table.insert((name.clone(), id.clone()), Job { ends, result });
        id
    }

    /// `[status, result]`, and when the job ends if it runs.
    fn status(&self, name: &Arc<str>, id: &str) -> (Value, Option<Instant>) {
        let table = self.table.lock().unwrap_or_else(|p| p.into_inner());
        match table.get(&(name.clone(), id.to_string())) {
            None => (pair(LOST_IN_SPACE, Value::Integer(0)), None),
            Some(j) if j.ends <= Instant::now() => (pair(FINISHED, j.result.clone()), None),
            Some(j) => (pair(RUNNING, Value::Integer(-1)), Some(j.ends)),
        }
    }

    async fn wait(&self, name: &Arc<str>, id: &str, wait: Duration) -> Value {
        let deadline = Instant::now() + wait;
        loop {
            let woken = self.ended.notified();
            let (status, ends) = self.status(name, id);
            let Some(ends) = ends else { return status };
            let until = ends.min(deadline);
            if Instant::now() >= deadline {
                return status;
            }
            tokio::select! {
                _ = tokio::time::sleep_until(until.into()) => {}
                _ = woken => {}
            }
        }
    }

    /// Ends a running job as killed; `false` if it was not running.
    fn kill(&self, name: &Arc<str>, id: &str, signal: &str) -> bool {
        let mut table = self.table.lock().unwrap_or_else(|p| p.into_inner());
        let Some(job) = table.get_mut(&(name.clone(), id.to_string())) else {
            return false;
        };
        if job.ends <= Instant::now() {
            return false;
        }
        job.ends = Instant::now();
        job.result = remote_error("func.minion.JobKilled", &format!("killed by {signal}"));
        drop(table);
        self.ended.notify_waiters();
        true
    }

    fn list(&self, name: &Arc<str>, running_only: bool) -> Vec<Value> {
        let table = self.table.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        table
            .iter()
            .filter(|((n, _), j)| n == name && (!running_only || j.ends > now))
            .map(|((_, id), j)| {
                let status = if j.ends > now { RUNNING } else { FINISHED };
                Value::Struct(
                    [
                        ("id".to_string(), Value::String(id.clone())),
                        ("status".to_string(), Value::Integer(status)),
                    ]
                    .into_iter()
                    .collect(),
                )
            })
            .collect()
    }
}

fn pair(status: i32, result: Value) -> Value {
    Value::Array(vec![Value::Integer(status), result])
}

fn remote_error(kind: &str, message: &str) -> Value {
    Value::Array(vec![
        Value::String("REMOTE_ERROR".into()),
        Value::String(kind.into()),
        Value::String(message.into()),
        Value::String(String::new()),
    ])
}

fn now_f64() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// One request to minion `name`.
pub async fn handle<B>(jobs: &Jobs, name: &Arc<str>, overlord: bool, req: ::http::Request<B>) -> Reply
where
    B: hyper::body::Body,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    let limits = Limits {
        max_body: 4 << 20,
        max_depth: xmlrpc::DEFAULT_MAX_DEPTH,
        max_values: xmlrpc::DEFAULT_MAX_VALUES,
    };
    let call = match http::read_call(req, &limits, Duration::from_secs(30)).await {
        Ok(c) => c,
        Err(reply) => return reply,
    };
    if !overlord {
        return http::xml(xmlrpc::encode_fault(
            1,
            "access denied: only the overlord may call a swarm minion",
        ));
    }
    let value = answer(jobs, name, &call.method, call.params).await;
    http::xml(
        xmlrpc::encode_response(value, limits.max_depth)
            .unwrap_or_else(|e| xmlrpc::encode_fault(1, &e.to_string())),
    )
}

async fn answer(jobs: &Jobs, name: &Arc<str>, method: &str, params: Vec<Value>) -> Value {
    if let Some(inner) = method.strip_prefix("async.") {
        // Run now, answer later: the result is known at once, the job
        // "ends" when a real one would (test.sleep's length).
        let (result, length) = test_method(inner, &params);
        return Value::String(jobs.start(name, Instant::now() + length, result));
    }
    let text = |i: usize| match params.get(i) {
        Some(Value::String(s)) => s.clone(),
        _ => String::new(),
    };
    match method {
        "jobs.job_status" => jobs.status(name, &text(0)).0,
        "jobs.wait_job" => {
            let secs = match params.get(1) {
                Some(Value::Integer(i)) => f64::from(*i),
                Some(Value::Double(d)) => *d,
                Some(Value::String(s)) => s.parse().unwrap_or(10.0),
                _ => 10.0,
            };
            let wait = Duration::from_secs_f64(if secs.is_finite() {
                secs.clamp(0.0, 60.0)
            } else {
                10.0
            });
            jobs.wait(name, &text(0), wait).await
        }
        "jobs.kill_job" | "jobs.term_job" | "jobs.signal_job" => {
            let signal = match method {
                "jobs.kill_job" => "SIGKILL".to_string(),
                "jobs.term_job" => "SIGTERM".to_string(),
                _ => text(1),
            };
            let id = text(0);
            Value::String(match jobs.kill(name, &id, &signal) {
                true => format!("job {id}: sent {signal} to process group 0"),
                false => format!("job {id} is not running"),
            })
        }
        "jobs.running" => Value::Array(jobs.list(name, true)),
        "jobs.list_jobs" => Value::Array(jobs.list(name, false)),
        "jobs.find_job" => Value::Struct(Default::default()),
        "system.listMethods" | "system.list_methods" => Value::Array(
            [
                "test.ping",
                "test.echo",
                "test.add",
                "test.sleep",
                "test.explode",
                "jobs.job_status",
                "jobs.wait_job",
                "jobs.kill_job",
                "system.listMethods",
                "system.list_modules",
            ]
            .iter()
            .map(|m| Value::String(m.to_string()))
            .collect(),
        ),
        "system.list_modules" => Value::Array(
            ["jobs", "system", "test"]
                .iter()
                .map(|m| Value::String(m.to_string()))
                .collect(),
        ),
        _ => {
            let (result, length) = test_method(method, &params);
            tokio::time::sleep(length).await;
            result
        }
    }
}

/// A `test.*` method's result, and how long it runs.
fn test_method(method: &str, params: &[Value]) -> (Value, Duration) {
    let int = |v: Option<&Value>| match v {
        Some(Value::Integer(i)) => Some(i64::from(*i)),
        Some(Value::Long(l)) => Some(*l),
        Some(Value::String(s)) => s.trim().parse().ok(),
        _ => None,
    };
    match method {
        "test.ping" => (Value::Integer(1), Duration::ZERO),
        "test.echo" if params.len() == 1 => (params[0].clone(), Duration::ZERO),
        "test.add" if params.len() == 2 => match (int(params.first()), int(params.get(1))) {
            (Some(a), Some(b)) => (common::xmlrpc::int(a.saturating_add(b)), Duration::ZERO),
            _ => (
                remote_error("exceptions.TypeError", "add takes two numbers"),
                Duration::ZERO,
            ),
        },
        "test.sleep" => match int(params.first()) {
            Some(t) if (0..=MAX_SLEEP).contains(&t) => {
                (Value::Double(now_f64() + t as f64), Duration::from_secs(t as u64))
            }
            _ => (
                remote_error("exceptions.ValueError", "sleep takes 0 to 3600 seconds"),
                Duration::ZERO,
            ),
        },
        "test.explode" => (
            remote_error("exceptions.Exception", "khhhhhhaaaaaan!!!!!!"),
            Duration::ZERO,
        ),
        _ => (remote_error(INVALID_METHOD, method), Duration::ZERO),
    }
}
