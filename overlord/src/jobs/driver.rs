//! The dispatch driver of an async job: `func __driver --root ROOT ID`,
//! our own executable started in a new session (never a fork of a process
//! with a runtime), so it outlives the `func` that started it and ignores
//! its terminal. It reads the job from the store, calls `async.M.m` on every
//! pending host through the usual `--forks` worker processes, and records
//! the minion job ids (or dispatch errors) in batched writes.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::paths::Root;
use common::xmlrpc::{is_remote_error, remote_error};
use common::Value;

use super::encode_result;
use crate::dispatch::{self, Dispatch};
use crate::error::EngineError;
use crate::job::Action;
use crate::settings::WORKER_CONCURRENCY;
use crate::store::{HostState, HostUpdate, JobStore};
use crate::targets::Target;

/// Results written per transaction at most, and the longest a result waits.
const FLUSH_EVERY: usize = 64;
const FLUSH_AFTER: Duration = Duration::from_millis(50);

/// Starts the driver for job `id` of `store`, detached. Its stderr goes to
/// `var/log/func/driver.log` below the root.
pub fn spawn(exe: &Path, root: &Root, id: &str, store: &dyn JobStore) -> std::io::Result<Child> {
    spawn_detached(exe, root, "__driver", id, store)
}

/// Set for a driver that reads its store's handoff on stdin.
const STORE_ON_STDIN: &str = "FUNC_STORE_ON_STDIN";

/// Starts `func SUBCOMMAND --root ROOT ID` in a new session, stderr to
/// `var/log/func/driver.log` (the async-job and batch drivers). The driver
/// is told over a pipe which store `store` is, so it uses the one its
/// parent used (a func-api started before overlord.conf named another).
pub fn spawn_detached(
    exe: &Path,
    root: &Root,
    subcommand: &str,
    id: &str,
    store: &dyn JobStore,
) -> std::io::Result<Child> {
    common::private::private_dir(&root.log_dir())?;
    let log = common::private::append(&root.log_dir().join("driver.log"))?;
    let mut cmd = Command::new(exe);
    // In `ps`: what it is and which job, not /proc/self/exe.
    let role = if subcommand == "__batch" {
        "batch driver"
    } else {
        "job driver"
    };
    cmd.arg0(format!("func: {role} {}", common::paths::shorten(id)));
    let handoff = store.handoff();
    cmd.arg(subcommand)
        .arg("--root")
        .arg(root.dir())
        .arg(id)
        .stdin(match handoff {
            Some(_) => Stdio::piped(),
            None => Stdio::null(),
        })
        .stdout(Stdio::null())
        .stderr(log);
    if handoff.is_some() {
        cmd.env(STORE_ON_STDIN, "1");
    }
    if !crate::relay::local::may_hand() {
        cmd.env(crate::relay::local::DIRECT_ENV, "1");
    }
    // SAFETY: setsid is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        cmd.pre_exec(|| nix::unistd::setsid().map(|_| ()).map_err(std::io::Error::from));
    }
    let mut child = cmd.spawn()?;
    if let (Some(text), Some(mut pipe)) = (handoff, child.stdin.take()) {
        use std::io::Write as _;
        // A line of a few hundred bytes: within the pipe's buffer.
        pipe.write_all(format!("{text}\n").as_bytes())?;
    }
    Ok(child)
}

/// The store a driver was handed by its parent (`None`: read the
/// configuration, as a driver started by hand does).
fn handed_store(root: &Root) -> Option<crate::store::Store> {
    std::env::var_os(STORE_ON_STDIN)?;
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).ok()?;
    let keep = crate::conf::OverlordConf::or_defaults(root).keep_jobs;
    let url = match line.trim().split_once(' ') {
        None if line.trim() == "embedded" => None,
        Some(("postgres", url)) => Some(pgconn::StoreUrl::parse(url).map_err(|e| e.to_string())),
        _ => return None,
    };
    Some(crate::settings::store_of(root, url, keep))
}

/// Reserves a job id for `function(args)` on `targets` in the store, then
/// starts its detached driver. Returns the id and the driver process (for
/// a `func` that stays to poll to reap).
pub fn submit(
    store: &dyn JobStore,
    root: &Root,
    meta: crate::store::JobMeta,
    hosts: Vec<String>,
) -> Result<(String, std::process::Child), crate::error::EngineError> {
    use crate::error::EngineError;
    let signer = crate::seal::Signer::load(root).map_err(|e| EngineError::Credentials(e.to_string()))?;
    let id = store.create_sealed(meta, &hosts, &|m, h| signer.seal(m, h))?;
    let exe = common::process::own_exe().map_err(|source| EngineError::Spawn {
        what: "the job driver (its executable is not found)",
        source,
    })?;
    let child = spawn(&exe, root, &id, store).map_err(|source| EngineError::Spawn {
        what: "the job driver",
        source,
    })?;
    Ok((id, child))
}

/// `func __driver --root ROOT ID`; returns the exit code.
pub fn main(args: &[String]) -> i32 {
    run_detached("__driver", args, drive)
}

/// Reads `--root ROOT ID` (after SUBCOMMAND) and runs `drive` on that job;
/// returns the exit code.
pub fn run_detached(
    subcommand: &str,
    args: &[String],
    drive: impl FnOnce(&dyn JobStore, &Root, &str) -> Result<(), EngineError>,
) -> i32 {
    let (root, id) = match args {
        [flag, root, id] if flag == "--root" => (Root::new(root.clone()), id.clone()),
        _ => {
            crate::log::line(&format!(
                "func {subcommand}: usage: func {subcommand} --root ROOT JOB_ID"
            ));
            return 2;
        }
    };
    let store = handed_store(&root).unwrap_or_else(|| crate::settings::store(&root));
    match drive(&store, &root, &id) {
        Ok(()) => 0,
        Err(e) => {
            crate::log::line(&format!("func {subcommand} {id}: {e}"));
            1
        }
    }
}

fn drive(store: &dyn JobStore, root: &Root, id: &str) -> Result<(), EngineError> {
    let me = std::process::id();
    let what = format!("func driver {id}");
    crate::store::api::retrying(&what, || {
        store.set_driver(id, me, common::process::start_time(me).unwrap_or(0))
    })?;
    let record = crate::store::api::retrying(&what, || store.load(id))?
        .ok_or_else(|| EngineError::Record("no such job in the store".into()))?;
    let hosts: Vec<String> = record.hosts.keys().cloned().collect();
    if let Err(why) = crate::seal::verify(root, &record.meta, &hosts) {
        return Err(EngineError::Untrusted(refuse(store, root, &record, &why)));
    }
    let pending = record
        .hosts
        .iter()
        .filter(|(_, e)| e.state == HostState::Pending)
        .map(|(host, _)| Target::enrolled(root, host))
        .collect();
    let (direct, relayed) = delegated(root, &record.meta, pending);
    if !relayed.is_empty() {
        crate::store::api::retrying(&what, || store.update(id, &relayed, false))?;
    }
    let pending = dispatch_direct(store, root, &record.meta, &direct)?;
    // Whatever is left, and the end of the dispatch: kept until written,
    // even across a restart of the store's server.
    crate::store::api::retrying(&format!("func driver {id}"), || store.update(id, &pending, true))?;
    Ok(())
}

/// With `--delegate`, the pending hosts behind each relay are handed to it
/// at once: the hosts to call directly, and the relayed hosts' updates
/// (dispatched there, or finished with why not).
fn delegated(
    root: &Root,
    meta: &crate::store::JobMeta,
    pending: Vec<Target>,
) -> (Vec<Target>, Vec<(String, HostUpdate)>) {
    if !meta.delegate {
        return (pending, Vec::new());
    }
    match crate::relay::Routes::load(root, None) {
        Ok(routes) => {
            let (direct, relayed) = crate::reach::split(routes.as_ref(), pending);
            let Some(routes) = routes else {
                return (direct, Vec::new());
            };
            let order = crate::relay::Order::of_job(meta);
            let started = crate::reach::start_relayed(root, &routes, &order, relayed);
            (direct, crate::relay::block_on(started))
        }
        Err(e) => {
            let result_xml = encode_result(crate::relay::unreachable(&e));
            let lost = pending.into_iter().map(|t| {
                let update = HostUpdate::Finished {
                    result_xml: result_xml.clone(),
                };
                (t.name, update)
            });
            (Vec::new(), lost.collect())
        }
    }
}

/// Calls `async.M.m` on the `direct` hosts: handed to the root's func-api
/// when one serves it (`relay::local`: its kept connections, no TLS
/// handshake here), else over the worker fleet. Results reach the store
/// within FLUSH_AFTER of arriving, whatever the other hosts do (a stalled
/// host must not hide the others). What is left unwritten is returned for
/// the final update.
fn dispatch_direct(
    store: &dyn JobStore,
    root: &Root,
    meta: &crate::store::JobMeta,
    targets: &[Target],
) -> Result<Vec<(String, HostUpdate)>, EngineError> {
    let id = meta.id.as_str();
    let how = Dispatch {
        forks: meta.forks.max(1),
        timeout_secs: meta.timeout_secs,
        concurrency: WORKER_CONCURRENCY,
        max_response: crate::settings::max_response(root),
        handoff: false,
        verbose: false,
    };
    let mut pending: Vec<(String, HostUpdate)> = Vec::new();
    let mut last_flush = Instant::now();
    let mut on_event = |event: Option<(&str, &Value)>| {
        if let Some((host, value)) = event {
            pending.push((host.to_string(), dispatched(value)));
        }
        let due = pending.len() >= FLUSH_EVERY || last_flush.elapsed() >= FLUSH_AFTER;
        if !pending.is_empty() && due {
            match store.update(id, &pending, false) {
                Ok(_) => pending.clear(),
                // Kept for the next flush; the final one reports the error.
                Err(e) => crate::log::line(&format!("func driver {id}: cannot record results yet: {e}")),
            }
            last_flush = Instant::now();
        }
    };
    if targets.is_empty() {
        return Ok(pending);
    }
    let calling = crate::settings::Calling {
        credentials: crate::settings::credentials(root),
        max_response: how.max_response,
    };
    if let Some(handed) = crate::relay::local::Handed::for_job(root, meta, &calling) {
        let function = format!("async.{}", meta.function);
        ticking(&handed, targets, &function, &meta.params(), &mut on_event)?;
        return Ok(pending);
    }
    // Each minion runs this signed request at most once.
    let request = crate::seal::request_id(meta);
    let call_xml = common::xmlrpc::encode_call(
        &format!("async.{}", meta.function),
        meta.params(),
        common::xmlrpc::DEFAULT_MAX_DEPTH,
    )
    .map_err(|e| EngineError::Record(format!("the job's call: {e}")))?;
    let exe = common::process::own_exe().map_err(|source| EngineError::Spawn {
        what: "workers (the func executable is not found)",
        source,
    })?;
    dispatch::run_ticking(
        &exe,
        &crate::settings::credentials(root),
        targets,
        &Action::Call { call_xml, request },
        &how,
        FLUSH_AFTER,
        &mut on_event,
    )
    .map_err(|source| EngineError::Spawn {
        what: "workers",
        source,
    })?;
    Ok(pending)
}

/// Calls `function(params)` on `targets` through `direct`, handing each
/// host's end to `on_event` as it comes, and `None` every FLUSH_AFTER
/// without one (as `dispatch::run_ticking` does for the workers).
fn ticking(
    direct: &dyn crate::reach::Direct,
    targets: &[Target],
    function: &str,
    params: &[Value],
    on_event: &mut impl FnMut(Option<(&str, &Value)>),
) -> Result<(), EngineError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|source| EngineError::Spawn {
            what: "the driver's runtime",
            source,
        })?;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    runtime.block_on(async {
        let calling = direct.call(targets.to_vec(), function, params, tx);
        tokio::pin!(calling);
        let mut called = false;
        loop {
            tokio::select! {
                () = &mut calling, if !called => called = true,
                got = tokio::time::timeout(FLUSH_AFTER, rx.recv()) => match got {
                    Ok(Some((host, value))) => on_event(Some((&host, &value))),
                    // Every sender is gone: the call is over.
                    Ok(None) => break,
                    Err(_) => on_event(None),
                },
            }
        }
    });
    Ok(())
}

/// A host's answer to `async.M.m`: its minion job id, or a final error.
pub fn dispatched(value: &Value) -> HostUpdate {
    match value {
        // A minion's job id never stands for a relay's job: believed, it
        // would make the host's results come from that relay.
        Value::String(job) if crate::relay::parse_job_ref(job).is_none() => HostUpdate::Dispatched {
            minion_job: job.clone(),
        },
        v if is_remote_error(v) => HostUpdate::Finished {
            result_xml: encode_result(v.clone()),
        },
        _ => HostUpdate::Finished {
            result_xml: encode_result(remote_error(
                "func.overlord.BadAnswer",
                "the minion answered an async call without a job id",
                "",
            )),
        },
    }
}

/// Refuses job `record` whose request does not verify (DESIGN §9): sends
/// nothing, ends every unfinished host with the reason, writes an audit
/// line, and returns the message to log (the driver exits 1).
pub fn refuse(
    store: &dyn JobStore,
    root: &Root,
    record: &crate::store::JobRecord,
    why: &crate::seal::SealError,
) -> String {
    let id = &record.meta.id;
    let text = format!("refused, nothing sent: {why}");
    let result = encode_result(remote_error("func.overlord.UntrustedRequest", &text, ""));
    let changes: Vec<(String, HostUpdate)> = record
        .hosts
        .iter()
        .filter(|(_, e)| e.state != HostState::Finished)
        .map(|(h, _)| {
            (
                h.clone(),
                HostUpdate::Finished {
                    result_xml: result.clone(),
                },
            )
        })
        .collect();
    let hosts: Vec<String> = record.hosts.keys().cloned().collect();
    crate::audit::Audit::new(root).line(
        &record.meta.user,
        None,
        &format!("driver refused job {id} ({}): {why}", record.meta.function),
        &hosts,
        403,
    );
    if let Err(e) = store.update(id, &changes, true) {
        return format!("{text} (and cannot record that: {e})");
    }
    text
}
