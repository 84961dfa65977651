//! The daemon's side of the job zygote (the zygote's own side is
//! `crate::jobproc::zygote`). The zygote: `funcd --job-zygote`, spawned by the daemon when a job
//! first needs it (again if it ended) and kept while jobs come. It is
//! single-threaded and never builds a runtime, so it may fork; for each job
//! id the daemon writes on its stdin it forks a child that starts the job
//! (`runner::start_detached`: new session, fork, the job runs in the
//! grandchild) and answers `ID PID START` — or `ID FAILED why` — on stdout.
//!
//! Why: before, each job was an exec of the whole `funcd` (dynamic loading,
//! relocations, page faults of a 10 MB binary: about 1.4 ms of CPU, the
//! largest single cost of a job). A fork of this small, idle process costs a
//! fraction of that. The zygote exits after [`IDLE_EXIT`] without a request
//! (an idle minion keeps no extra process) or when the daemon closes its
//! stdin; the daemon reaps it and spawns a new one when needed.
//!
//! Every job still loads the configuration, ACLs and modules itself, as it
//! did after an exec: a changed file takes effect at the next job.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::AsFd;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use nix::poll::{PollFd, PollFlags, PollTimeout};
use std::sync::Mutex;
use std::time::Duration;

/// A zygote with no request for this long exits.
pub const IDLE_EXIT: Duration = Duration::from_secs(60);

/// Longest the daemon waits for the zygote's answer before giving it up (a
/// stopped or wedged zygote would hold every later job). Generous: with
/// 10,000 minions starting jobs at once on two cores (a run queue of ~600),
/// 10 s was not enough for 356 of them.
const ANSWER_WITHIN: Duration = Duration::from_secs(120);

/// Longest request or answer line.
pub const MAX_LINE: u64 = 512;

/// The daemon's handle on its zygote.
pub struct Zygote {
    exe: PathBuf,
    root: PathBuf,
    name: String,
    running: Mutex<Option<Running>>,
}

struct Running {
    child: Child,
    requests: ChildStdin,
    answers: BufReader<ChildStdout>,
}

/// Why a request got no answer: the zygote is gone without reading it (a
/// new one is asked), it did not answer in time (it is replaced, and the job
/// fails: it may have started), or it answered that the job could not start.
enum Unanswered {
    Gone(String),
    Stuck(String),
    Refused(String),
}

impl Zygote {
    pub fn new(exe: PathBuf, root: PathBuf, name: String) -> Self {
        Self {
            exe,
            root,
            name,
            running: Mutex::new(None),
        }
    }

    /// Starts job `id`: its pid and start time. A zygote that ended (idle,
    /// killed) is replaced and asked once more; a request it never read
    /// cannot have started a job, so nothing runs twice.
    pub fn launch(&self, id: &str) -> std::io::Result<(u32, u64)> {
        let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        let mut last = String::new();
        for _ in 0..2 {
            if running.is_none() {
                *running = Some(self.spawn()?);
            }
            let Some(zygote) = running.as_mut() else { break };
            match zygote.ask(id) {
                Ok(started) => return Ok(started),
                Err(Unanswered::Refused(why)) => return Err(std::io::Error::other(why)),
                Err(Unanswered::Gone(why)) => {
                    last = why;
                    Self::end(&mut running);
                }
                Err(Unanswered::Stuck(why)) => {
                    Self::end(&mut running);
                    return Err(std::io::Error::other(format!("the job zygote failed: {why}")));
                }
            }
        }
        Err(std::io::Error::other(format!("the job zygote failed: {last}")))
    }

    fn end(running: &mut Option<Running>) {
        if let Some(mut gone) = running.take() {
            let _ = gone.child.kill();
            let _ = gone.child.wait();
        }
    }

    /// Reaps a zygote that exited on its own (after an idle spell).
    pub fn reap_if_ended(&self) {
        let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(zygote) = running.as_mut() {
            if !matches!(zygote.child.try_wait(), Ok(None)) {
                *running = None;
            }
        }
    }

    fn spawn(&self) -> std::io::Result<Running> {
        // No pre-exec hook: std spawns it with posix_spawn (no fork of the
        // multi-threaded daemon).
        let mut child = Command::new(&self.exe)
            .arg("--root")
            .arg(&self.root)
            .args(["--name", &self.name, "--job-zygote"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let (Some(requests), Some(answers)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(std::io::Error::other("the job zygote has no pipes"));
        };
        Ok(Running {
            child,
            requests,
            answers: BufReader::new(answers),
        })
    }
}

impl Running {
    fn ask(&mut self, id: &str) -> Result<(u32, u64), Unanswered> {
        let gone = |e: std::io::Error| Unanswered::Gone(e.to_string());
        self.requests
            .write_all(format!("{id}\n").as_bytes())
            .and_then(|_| self.requests.flush())
            .map_err(gone)?;
        if self.answers.buffer().is_empty() && !readable(self.answers.get_ref(), ANSWER_WITHIN) {
            return Err(Unanswered::Stuck(format!("no answer within {ANSWER_WITHIN:?}")));
        }
        let mut line = String::new();
        match (&mut self.answers).take(MAX_LINE).read_line(&mut line) {
            Ok(0) => return Err(Unanswered::Gone("it ended".into())),
            Err(e) => return Err(gone(e)),
            Ok(_) => {}
        }
        let unreadable = || Unanswered::Stuck(format!("unreadable answer {:?}", line.trim_end()));
        let mut words = line.trim_end().splitn(3, ' ');
        let (Some(about), Some(first), rest) = (words.next(), words.next(), words.next()) else {
            return Err(unreadable());
        };
        if about != id {
            return Err(unreadable());
        }
        if first == "FAILED" {
            return Err(Unanswered::Refused(rest.unwrap_or("").to_string()));
        }
        match (first.parse(), rest.and_then(|r| r.parse().ok())) {
            (Ok(pid), Some(start)) => Ok((pid, start)),
            _ => Err(unreadable()),
        }
    }
}

/// Whether `fd` has data (or EOF) within `wait`.
pub(crate) fn readable(fd: &impl AsFd, wait: Duration) -> bool {
    let mut fds = [PollFd::new(fd.as_fd(), PollFlags::POLLIN)];
    let timeout =
        PollTimeout::try_from(wait.as_millis().min(i32::MAX as u128) as i32).unwrap_or(PollTimeout::MAX);
    loop {
        match nix::poll::poll(&mut fds, timeout) {
            Ok(n) => return n > 0,
            Err(nix::errno::Errno::EINTR) => continue,
            Err(_) => return false,
        }
    }
}
