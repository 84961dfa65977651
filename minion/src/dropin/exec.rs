//! Runs one drop-in executable with bounds: input written and output read
//! through one `poll` loop (no thread per pipe, no deadlock on a full pipe),
//! a deadline, a cap on stdout and on stderr. Whatever happens — exit, crash,
//! timeout, a flood — the module's process group is killed before the
//! module is reaped (its pid, hence its group id, cannot be reused before),
//! so nothing it started outlives the call.
//!
//! Inside an async job the module stays in the job's process group, so
//! `kill_job` reaches it; there only the module itself is killed here, and
//! the job runner kills the rest of its group when it ends.

use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long the output pipes may stay open after the module exited (a
/// process outside its group holding them) before what arrived is used.
const DRAIN_AFTER_EXIT: Duration = Duration::from_secs(1);
/// Bytes of stderr kept for an error's detail (the end of it).
const STDERR_TAIL: usize = 2048;

/// Bounds of one run.
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    pub timeout: Duration,
    pub max_stdout: usize,
    pub max_stderr: usize,
}

/// Where the module's processes live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group {
    /// A new process group, killed as a whole when the run ends (funcd).
    Own,
    /// The caller's group (an async job process, which `kill_job` signals).
    Inherit,
}

/// How the process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    Exit(i32),
    Signal(i32),
}

/// A run that ended by itself, within its bounds.
#[derive(Debug)]
pub struct Finished {
    pub ended: Ended,
    pub stdout: Vec<u8>,
    /// The last bytes of stderr.
    pub stderr_tail: Vec<u8>,
}

/// A run that did not end by itself within its bounds.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("cannot start: {0}")]
    Spawn(std::io::Error),
    #[error("did not finish within {0:?} (killed)")]
    Timeout(Duration, Vec<u8>),
    #[error("printed more than {0} bytes (killed)")]
    StdoutTooLarge(usize, Vec<u8>),
    #[error("wrote more than {0} bytes to stderr (killed)")]
    StderrFlood(usize, Vec<u8>),
    #[error("reading its output: {0}")]
    Io(std::io::Error),
}

impl RunError {
    /// The end of what the module wrote to stderr, when it got that far.
    pub fn stderr_tail(&self) -> &[u8] {
        match self {
            RunError::Timeout(_, t) | RunError::StdoutTooLarge(_, t) | RunError::StderrFlood(_, t) => t,
            _ => &[],
        }
    }
}

/// Runs `cmd` with `input` on its stdin.
pub fn run(mut cmd: Command, input: &[u8], bounds: Bounds, group: Group) -> Result<Finished, RunError> {
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if group == Group::Own {
        cmd.process_group(0);
    }
    let mut child = cmd.spawn().map_err(RunError::Spawn)?;
    let mut run = Running::new(&mut child, input, bounds, group);
    let outcome = run.pump();
    // Killed (if anything is left) before reaping: the group id stays ours.
    run.kill();
    drop(run);
    let status = child.wait();
    let mut finished = outcome?;
    let status = status.map_err(RunError::Io)?;
    finished.ended = match (status.code(), status.signal()) {
        (Some(code), _) => Ended::Exit(code),
        (None, Some(sig)) => Ended::Signal(sig),
        (None, None) => Ended::Signal(0),
    };
    Ok(finished)
}

/// The pipes and timers of one run.
struct Running<'a> {
    pid: i32,
    group: Group,
    bounds: Bounds,
    stdin: Option<std::process::ChildStdin>,
    input: &'a [u8],
    written: usize,
    stdout: Option<std::process::ChildStdout>,
    stderr: Option<std::process::ChildStderr>,
    out: Vec<u8>,
    err_tail: Vec<u8>,
    err_total: usize,
    pidfd: Option<OwnedFd>,
    exited: Option<Instant>,
}

impl<'a> Running<'a> {
    fn new(child: &mut Child, input: &'a [u8], bounds: Bounds, group: Group) -> Self {
        let pid = child.id() as i32;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take();
        let stderr = child.stderr.take();
        for fd in [
            stdin.as_ref().map(|f| f.as_raw_fd()),
            stdout.as_ref().map(|f| f.as_raw_fd()),
            stderr.as_ref().map(|f| f.as_raw_fd()),
        ]
        .into_iter()
        .flatten()
        {
            set_nonblocking(fd);
        }
        Self {
            pid,
            group,
            bounds,
            stdin,
            input,
            written: 0,
            stdout,
            stderr,
            out: Vec::new(),
            err_tail: Vec::new(),
            err_total: 0,
            pidfd: pidfd_open(pid),
            exited: None,
        }
    }

    /// Moves bytes until the module has exited and its output is closed.
    fn pump(&mut self) -> Result<Finished, RunError> {
        let deadline = Instant::now() + self.bounds.timeout;
        if self.input.is_empty() {
            self.stdin = None;
        }
        loop {
            if self.exited.is_none() && self.has_exited() {
                self.exited = Some(Instant::now());
                // Whatever it left behind goes now; that closes the pipes it held.
                self.kill();
            }
            let open = self.stdout.is_some() || self.stderr.is_some();
            let now = Instant::now();
            match self.exited {
                Some(at) if !open || now >= at + DRAIN_AFTER_EXIT => {
                    return Ok(Finished {
                        ended: Ended::Exit(0),
                        stdout: std::mem::take(&mut self.out),
                        stderr_tail: std::mem::take(&mut self.err_tail),
                    })
                }
                _ => {}
            }
            if now >= deadline {
                return Err(RunError::Timeout(self.bounds.timeout, self.err_tail.clone()));
            }
            let mut wait = deadline - now;
            if let Some(at) = self.exited {
                wait = wait.min((at + DRAIN_AFTER_EXIT).saturating_duration_since(now));
            } else if self.pidfd.is_none() {
                // No pidfd (kernel before 5.3): look at the process now and then.
                wait = wait.min(Duration::from_millis(5));
            }
            self.poll_once(wait)?;
        }
    }

    fn poll_once(&mut self, wait: Duration) -> Result<(), RunError> {
        let mut fds: Vec<libc::pollfd> = Vec::with_capacity(4);
        let mut push = |fd: Option<RawFd>, events: libc::c_short| {
            if let Some(fd) = fd {
                fds.push(libc::pollfd {
                    fd,
                    events,
                    revents: 0,
                });
            }
        };
        push(self.stdin.as_ref().map(|f| f.as_raw_fd()), libc::POLLOUT);
        push(self.stdout.as_ref().map(|f| f.as_raw_fd()), libc::POLLIN);
        push(self.stderr.as_ref().map(|f| f.as_raw_fd()), libc::POLLIN);
        if self.exited.is_none() {
            push(self.pidfd.as_ref().map(|f| f.as_raw_fd()), libc::POLLIN);
        }
        let ms = wait.as_millis().clamp(1, i32::MAX as u128) as i32;
        // SAFETY: `fds` is a valid array of pollfd of the given length.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            return match e.kind() {
                std::io::ErrorKind::Interrupted => Ok(()),
                _ => Err(RunError::Io(e)),
            };
        }
        let ready = |fd: Option<RawFd>| fd.is_some_and(|fd| fds.iter().any(|p| p.fd == fd && p.revents != 0));
        if ready(self.stdin.as_ref().map(|f| f.as_raw_fd())) {
            self.feed();
        }
        if ready(self.stdout.as_ref().map(|f| f.as_raw_fd())) {
            self.read_stdout()?;
        }
        if ready(self.stderr.as_ref().map(|f| f.as_raw_fd())) {
            self.read_stderr()?;
        }
        Ok(())
    }

    /// Writes what the pipe takes; a module that closed its stdin simply
    /// does not get the rest.
    fn feed(&mut self) {
        let Some(stdin) = self.stdin.as_mut() else { return };
        match stdin.write(&self.input[self.written..]) {
            Ok(n) => self.written += n,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => self.written = self.input.len(),
        }
        if self.written >= self.input.len() {
            self.stdin = None;
        }
    }

    fn read_stdout(&mut self) -> Result<(), RunError> {
        let mut buf = [0u8; 65536];
        match read_ready(&mut self.stdout, &mut buf)? {
            Some(n) if self.out.len() + n > self.bounds.max_stdout => Err(RunError::StdoutTooLarge(
                self.bounds.max_stdout,
                self.err_tail.clone(),
            )),
            Some(n) => {
                self.out.extend_from_slice(&buf[..n]);
                Ok(())
            }
            None => Ok(()),
        }
    }

    fn read_stderr(&mut self) -> Result<(), RunError> {
        let mut buf = [0u8; 65536];
        let Some(n) = read_ready(&mut self.stderr, &mut buf)? else {
            return Ok(());
        };
        self.err_total += n;
        self.err_tail.extend_from_slice(&buf[..n]);
        let excess = self.err_tail.len().saturating_sub(STDERR_TAIL);
        self.err_tail.drain(..excess);
        if self.err_total > self.bounds.max_stderr {
            return Err(RunError::StderrFlood(
                self.bounds.max_stderr,
                self.err_tail.clone(),
            ));
        }
        Ok(())
    }

    /// Whether the module has exited (without reaping it).
    fn has_exited(&self) -> bool {
        // SAFETY: waitid with WNOWAIT only looks; `info` is zeroed plain data.
        unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            let rc = libc::waitid(
                libc::P_PID,
                self.pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
            );
            rc == 0 && info.si_pid() != 0
        }
    }

    /// SIGKILL to the module's group (or only to the module inside a job),
    /// and to the module itself in any case: a module that moved to another
    /// group is still ended, so the wait that follows cannot last.
    fn kill(&self) {
        // SAFETY: plain syscalls on a pid that is ours and not yet reaped.
        unsafe {
            if self.group == Group::Own {
                libc::killpg(self.pid, libc::SIGKILL);
            }
            libc::kill(self.pid, libc::SIGKILL);
        }
    }
}

/// Reads what a pipe has: `Some(n)` bytes read (`n` > 0), `None` when
/// nothing was ready; at its end the pipe is dropped (`None` from then on).
fn read_ready<P: Read>(pipe: &mut Option<P>, buf: &mut [u8]) -> Result<Option<usize>, RunError> {
    let Some(p) = pipe.as_mut() else { return Ok(None) };
    match p.read(buf) {
        Ok(0) => {
            *pipe = None;
            Ok(None)
        }
        Ok(n) => Ok(Some(n)),
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::Interrupted
            ) =>
        {
            Ok(None)
        }
        Err(e) => Err(RunError::Io(e)),
    }
}

fn set_nonblocking(fd: RawFd) {
    // SAFETY: fcntl on a descriptor we own.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags >= 0 {
            libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK);
        }
    }
}

/// A descriptor that becomes readable when `pid` exits (Linux 5.3+).
fn pidfd_open(pid: i32) -> Option<OwnedFd> {
    // SAFETY: pidfd_open returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    // SAFETY: a non-negative return is a descriptor nobody else owns.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bounds(ms: u64) -> Bounds {
        Bounds {
            timeout: Duration::from_millis(ms),
            max_stdout: 1 << 20,
            max_stderr: 1 << 16,
        }
    }

    fn sh(script: &str) -> Command {
        let mut c = Command::new("/bin/sh");
        c.arg("-c").arg(script);
        c
    }

    #[test]
    fn input_in_output_out_even_when_both_exceed_a_pipe() {
        let input = vec![b'x'; 1 << 19];
        let done = run(
            sh("cat; echo oops >&2; exit 3"),
            &input,
            bounds(20_000),
            Group::Own,
        )
        .unwrap();
        assert_eq!(done.stdout.len(), 1 << 19);
        assert_eq!(done.stderr_tail, b"oops\n");
        assert_eq!(done.ended, Ended::Exit(3));
    }

    #[test]
    fn a_crash_is_a_signal() {
        let done = run(sh("kill -SEGV $$"), b"", bounds(20_000), Group::Own).unwrap();
        assert_eq!(done.ended, Ended::Signal(libc::SIGSEGV));
    }

    #[test]
    fn a_hang_is_a_timeout_and_its_children_die_with_it() {
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("child");
        let script = format!("sleep 300 & echo $! > {}; wait", pidfile.display());
        let err = run(sh(&script), b"", bounds(1500), Group::Own).unwrap_err();
        assert!(matches!(err, RunError::Timeout(..)), "{err}");
        let pid: i32 = std::fs::read_to_string(&pidfile).unwrap().trim().parse().unwrap();
        await_gone(pid);
        assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists() || is_zombie(pid));
    }

    #[test]
    fn a_child_left_behind_after_exit_is_killed_and_does_not_hold_the_call() {
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("child");
        let script = format!("sleep 300 & echo $! > {}; echo done", pidfile.display());
        let done = run(sh(&script), b"", bounds(60_000), Group::Own).unwrap();
        assert_eq!(done.stdout, b"done\n");
        let pid: i32 = std::fs::read_to_string(&pidfile).unwrap().trim().parse().unwrap();
        await_gone(pid);
        assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists() || is_zombie(pid));
    }

    #[test]
    fn a_module_that_leaves_its_group_still_times_out() {
        // setpgid to the test's own group: killpg no longer reaches it.
        let mut cmd = Command::new("python3");
        cmd.args([
            "-c",
            "import os, time; os.setpgid(0, os.getpgid(os.getppid())); time.sleep(300)",
        ]);
        let err = run(cmd, b"", bounds(1500), Group::Own).unwrap_err();
        assert!(matches!(err, RunError::Timeout(..)), "{err}");
    }

    #[test]
    fn floods_are_cut_off() {
        let err = run(sh("yes"), b"", bounds(20_000), Group::Own).unwrap_err();
        assert!(matches!(err, RunError::StdoutTooLarge(..)), "{err}");
        let err = run(sh("yes >&2"), b"", bounds(20_000), Group::Own).unwrap_err();
        assert!(matches!(err, RunError::StderrFlood(..)), "{err}");
        assert!(!err.stderr_tail().is_empty());
    }

    #[test]
    fn a_module_that_ignores_its_input_is_fine() {
        let input = vec![b'x'; 1 << 20];
        let done = run(sh("echo ok"), &input, bounds(20_000), Group::Own).unwrap();
        assert_eq!(done.stdout, b"ok\n");
    }

    /// Waits (10 s at most) until `pid` is gone or a zombie: SIGKILL is
    /// delivered asynchronously, so the kill returns before the process ends.
    fn await_gone(pid: i32) {
        let gone = || !std::path::Path::new(&format!("/proc/{pid}")).exists() || is_zombie(pid);
        let until = Instant::now() + Duration::from_secs(10);
        while !gone() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn is_zombie(pid: i32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|s| s.rsplit(')').next().unwrap_or("").trim_start().starts_with('Z'))
            .unwrap_or(true)
    }
}
