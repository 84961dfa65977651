//! Runs an action on many minions through `--forks N` worker processes: the
//! targets are dealt into N buckets (host i → bucket i mod N, as Func did),
//! each bucket goes to a worker (`func __worker`, our own executable
//! re-spawned), and each worker streams one report line per host as it
//! finishes. A worker that dies leaves its unfinished hosts as errors.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use common::xmlrpc::remote_error;
use common::Value;

use crate::job::{Action, Job, Report};
use crate::targets::Target;

/// How to dispatch.
#[derive(Debug, Clone)]
pub struct Dispatch {
    pub forks: usize,
    pub timeout_secs: f64,
    /// Hosts in flight at once in each worker.
    pub concurrency: usize,
    /// Largest response accepted from one minion (`max_response_size`).
    pub max_response: usize,
    /// A call now may be handed to the func-api announced in the root
    /// (`relay::local`); not with `--direct`, nor in func-api itself.
    pub handoff: bool,
    /// `-v`: say which way a call went.
    pub verbose: bool,
}

/// Runs `action` on every target; `on_result` sees each host as it finishes.
/// Returns every host's result.
/// Worker processes by default: one per core.
pub fn default_forks() -> usize {
    std::thread::available_parallelism().map(usize::from).unwrap_or(1)
}

/// Calls `action` on `targets` through worker processes of this very
/// executable (`EXE __worker`); `on_result` sees each host as it ends.
pub fn call_workers(
    creds: &common::tls::Credentials,
    targets: &[Target],
    action: &Action,
    how: &Dispatch,
    on_result: impl FnMut(&str, &Value),
) -> Result<BTreeMap<String, Value>, crate::error::EngineError> {
    let exe = common::process::own_exe().map_err(|source| crate::error::EngineError::Spawn {
        what: "workers (the func executable is not found)",
        source,
    })?;
    run(&exe, creds, targets, action, how, on_result).map_err(|source| crate::error::EngineError::Spawn {
        what: "workers",
        source,
    })
}

pub fn run(
    exe: &Path,
    creds: &common::tls::Credentials,
    targets: &[Target],
    action: &Action,
    how: &Dispatch,
    mut on_result: impl FnMut(&str, &Value),
) -> std::io::Result<BTreeMap<String, Value>> {
    run_ticking(
        exe,
        creds,
        targets,
        action,
        how,
        Duration::from_secs(3600),
        |event| {
            if let Some((host, value)) = event {
                on_result(host, value);
            }
        },
    )
}

/// [`run`], where `on_event` also gets `None` whenever `tick` passes with no
/// host finishing, so a caller that batches results can write them within a
/// fixed delay however long the other hosts take.
pub fn run_ticking(
    exe: &Path,
    creds: &common::tls::Credentials,
    targets: &[Target],
    action: &Action,
    how: &Dispatch,
    tick: Duration,
    mut on_event: impl FnMut(Option<(&str, &Value)>),
) -> std::io::Result<BTreeMap<String, Value>> {
    let workers = how.forks.clamp(1, targets.len().max(1));
    let mut buckets: Vec<Vec<Target>> = vec![Vec::new(); workers];
    for (i, t) in targets.iter().enumerate() {
        buckets[i % workers].push(t.clone());
    }
    let (tx, rx) = mpsc::channel::<Report>();
    let mut children = Vec::new();
    for bucket in buckets.into_iter().filter(|b| !b.is_empty()) {
        let job = Job {
            targets: bucket,
            action: action.clone(),
            timeout_secs: how.timeout_secs,
            concurrency: how.concurrency,
            key: creds.key.clone(),
            cert: creds.cert.clone(),
            ca: creds.ca.clone(),
            crl: creds.crl.clone(),
            max_response: how.max_response,
        };
        let mut child = Command::new(exe)
            .arg0("func: worker")
            .arg("__worker")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()?;
        if let Some(mut stdin) = child.stdin.take() {
            let line = serde_json::to_string(&job).map_err(std::io::Error::other)?;
            // A worker that died at once is noticed below, host by host.
            let _ = writeln!(stdin, "{line}");
        }
        let stdout = child.stdout.take();
        let tx = tx.clone();
        let reader = std::thread::spawn(move || {
            let Some(stdout) = stdout else { return };
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Ok(report) = serde_json::from_str::<Report>(&line) {
                    if tx.send(report).is_err() {
                        break;
                    }
                }
            }
        });
        children.push((child, reader, job.targets));
    }
    drop(tx);
    let mut results = BTreeMap::new();
    loop {
        match rx.recv_timeout(tick) {
            Ok(report) => {
                let value = report.value();
                on_event(Some((&report.host, &value)));
                results.insert(report.host, value);
            }
            Err(mpsc::RecvTimeoutError::Timeout) => on_event(None),
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    for (mut child, reader, bucket) in children {
        let _ = reader.join();
        let status = child.wait()?;
        let missing: Vec<&Target> = bucket.iter().filter(|t| !results.contains_key(&t.name)).collect();
        for t in missing {
            let lost = remote_error(
                "func.overlord.WorkerDied",
                &format!("worker ended ({status}) before {} answered", t.name),
                "",
            );
            on_event(Some((&t.name, &lost)));
            results.insert(t.name.clone(), lost);
        }
    }
    Ok(results)
}
