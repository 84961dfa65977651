//! A worker process (`func __worker`): reads one [`Job`] from stdin, calls
//! its hosts with bounded concurrency on its own tokio runtime, and writes a
//! [`Report`] line to stdout as each host finishes. Workers are started by
//! spawning our own executable, so no process ever forks a running runtime.
//!
//! Every failure is a per-host value: unreachable, timed out, TLS refused or
//! a fault all become `["REMOTE_ERROR", type, message, ""]`, as Func's
//! overlord turned client-side exceptions into error lists.

use std::io::{BufRead, Write};
use std::sync::Arc;
use std::time::Duration;

use common::rpc::client::MinionClient;
use common::xmlrpc::{self, remote_error};
use common::Value;
use tokio::sync::Semaphore;

use crate::caller::{call_error, connect, Link};
use crate::job::{Action, Job, Report};
use crate::targets::Target;

/// Size of one `copyfile.append` chunk (Func used 60,000 bytes; bigger
/// chunks mean fewer round trips, well under the minion's 16 MiB limit).
pub const CHUNK: usize = 1 << 20;

/// Runs the job read from stdin. Returns a process exit code.
pub fn main() -> i32 {
    let mut line = String::new();
    if std::io::stdin().lock().read_line(&mut line).is_err() {
        crate::log::line("func worker: cannot read the job");
        return 2;
    }
    let job: Job = match serde_json::from_str(&line) {
        Ok(job) => job,
        Err(e) => {
            crate::log::line(&format!("func worker: bad job: {e}"));
            return 2;
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            crate::log::line(&format!("func worker: no runtime: {e}"));
            return 2;
        }
    };
    runtime.block_on(run(job));
    0
}

async fn run(job: Job) {
    let tls = match common::tls::client_config(&job.credentials()) {
        Ok(cfg) => Arc::new(Link {
            tls: Arc::new(cfg),
            max_response: job.max_response,
        }),
        Err(e) => {
            let err = remote_error("func.overlord.CredentialsError", &e.to_string(), "");
            for t in &job.targets {
                emit(&Report::new(&t.name, err.clone()));
            }
            return;
        }
    };
    let job = Arc::new(job);
    let slots = Arc::new(Semaphore::new(job.concurrency.max(1)));
    let mut tasks = tokio::task::JoinSet::new();
    for target in job.targets.clone() {
        let (job, tls, slots) = (Arc::clone(&job), Arc::clone(&tls), Arc::clone(&slots));
        tasks.spawn(async move {
            let _slot = slots.acquire_owned().await;
            let limit = Duration::from_secs_f64(job.timeout_secs);
            let value = match tokio::time::timeout(limit, one_host(&job, &target, tls, limit)).await {
                Ok(v) => v,
                Err(_) => remote_error(
                    "socket.timeout",
                    &format!("no answer from {} within {:?}", target.addr, limit),
                    "",
                ),
            };
            emit(&Report::new(&target.name, value));
        });
    }
    while tasks.join_next().await.is_some() {}
}

/// Writes one report line (whole lines, flushed, so the parent sees results as they come).
fn emit(report: &Report) {
    if let Ok(text) = serde_json::to_string(report) {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{text}");
        let _ = out.flush();
    }
}

async fn one_host(job: &Job, target: &Target, tls: Arc<Link>, limit: Duration) -> Value {
    match &job.action {
        Action::Call { call_xml, request } => {
            let limits = xmlrpc::Limits {
                max_body: usize::MAX,
                max_depth: xmlrpc::DEFAULT_MAX_DEPTH,
                max_values: usize::MAX,
            };
            // One call, as every caller makes it (`caller.rs`).
            match xmlrpc::decode_call(call_xml.as_bytes(), &limits) {
                Ok(call) => {
                    let who = crate::caller::OnBehalf {
                        user: None,
                        request: request.as_deref(),
                    };
                    crate::caller::call_once(None, target, &call.method, call.params, tls, limit, who)
                        .await
                        .value
                }
                Err(e) => remote_error("func.overlord.BadCall", &e.to_string(), ""),
            }
        }
        Action::CopyFile {
            local,
            remote,
            mode,
            uid,
            gid,
            sha1,
        } => {
            let mut client = match connect(target, tls, limit).await {
                Ok(c) => c,
                Err(e) => return e,
            };
            copy_file(&mut client, local, remote, *mode, *uid, *gid, sha1)
                .await
                .unwrap_or_else(|e| e)
        }
    }
}

async fn copy_file(
    client: &mut MinionClient,
    local: &std::path::Path,
    remote: &str,
    mode: u32,
    uid: i64,
    gid: i64,
    sha1: &str,
) -> Result<Value, Value> {
    let check = |v: Value| {
        if xmlrpc::is_remote_error(&v) {
            Err(v)
        } else {
            Ok(v)
        }
    };
    let open_args = vec![
        Value::String(remote.into()),
        Value::Integer(mode as i32),
        xmlrpc::int(uid),
        xmlrpc::int(gid),
    ];
    check(
        client
            .call("copyfile.open", open_args)
            .await
            .map_err(call_error)?,
    )?;
    let mut file = std::fs::File::open(local)
        .map_err(|e| remote_error("IOError", &format!("{}: {e}", local.display()), ""))?;
    let mut buf = vec![0u8; CHUNK];
    loop {
        let n = std::io::Read::read(&mut file, &mut buf)
            .map_err(|e| remote_error("IOError", &format!("{}: {e}", local.display()), ""))?;
        if n == 0 {
            break;
        }
        let args = vec![Value::String(remote.into()), Value::Base64(buf[..n].to_vec())];
        check(client.call("copyfile.append", args).await.map_err(call_error)?)?;
    }
    let remote_sum = client
        .call("copyfile.checksum", vec![Value::String(remote.into())])
        .await
        .map_err(call_error)?;
    if remote_sum != Value::String(sha1.to_string()) {
        return Err(remote_error(
            "func.overlord.ChecksumMismatch",
            &format!("{remote} differs from the local file after copying"),
            "",
        ));
    }
    Ok(Value::Integer(1))
}
