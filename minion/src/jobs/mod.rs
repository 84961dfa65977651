//! Async jobs on the minion (DESIGN §6): `async.M.m` records a job, starts
//! it detached and answers its id at once; `jobs.*` answer from the store.
//!
//! How a job runs: the daemon records the job as running, writes the
//! request to the spool, then asks its zygote (`funcd --job-zygote`, a
//! single-threaded process spawned on the first job, see [`zygote`]) to
//! start it. The zygote forks a child that starts a new session and forks
//! once more, reporting the grandchild's pid and start time; the grandchild
//! leads its own process group, runs the method, writes its result to the
//! spool durably and notifies the daemon over a Unix socket. The daemon is
//! the only process that opens the redb store, and never forks a runtime.
//!
//! A job whose process is gone without a result (pid + start time checked)
//! ends as a `REMOTE_ERROR` saying so, never RUNNING forever.
//!
//! A job belongs to the identity that started it (`<cn>-<subject hash>`).
//! The overlord sees and manages every job; any other caller only its own,
//! and another caller's job answers exactly as an unknown id would, so ids
//! cannot even be confirmed.

pub mod notify;
pub mod proc;
pub mod spool;
pub mod store;
pub mod zygote;

use std::path::PathBuf;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::xmlrpc::{self, remote_error};
use common::Value;

use crate::acl::Caller;
use crate::method::MethodError;
use spool::Spool;
use store::{JobRecord, Store, StoreError};

/// Func's status codes.
pub const RUNNING: i32 = 0;
pub const FINISHED: i32 = 1;
pub const LOST_IN_SPACE: i32 = 2;

/// Exception type of a job that died without a result.
pub const JOB_DIED: &str = "func.minion.JobDied";

/// The daemon's job table.
pub struct Jobs {
    store: Store,
    spool: Spool,
    keep_secs: f64,
    /// Forks the job processes (`funcd --job-zygote`).
    zygote: zygote::Zygote,
    /// The last id handed out, in µs, so ids stay unique and increasing.
    last_id: Mutex<u64>,
    /// Counts jobs that ended, and wakes `jobs.wait_job` callers.
    endings: (Mutex<u64>, Condvar),
    /// Running jobs and kept bytes each caller may have.
    quotas: crate::limits::Quotas,
    /// Held from a submission's quota check to its record, so concurrent
    /// submissions cannot overshoot a caller's quota together.
    admitting: Mutex<()>,
    /// Jobs whose process could not write its result (a full disk), with
    /// why: they end with that, not as a death without a result.
    lost: Mutex<std::collections::HashMap<String, String>>,
    /// Signalled by every submission (wakes an idle sweep).
    submissions: tokio::sync::Notify,
}

/// When the next sweep is due, as [`Jobs::sweep`] sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NextSweep {
    /// Jobs run: look again shortly.
    WhileRunning,
    /// None runs: the next purge is due after this long (`Duration::MAX`:
    /// never), or sooner if a job is submitted.
    Idle(Duration),
}

/// Longest one `jobs.wait_job` call waits.
pub const MAX_WAIT: Duration = Duration::from_secs(60);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

pub fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// A limit for decoding what this minion encoded itself.
fn own_limits() -> xmlrpc::Limits {
    xmlrpc::Limits {
        max_body: usize::MAX,
        max_depth: xmlrpc::DEFAULT_MAX_DEPTH,
        max_values: usize::MAX,
    }
}

/// The value inside a stored `<methodResponse>`.
pub fn decode_result(result_xml: &str) -> Value {
    match xmlrpc::decode_response(result_xml.as_bytes(), &own_limits()) {
        Ok(Ok(v)) => v,
        Ok(Err(fault)) => remote_error(
            "xmlrpclib.Fault",
            &format!("{}: {}", fault.code(), fault.string()),
            "",
        ),
        Err(e) => remote_error(
            "func.minion.StoreError",
            &format!("unreadable stored result: {e}"),
            "",
        ),
    }
}

/// Encodes a job's result; a value that cannot be encoded becomes an error value.
pub fn encode_result(value: Value) -> String {
    xmlrpc::encode_response(value, xmlrpc::DEFAULT_MAX_DEPTH).unwrap_or_else(|e| {
        let err = remote_error(
            "exceptions.OverflowError",
            &format!("cannot encode the result: {e}"),
            "",
        );
        xmlrpc::encode_response(err, xmlrpc::DEFAULT_MAX_DEPTH).unwrap_or_default()
    })
}

impl Jobs {
    /// Opens the store below `root` (`var/lib/func/minion.redb`) and takes
    /// in whatever finished while no daemon was running.
    pub fn open(
        root: &common::paths::Root,
        name: &str,
        keep_secs: f64,
        exe: PathBuf,
        quotas: crate::limits::Quotas,
    ) -> Result<Self, StoreError> {
        let (store, replaced) = Store::open_or_replace(&root.status_dir().join("minion.redb"))?;
        let spool = Spool::new(root.status_dir().join("jobs"))
            .and_then(|s| s.tighten().map(|_| s))
            .map_err(|e| StoreError::Open {
                path: root.status_dir().join("jobs").display().to_string(),
                message: e.to_string(),
            })?;
        let jobs = Self {
            store,
            spool,
            keep_secs,
            zygote: zygote::Zygote::new(exe, root.dir().to_path_buf(), name.to_string()),
            last_id: Mutex::new(0),
            endings: (Mutex::new(0), Condvar::new()),
            quotas,
            admitting: Mutex::new(()),
            lost: Mutex::default(),
            submissions: tokio::sync::Notify::new(),
        };
        if replaced.is_some() {
            jobs.readopt();
        }
        jobs.recover()?;
        Ok(jobs)
    }

    pub fn spool(&self) -> &Spool {
        &self.spool
    }

    /// After a corrupt store was replaced: the jobs whose requests are
    /// still in the spool are recorded again as running (their results, or
    /// their deaths, are then taken in as usual).
    fn readopt(&self) {
        let mut adopted = 0;
        for id in self.spool.request_ids() {
            let Ok(mut record) = self.spool.read_request(&id) else {
                continue;
            };
            if record.id != id {
                continue;
            }
            if let Some((pid, start)) = self.spool.read_pid(&id) {
                (record.pid, record.pid_start) = (pid, start);
            }
            record.ended = None;
            record.result_xml = None;
            if matches!(self.store.insert_new(&record), Ok(true)) {
                adopted += 1;
            }
        }
        tracing::warn!(
            jobs = adopted,
            "jobs taken in again from the spool after replacing the corrupt store"
        );
    }

    /// Start-up: pids the daemon never recorded, then results and deaths.
    fn recover(&self) -> Result<(), StoreError> {
        for record in self.store.running()? {
            if record.pid == 0 {
                if let Some((pid, start)) = self.spool.read_pid(&record.id) {
                    self.store.record_pid(&record.id, pid, start)?;
                }
            }
        }
        self.sweep().map(|_| ())
    }

    /// Takes in every waiting result, ends jobs whose process died, purges
    /// expired records. Runs at start-up and periodically; says when it is
    /// next needed: soon while jobs run (a death is only seen by looking),
    /// else when the oldest record expires or a job is submitted
    /// ([`Self::submitted`]), so an idle minion costs nothing between.
    pub fn sweep(&self) -> Result<NextSweep, StoreError> {
        for id in self.spool.done_ids() {
            self.ingest(&id)?;
        }
        let mut running = false;
        for record in self.store.running()? {
            running |= !self.check(record)?.finished();
        }
        self.store.purge(now(), self.keep_secs)?;
        self.zygote.reap_if_ended();
        if running {
            return Ok(NextSweep::WhileRunning);
        }
        Ok(match self.store.next_expiry(self.keep_secs)? {
            Some(at) => NextSweep::Idle(Duration::from_secs_f64((at - now()).max(0.0))),
            None => NextSweep::Idle(Duration::MAX),
        })
    }

    /// Resolves once a job was submitted since the last call (a sweep
    /// waiting out an idle spell wakes up for it).
    pub async fn submitted(&self) {
        self.submissions.notified().await;
    }

    /// Takes in the result of `id` if its job wrote one.
    pub fn ingest(&self, id: &str) -> Result<bool, StoreError> {
        if !spool::is_job_id(id) {
            return Ok(false);
        }
        // Quota checks and the records they admit happen one at a time, so
        // concurrent intakes (and submissions) cannot overshoot together.
        let _admitting = lock(&self.admitting);
        let record = match self.spool.read_done(id) {
            None => return Ok(false),
            Some(Ok(record)) => self.within_quota(record),
            Some(Err(why)) => {
                let mut record = self.store.get(id)?.unwrap_or_else(|| placeholder(id));
                record.result_xml = Some(encode_result(remote_error("func.minion.StoreError", &why, "")));
                record.ended = Some(now());
                record
            }
        };
        self.store.finish(&record, now(), self.keep_secs)?;
        self.spool.remove(id);
        self.ended();
        Ok(true)
    }

    /// `record` if its result fits what its caller may keep; otherwise the
    /// same record with the result replaced by an error saying so.
    fn within_quota(&self, mut record: JobRecord) -> JobRecord {
        let caller = Caller::new(record.caller.clone(), record.overlord);
        let (_, max_bytes) = self.quotas.jobs_of(&caller);
        let result = record.result_xml.as_ref().map_or(0, String::len) as u64;
        let kept = self.store.usage(&caller.key, caller.overlord).bytes;
        if kept.saturating_add(result) <= max_bytes {
            return record;
        }
        let key = if caller.overlord {
            "max_job_bytes_overlord"
        } else {
            "max_job_bytes_per_caller"
        };
        // The kept request goes too, so the short error in its place keeps
        // the caller within the quota.
        record.call_xml = String::new();
        record.result_xml = Some(encode_result(remote_error(
            crate::limits::BUSY,
            &format!(
                "the job's result ({result} bytes) is more than {} may keep ({kept} of {max_bytes} bytes kept; {key}); it was dropped, with the job's request",
                caller.key
            ),
            "",
        )));
        record
    }

    /// Refuses a new job of `caller` that its quotas do not allow.
    fn admit(&self, caller: &Caller, request_bytes: u64) -> Result<(), MethodError> {
        let (max_running, max_bytes) = self.quotas.jobs_of(caller);
        let usage = self.store.usage(&caller.key, caller.overlord);
        let (jobs_key, bytes_key) = match caller.overlord {
            true => ("max_jobs_overlord", "max_job_bytes_overlord"),
            false => ("max_jobs_per_caller", "max_job_bytes_per_caller"),
        };
        if usage.running >= max_running {
            return Err(crate::limits::busy(format!(
                "{} already runs {} async jobs on this minion ({jobs_key} = {max_running})",
                caller.key, usage.running
            )));
        }
        if usage.bytes.saturating_add(request_bytes) > max_bytes {
            return Err(crate::limits::busy(format!(
                "{} keeps {} bytes of job requests and results here; this request ({request_bytes} bytes) would pass {bytes_key} = {max_bytes} (wait for keep_jobs to expire them)",
                caller.key, usage.bytes
            )));
        }
        Ok(())
    }

    /// A job process says it could not write its result, and why.
    pub fn result_lost(&self, id: &str, why: &str) {
        if !spool::is_job_id(id) {
            return;
        }
        let mut lost = lock(&self.lost);
        if lost.len() < 10_000 {
            lost.insert(id.to_string(), why.to_string());
        }
    }

    /// Wakes whoever waits for a job to end.
    fn ended(&self) {
        *lock(&self.endings.0) += 1;
        self.endings.1.notify_all();
    }

    /// `jobs.wait_job`: [`Self::status`], but while the job runs it waits
    /// (at most `wait`, capped at [`MAX_WAIT`]) for it to end, so a caller
    /// learns of the end at once instead of polling for it.
    pub fn wait(&self, id: &str, wait: Duration, viewer: &Caller) -> Result<Value, StoreError> {
        let deadline = Instant::now() + wait.min(MAX_WAIT);
        loop {
            let seen = *lock(&self.endings.0);
            let status = self.status(id, viewer)?;
            let now = Instant::now();
            let running = matches!(&status, Value::Array(a) if a.first() == Some(&Value::Integer(RUNNING)));
            if !running || now >= deadline {
                return Ok(status);
            }
            // An end of any job wakes us; a death without a result is
            // only seen by looking, so look again at least every second.
            let slice = (deadline - now).min(Duration::from_secs(1));
            let guard = lock(&self.endings.0);
            let _ = self.endings.1.wait_timeout_while(guard, slice, |n| *n == seen);
        }
    }

    /// Brings a running record up to date: its result if written, or its
    /// death if its process is gone. Returns the current record.
    fn check(&self, record: JobRecord) -> Result<JobRecord, StoreError> {
        if record.finished() {
            return Ok(record);
        }
        let id = record.id.clone();
        let gone = match record.pid {
            // Not yet known: the daemon is still starting it, or crashed
            // while doing so; the job's own pid file tells.
            0 => match self.spool.read_pid(&id) {
                Some((pid, start)) => !proc::alive(pid, start),
                None => now() - record.started > 60.0,
            },
            pid => !proc::alive(pid, record.pid_start),
        };
        // The result is written before the process exits, so look for it
        // only after seeing the process gone.
        if self.ingest(&id)? {
            return Ok(self.store.get(&id)?.unwrap_or(record));
        }
        if gone {
            let mut dead = record.clone();
            let lost = lock(&self.lost).get(&id).cloned();
            dead.result_xml = Some(encode_result(match &lost {
                Some(why) => remote_error("func.minion.JobError", why, ""),
                None => remote_error(JOB_DIED, &death_message(&record), ""),
            }));
            dead.ended = Some(now());
            self.store.finish(&dead, now(), self.keep_secs)?;
            lock(&self.lost).remove(&id);
            self.spool.remove(&id);
            self.ended();
            return Ok(self.store.get(&id)?.unwrap_or(dead));
        }
        Ok(record)
    }

    /// The current record of `id` (results and deaths taken in first).
    pub fn find(&self, id: &str) -> Result<Option<JobRecord>, StoreError> {
        match self.store.get(id)? {
            Some(record) => self.check(record).map(Some),
            None if self.ingest(id)? => self.store.get(id),
            None => Ok(None),
        }
    }

    /// The current record of `id` if `viewer` may see it (its owner, or
    /// the overlord); `None` exactly as for an unknown id otherwise.
    pub fn find_for(&self, id: &str, viewer: &Caller) -> Result<Option<JobRecord>, StoreError> {
        Ok(self.find(id)?.filter(|r| sees(viewer, r)))
    }

    /// `jobs.job_status`: `[0, -1]`, `[1, result]` or `[2, 0]` (also for a
    /// job `viewer` may not see).
    pub fn status(&self, id: &str, viewer: &Caller) -> Result<Value, StoreError> {
        Ok(match self.find_for(id, viewer)? {
            None => Value::Array(vec![Value::Integer(LOST_IN_SPACE), Value::Integer(0)]),
            Some(r) => match &r.result_xml {
                Some(xml) if r.finished() => Value::Array(vec![Value::Integer(FINISHED), decode_result(xml)]),
                _ => Value::Array(vec![Value::Integer(RUNNING), Value::Integer(-1)]),
            },
        })
    }

    /// Running jobs `viewer` may see, each brought up to date first.
    pub fn running(&self, viewer: &Caller) -> Result<Vec<JobRecord>, StoreError> {
        let mut out = Vec::new();
        for record in self.store.running()?.into_iter().filter(|r| sees(viewer, r)) {
            let record = self.started_record(self.check(record)?)?;
            if !record.finished() {
                out.push(record);
            }
        }
        Ok(out)
    }

    /// `record` with its pid: a job being submitted right now (recorded, not
    /// started yet) has none, so wait (2 s at most) for the zygote's report.
    pub fn started_record(&self, mut record: JobRecord) -> Result<JobRecord, StoreError> {
        let patience = Instant::now() + Duration::from_secs(2);
        while record.pid == 0 && !record.finished() && Instant::now() < patience {
            if let Some((pid, start)) = self.spool.read_pid(&record.id) {
                (record.pid, record.pid_start) = (pid, start);
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
            match self.find(&record.id)? {
                Some(r) => record = r,
                None => break,
            }
        }
        Ok(record)
    }

    /// Every record the store holds that `viewer` may see.
    pub fn all(&self, viewer: &Caller) -> Result<Vec<JobRecord>, StoreError> {
        self.sweep()?;
        Ok(self
            .store
            .all()?
            .into_iter()
            .filter(|r| sees(viewer, r))
            .collect())
    }

    /// Sends `signal` to a running job's process group, noting who did it.
    /// `Ok(None)` when the job is not running (or not the caller's).
    pub fn signal(
        &self,
        id: &str,
        signal: nix::sys::signal::Signal,
        caller: &Caller,
    ) -> Result<Option<JobRecord>, MethodError> {
        let store_err = |e: StoreError| MethodError::os(e.to_string());
        let Some(record) = self.find_for(id, caller).map_err(store_err)? else {
            return Ok(None);
        };
        let record = self.started_record(record).map_err(store_err)?;
        if record.finished() || record.pid == 0 {
            return Ok(None);
        }
        let note = format!("{signal} sent by {}", caller.key);
        self.store
            .update_running(id, |r| r.signalled_by = Some(note))
            .map_err(store_err)?;
        match proc::signal_group(record.pid, record.pid_start, signal) {
            Ok(()) => Ok(Some(record)),
            Err(_) => Ok(None),
        }
    }

    /// A fresh unique id, `"<epoch seconds>-minion"` with µs resolution.
    fn next_id(&self) -> String {
        let mut last = self.last_id.lock().unwrap_or_else(|p| p.into_inner());
        let now_us = (now() * 1e6) as u64;
        *last = now_us.max(*last + 1);
        format!("{}-minion", *last as f64 / 1e6)
    }

    /// `async.METHOD(params)`: records the job, starts it detached, returns its id.
    ///
    /// The id is answered once the job has started (the zygote reported its
    /// pid) or failed to start; runs on a blocking thread.
    ///
    /// `request`: the identity of the signed request the call belongs to
    /// (the overlord's word, DESIGN §9): one already run here, while its
    /// job is kept, is refused and not run again.
    pub fn submit(
        &self,
        method: &str,
        params: Vec<Value>,
        caller: &Caller,
        request: Option<String>,
    ) -> Result<String, MethodError> {
        let call_xml = xmlrpc::encode_call(method, params, xmlrpc::DEFAULT_MAX_DEPTH)
            .map_err(|e| MethodError::value(format!("cannot record the call: {e}")))?;
        let mut record = JobRecord {
            id: String::new(),
            method: method.to_string(),
            call_xml,
            caller: caller.key.clone(),
            overlord: caller.overlord,
            pid: 0,
            pid_start: 0,
            started: now(),
            ended: None,
            result_xml: None,
            signalled_by: None,
            request,
        };
        let store_err = |e: StoreError| MethodError::os(e.to_string());
        {
            let _admitting = lock(&self.admitting);
            if let Some(request) = &record.request {
                if let Some(job) = self.store.ran_request(request).map_err(store_err)? {
                    return Err(MethodError::new(
                        common::rpc::client::ALREADY_RAN,
                        format!("this signed request already ran here as job {job}: not run again"),
                    ));
                }
            }
            self.admit(caller, record.call_xml.len() as u64)?;
            loop {
                record.id = self.next_id();
                if self.store.insert_new(&record).map_err(store_err)? {
                    break;
                }
            }
        }
        self.submissions.notify_one();
        // The job process reads its request from the spool as it starts:
        // without it (a full disk) there is no job, and the caller is told.
        if let Err(e) = self.spool.write_request(&record) {
            let _ = self.launch_failed(record, &e);
            return Err(MethodError::os(format!("cannot record the job request: {e}")));
        }
        // Started before the id is answered (submit runs on a blocking
        // thread): a daemon that dies right after answering must not leave
        // a job that never ran.
        let id = record.id.clone();
        self.start(record);
        Ok(id)
    }

    /// Starts `record`'s job through the zygote and records its pid (or,
    /// if it cannot start, ends it saying why).
    fn start(&self, record: JobRecord) {
        let recorded = match self.zygote.launch(&record.id) {
            Ok((pid, start)) => self.store.record_pid(&record.id, pid, start),
            Err(e) => self.launch_failed(record, &e),
        };
        if let Err(e) = recorded {
            tracing::warn!(error = %e, "cannot record a job's start");
        }
    }

    fn launch_failed(&self, mut record: JobRecord, e: &std::io::Error) -> Result<(), StoreError> {
        record.result_xml = Some(encode_result(remote_error(
            "OSError",
            &format!("cannot start the job: {e}"),
            "",
        )));
        record.ended = Some(now());
        self.store.finish(&record, now(), self.keep_secs)?;
        self.spool.remove(&record.id);
        self.ended();
        Ok(())
    }
}

/// A record for a result whose request is gone.
pub(crate) fn placeholder(id: &str) -> JobRecord {
    JobRecord {
        id: id.to_string(),
        method: String::new(),
        call_xml: String::new(),
        caller: String::new(),
        overlord: false,
        pid: 0,
        pid_start: 0,
        started: 0.0,
        ended: None,
        result_xml: None,
        signalled_by: None,
        request: None,
    }
}

/// Whether `viewer` may see `record`: the overlord sees every job, anyone
/// else only the jobs it started.
fn sees(viewer: &Caller, record: &JobRecord) -> bool {
    viewer.overlord || (record.caller == viewer.key && !record.overlord)
}

/// How a job without a result ended, as far as the minion can tell.
fn death_message(record: &JobRecord) -> String {
    match (&record.signalled_by, record.pid) {
        (Some(by), pid) => format!("job killed: {by} (process {pid} ended without a result)"),
        (None, 0) => "the job process never started".into(),
        (None, pid) => {
            format!(
                "job process {pid} ended without a result (killed by a signal from outside Func, or crashed)"
            )
        }
    }
}
