//! `jobs`: the minion's async job table over XML-RPC. Func's
//! `job_status`, plus what Salt users know from `saltutil.running`,
//! `find_job` and `kill_job`: list running jobs, find one, signal its whole
//! process group. Answers come from the daemon's store, so these methods do
//! not work inside an async job (`async.jobs.*`). A caller other than the
//! overlord sees and signals only the jobs it started; anyone else's answer
//! exactly as unknown ids (`[2, 0]`, `{}`, "not running").

use common::xmlrpc::args::Args;
use common::xmlrpc::{self, int};
use common::Value;
use nix::sys::signal::Signal;

use super::module::{Context, Module};
use crate::jobs::store::JobRecord;
use crate::jobs::{proc, Jobs, FINISHED, RUNNING};
use crate::method::ArgInfo;
use crate::method::{record, MethodError, MethodInfo, MethodResult};

pub struct JobsModule;

const JOB_ID: ArgInfo = ArgInfo {
    name: "job_id",
    kind: "string",
    optional: false,
    description: "a minion job id (\"<time>-minion\")",
};

const METHODS: &[MethodInfo] = &[
    MethodInfo {
        name: "job_status",
        description: "[0, -1] running, [1, result] finished, [2, 0] unknown or expired.",
        args: &[JOB_ID],
    },
    MethodInfo {
        name: "wait_job",
        description:
            "As job_status, but while the job runs waits up to `seconds` (at most 60) for it to end.",
        args: &[
            JOB_ID,
            ArgInfo {
                name: "seconds",
                kind: "float",
                optional: true,
                description: "how long to wait at most (default 10)",
            },
        ],
    },
    MethodInfo {
        name: "running",
        description: "Jobs still running: {id, pid, method, args, started, caller} each.",
        args: &[],
    },
    MethodInfo {
        name: "find_job",
        description: "A running job's details, or {} when it is not running.",
        args: &[JOB_ID],
    },
    MethodInfo {
        name: "list_jobs",
        description: "Every job the minion still keeps, with status, start and end time.",
        args: &[],
    },
    MethodInfo {
        name: "term_job",
        description: "Sends SIGTERM to the job's process group.",
        args: &[JOB_ID],
    },
    MethodInfo {
        name: "kill_job",
        description: "Sends SIGKILL to the job's process group.",
        args: &[JOB_ID],
    },
    MethodInfo {
        name: "signal_job",
        description: "Sends a signal (name or number) to the job's process group.",
        args: &[
            JOB_ID,
            ArgInfo {
                name: "signal",
                kind: "string",
                optional: false,
                description: "e.g. TERM, KILL, HUP, 15",
            },
        ],
    },
];

impl Module for JobsModule {
    fn name(&self) -> &'static str {
        "jobs"
    }

    fn description(&self) -> &'static str {
        "Async job status and control"
    }

    fn methods(&self) -> &'static [MethodInfo] {
        METHODS
    }

    fn call(&self, ctx: &Context<'_>, method: &str, args: Args<'_>) -> MethodResult {
        let jobs = ctx.jobs.ok_or_else(|| {
            MethodError::new(
                "func.minion.JobError",
                "jobs.* answers from the daemon's job table; it cannot run as an async job",
            )
        })?;
        let store_err = |e: crate::jobs::store::StoreError| MethodError::os(e.to_string());
        match method {
            "job_status" => {
                args.arity(1, 1)?;
                jobs.status(&args.string(0, "job_id")?, ctx.caller)
                    .map_err(store_err)
            }
            "wait_job" => {
                args.arity(1, 2)?;
                let id = args.string(0, "job_id")?;
                let seconds = if args.len() > 1 {
                    args.f64(1, "seconds")?
                } else {
                    10.0
                };
                if !seconds.is_finite() || seconds < 0.0 {
                    return Err(MethodError::value("seconds must be a number >= 0"));
                }
                let wait =
                    std::time::Duration::from_secs_f64(seconds.min(crate::jobs::MAX_WAIT.as_secs_f64()));
                jobs.wait(&id, wait, ctx.caller).map_err(store_err)
            }
            "running" => {
                args.arity(0, 0)?;
                let running = jobs.running(ctx.caller).map_err(store_err)?;
                Ok(Value::Array(running.iter().map(details).collect()))
            }
            "find_job" => {
                args.arity(1, 1)?;
                let found = jobs
                    .find_for(&args.string(0, "job_id")?, ctx.caller)
                    .map_err(store_err)?;
                let found = found
                    .map(|r| jobs.started_record(r))
                    .transpose()
                    .map_err(store_err)?;
                Ok(match found {
                    Some(r) if !r.finished() => details(&r),
                    _ => record::<&str>([]),
                })
            }
            "list_jobs" => {
                args.arity(0, 0)?;
                let mut all = jobs.all(ctx.caller).map_err(store_err)?;
                all.sort_by(|a, b| a.started.total_cmp(&b.started));
                Ok(Value::Array(all.iter().map(summary).collect()))
            }
            "term_job" => {
                args.arity(1, 1)?;
                signal(jobs, ctx, &args.string(0, "job_id")?, Signal::SIGTERM)
            }
            "kill_job" => {
                args.arity(1, 1)?;
                signal(jobs, ctx, &args.string(0, "job_id")?, Signal::SIGKILL)
            }
            "signal_job" => {
                args.arity(2, 2)?;
                let name = args.string(1, "signal")?;
                let sig = proc::parse_signal(&name).ok_or_else(|| {
                    MethodError::value(format!("unknown signal {:?}", common::paths::shorten(&name)))
                })?;
                signal(jobs, ctx, &args.string(0, "job_id")?, sig)
            }
            _ => Err(MethodError::new(
                crate::method::INVALID_METHOD,
                format!("jobs.{method}"),
            )),
        }
    }
}

fn signal(jobs: &Jobs, ctx: &Context<'_>, id: &str, sig: Signal) -> MethodResult {
    let shown = common::paths::shorten(id);
    Ok(Value::String(match jobs.signal(id, sig, ctx.caller)? {
        Some(r) => format!("job {shown}: sent {sig} to process group {}", r.pid),
        None => format!("job {shown} is not running"),
    }))
}

/// The arguments of a recorded call.
fn call_args(r: &JobRecord) -> Value {
    let limits = xmlrpc::Limits {
        max_body: usize::MAX,
        max_depth: xmlrpc::DEFAULT_MAX_DEPTH,
        max_values: usize::MAX,
    };
    match xmlrpc::decode_call(r.call_xml.as_bytes(), &limits) {
        Ok(call) => Value::Array(call.params),
        Err(_) => Value::Array(Vec::new()),
    }
}

/// `{id, pid, method, args, started, caller}` of a running job.
fn details(r: &JobRecord) -> Value {
    record([
        ("id", Value::String(r.id.clone())),
        ("pid", int(i64::from(r.pid))),
        ("method", Value::String(r.method.clone())),
        ("args", call_args(r)),
        ("started", Value::Double(r.started)),
        ("caller", Value::String(r.caller.clone())),
    ])
}

/// `{id, method, status, started[, ended]}` of any job.
fn summary(r: &JobRecord) -> Value {
    let mut fields = vec![
        ("id", Value::String(r.id.clone())),
        ("method", Value::String(r.method.clone())),
        ("caller", Value::String(r.caller.clone())),
        (
            "status",
            Value::Integer(if r.finished() { FINISHED } else { RUNNING }),
        ),
        ("started", Value::Double(r.started)),
    ];
    if let Some(ended) = r.ended {
        fields.push(("ended", Value::Double(ended)));
    }
    record(fields)
}
