//! Killing an async job, for every front end: a dispatch driver that is
//! still running is stopped (and the hosts it never reached end as killed
//! before dispatch), and each host still running the job is sent a signal
//! (`jobs.signal_job`, which reaches the job's whole process group). The
//! minions then report the signalled jobs as ended; collecting that is the
//! caller's (a status refresh).

use common::xmlrpc::remote_error;
use common::Value;

use super::poller::Reply;
use crate::error::EngineError;
use crate::store::{JobRecord, JobStore, StoreError};
use crate::targets::Target;

/// How one host took the signal.
#[derive(Debug, Clone, PartialEq)]
pub enum Signalled {
    /// The minion's answer (a message).
    Sent(String),
    /// Its error (the job was not signalled there).
    Failed(Value),
    Unreachable(String),
}

/// Job `id` once its dispatch has settled, for every door's kill: a live
/// driver is let finish dispatching until `deadline` (so every minion job
/// it started is known and signalled), and stopped past it (see
/// [`stop_driver`]); `who` names the killer. A batch is asked to stop as
/// `batch stop --kill` does (its driver starts no more hosts and kills
/// those in flight). `None`: no such job.
pub fn settle_dispatch(
    store: &dyn JobStore,
    id: &str,
    deadline: std::time::Instant,
    signal: nix::sys::signal::Signal,
    who: &str,
) -> Result<Option<JobRecord>, EngineError> {
    let mut record = store.load(id)?;
    if record
        .as_ref()
        .is_some_and(|r| r.meta.batch && r.meta.ended.is_none())
    {
        crate::batch::control::request_stop(store, id, true)?;
    }
    while let Some(r) = record
        .as_ref()
        .filter(|r| !r.meta.dispatched && !r.meta.batch && !super::driver_gone(&r.meta))
    {
        if std::time::Instant::now() >= deadline {
            stop_driver(store, r, signal, who)?;
            return Ok(store.load(id)?);
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
        record = store.load(id)?;
    }
    Ok(record)
}

/// The `jobs.signal_job` calls for the hosts of `record` still running it.
pub fn signal_calls(
    root: &common::paths::Root,
    record: &JobRecord,
    signal: &str,
) -> Vec<(Target, String, Vec<Value>)> {
    record
        .in_flight()
        .map(|(host, job)| {
            let params = vec![Value::String(job.to_string()), Value::String(signal.to_string())];
            (
                Target::enrolled(root, host),
                "jobs.signal_job".to_string(),
                params,
            )
        })
        .collect()
}

/// A minion's reply to `jobs.signal_job`.
pub fn signalled(reply: Reply) -> Signalled {
    match reply {
        Reply::Value(Value::String(msg)) => Signalled::Sent(msg),
        Reply::Value(v) | Reply::Fault(v) => Signalled::Failed(v),
        Reply::Unreachable(why) => Signalled::Unreachable(why),
    }
}

impl Signalled {
    /// A reply as a warm pool answers it (a `REMOTE_ERROR` value where the
    /// call failed or the host could not be reached).
    pub fn of_value(value: Value) -> Self {
        if common::xmlrpc::is_remote_error(&value) {
            Signalled::Failed(value)
        } else {
            signalled(Reply::Value(value))
        }
    }

    /// Whether the signal was sent.
    pub fn sent(&self) -> bool {
        matches!(self, Signalled::Sent(_))
    }

    /// One line for people: the minion's message, or why not.
    pub fn line(&self) -> String {
        match self {
            Signalled::Sent(msg) => msg.clone(),
            Signalled::Failed(v) => crate::values::error_text(v),
            Signalled::Unreachable(why) => format!("unreachable: {why}"),
        }
    }

    /// For a JSON answer: the minion's message, or `{"error"}`.
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Signalled::Sent(msg) => serde_json::json!(msg),
            Signalled::Failed(v) => serde_json::json!({"error": crate::values::error_text(v)}),
            Signalled::Unreachable(why) => serde_json::json!({"error": why}),
        }
    }
}

/// Stops a live dispatch driver (its process group: it and its workers,
/// always with KILL: a driver must not go on dispatching), then ends the
/// hosts it never reached as killed before dispatch, naming `signal` and
/// `who` (e.g. "root via func jobs kill").
pub fn stop_driver(
    store: &dyn JobStore,
    record: &JobRecord,
    signal: nix::sys::signal::Signal,
    who: &str,
) -> Result<(), StoreError> {
    let here = record
        .meta
        .driver_host
        .as_deref()
        .is_none_or(|h| h == common::process::overlord_host());
    if let (Some((pid, start)), true) = (record.meta.driver, here) {
        if common::process::alive(pid, start) {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(pid as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
    let killed = remote_error(
        "func.overlord.Killed",
        &format!("killed before dispatch ({signal} by {who})"),
        "",
    );
    super::abandon_pending(store, record, killed).map(|_| ())
}
