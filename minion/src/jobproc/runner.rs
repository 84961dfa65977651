//! The job process. The daemon's zygote (`super::zygote`, a single-threaded
//! `funcd --job-zygote`) forks for each job; that child starts a new session
//! and forks once more, reports the grandchild's pid and start time and
//! exits, and the grandchild — leader of its own process group, reparented
//! to init, so no zombie is left — runs the method, writes its result
//! durably to the spool and tells the daemon. Every fork happens before any
//! runtime or thread exists (the supported way to fork), and no job pays for
//! an exec of the daemon's binary.

use std::io::Write;
use std::os::unix::net::UnixStream;
use std::panic::AssertUnwindSafe;
use std::time::Duration;

use common::paths::Root;
use common::xmlrpc::{self, remote_error};
use common::Value;

use crate::config::{MinionConfig, Overrides};
use crate::jobs::notify::SOCKET;
use crate::jobs::spool::{self, Spool};
use crate::jobs::{encode_result, now, proc};
use crate::method::MethodError;
use crate::modules::{Context, Registry};

/// Starts job `id` from a single-threaded process with no runtime: a new
/// session, then a fork. Returns the job's pid and start time in the
/// caller; the job itself (the forked child) runs and never returns.
pub fn start_detached(root: &Root, name: &str, id: &str) -> Result<(u32, u64), String> {
    if !spool::is_job_id(id) {
        return Err("not a job id".into());
    }
    let _ = nix::unistd::setsid();
    // SAFETY: the caller is single-threaded and has no runtime: nothing
    // can hold a lock across the fork.
    match unsafe { nix::unistd::fork() } {
        Ok(nix::unistd::ForkResult::Parent { child }) => {
            let pid = child.as_raw() as u32;
            // The child cannot be reaped before the caller exits (it is
            // reparented then), so its start time is readable.
            Ok((pid, proc::start_time(pid).unwrap_or(0)))
        }
        Ok(nix::unistd::ForkResult::Child) => {
            detach();
            let code = match run_detached(root, name.to_string(), id) {
                Ok(()) => 0,
                Err(_) => 1,
            };
            // The forked child ends here: it must never return into its
            // parent's stack (the caller's runtime, its open files).
            #[allow(clippy::exit)]
            std::process::exit(code);
        }
        Err(e) => Err(format!("cannot fork the job: {e}")),
    }
}

/// Own process group (so signals reach the job and its children), `/` as
/// working directory, Func's later umask, standard streams on /dev/null.
fn detach() {
    let _ = nix::unistd::setpgid(nix::unistd::Pid::from_raw(0), nix::unistd::Pid::from_raw(0));
    let _ = std::env::set_current_dir("/");
    nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(0o022));
    if let Ok(null) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
    {
        use std::os::fd::AsRawFd;
        for fd in 0..3 {
            // SAFETY: dup2 onto the standard descriptors of this process.
            unsafe { libc::dup2(null.as_raw_fd(), fd) };
        }
    }
}

fn run_detached(root: &Root, name: String, id: &str) -> std::io::Result<()> {
    let spool = Spool::new(root.status_dir().join("jobs"))?;
    let me = std::process::id();
    let start = proc::start_time(me).unwrap_or(0);
    spool.write_pid(id, me, start)?;
    let mut record = match spool.read_request(id) {
        Ok(r) => r,
        Err(e) => {
            // Without its request the job cannot run; still leave a result.
            let mut r = crate::jobs::placeholder(id);
            r.result_xml = Some(encode_result(remote_error(
                "func.minion.JobError",
                &format!("cannot read the job request: {e}"),
                "",
            )));
            r.pid = me;
            r.pid_start = start;
            r.ended = Some(now());
            spool.write_done(&r)?;
            notify(root, id);
            return Ok(());
        }
    };
    let caller = crate::acl::Caller::new(record.caller.clone(), record.overlord);
    let (value, dropin) = execute(root, name, &record.call_xml, &caller);
    record.pid = me;
    record.pid_start = start;
    record.result_xml = Some(encode_result(value));
    record.ended = Some(now());
    if let Err(e) = spool.write_done(&record) {
        // A full disk: the job ended, and its caller must learn that its
        // result was lost and why, not see a phantom signal. A small
        // record may still fit; if not, the daemon is told over the socket.
        let why = format!("the job ran, but its result could not be recorded: {e}");
        record.call_xml = String::new();
        record.result_xml = Some(encode_result(remote_error("func.minion.JobError", &why, "")));
        if spool.write_done(&record).is_err() {
            notify_line(root, &format!("{id} FAILED {}", common::paths::shorten(&why)));
            return Err(e);
        }
    }
    notify(root, id);
    if dropin {
        // What a drop-in module (a call, or a describe for system.*) left
        // behind in the job's process group ends with the job, as it does
        // with a synchronous call (this process too).
        let _ = nix::sys::signal::killpg(nix::unistd::getpgrp(), nix::sys::signal::Signal::SIGKILL);
    }
    Ok(())
}

/// Runs the recorded call; every failure is a `REMOTE_ERROR` value. Also
/// says whether a drop-in module process ran.
fn execute(root: &Root, name: String, call_xml: &str, caller: &crate::acl::Caller) -> (Value, bool) {
    let config = match MinionConfig::load(
        root.clone(),
        Overrides {
            name: Some(name),
            listen: None,
        },
    ) {
        Ok(c) => c,
        Err(e) => {
            return (
                MethodError::new("func.minion.ConfigError", e.to_string()).into_value(),
                false,
            )
        }
    };
    let limits = xmlrpc::Limits {
        max_body: usize::MAX,
        max_depth: config.limits.max_depth,
        max_values: usize::MAX,
    };
    let call = match xmlrpc::decode_call(call_xml.as_bytes(), &limits) {
        Ok(c) => c,
        Err(e) => {
            return (
                MethodError::new("func.minion.JobError", format!("unreadable job request: {e}")).into_value(),
                false,
            )
        }
    };
    // Drop-ins stay in the job's process group, which `kill_job` signals.
    let registry = Registry::with_dropins(
        config.root.clone(),
        config.modules.clone(),
        crate::dropin::exec::Group::Inherit,
    );
    let acl = crate::acl::Acl::load(&config.root.acl_dir());
    let ctx = Context {
        root: &config.root,
        copyfile_dirs: &config.copyfile_dirs,
        registry: &registry,
        jobs: None,
        caller,
        acl: &acl,
    };
    // Func's fact query on an async call: judged here, and the result is
    // Func's `[{"__fact__": verdict}, result]` or `[{"__fact__": verdict}]`.
    let (verdict, params) = match crate::facts::query_of(&call.params) {
        Some(wire) => match crate::facts::filtered(&config.root, wire) {
            crate::facts::Filtered::Run(verdict) => (Some(verdict), call.params[1..].to_vec()),
            crate::facts::Filtered::Answer(answer) => return (answer, false),
        },
        None => (None, call.params.clone()),
    };
    let value =
        match std::panic::catch_unwind(AssertUnwindSafe(|| registry.call(&ctx, &call.method, &params))) {
            Ok(Ok(v)) => v,
            Ok(Err(e)) => e.into_value(),
            Err(_) => MethodError::new("exceptions.Exception", "internal error in module").into_value(),
        };
    let value = match verdict {
        Some(verdict) => crate::facts::Filtered::wrap(verdict, value),
        None => value,
    };
    // Any drop-in run (a call, or a describe for a listing) may have left
    // processes in the job's group.
    (value, registry.ran_dropin())
}

/// Tells the daemon a result is waiting. Best effort: the daemon also
/// sweeps the spool, and answers status queries from it.
fn notify(root: &Root, id: &str) {
    notify_line(root, id);
}

/// One line to the daemon: `ID` (a result is waiting) or `ID FAILED why`
/// (the result could not be written).
fn notify_line(root: &Root, line: &str) {
    if let Ok(mut sock) = UnixStream::connect(root.run_dir().join(SOCKET)) {
        let _ = sock.set_write_timeout(Some(Duration::from_secs(2)));
        let _ = writeln!(sock, "{line}");
    }
}
