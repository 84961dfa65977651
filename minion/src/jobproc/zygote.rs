//! The job zygote's own side: `funcd --job-zygote` reads job ids on stdin
//! and, for each, forks a child that starts the job
//! (`super::runner::start_detached`) and answers `ID PID START` (or `ID
//! FAILED why`) on stdout. Single-threaded, no runtime, so it may fork; it
//! exits after `IDLE_EXIT` without a request or when its stdin closes. The
//! daemon's side (spawning it, asking it) is `crate::jobs::zygote`.

use std::io::{BufRead, BufReader, Read};
use std::os::fd::AsFd;

use common::paths::Root;

use crate::jobs::spool;
use crate::jobs::zygote::{readable, IDLE_EXIT, MAX_LINE};

/// `funcd --job-zygote`: serves job ids from stdin until EOF or an idle
/// spell; returns the exit code.
pub fn serve(root: &Root, name: &str) -> i32 {
    let stdin = std::io::stdin();
    let mut requests = BufReader::new(stdin.lock());
    loop {
        if requests.buffer().is_empty() && !readable(&stdin, IDLE_EXIT) {
            return 0;
        }
        let mut line = String::new();
        match (&mut requests).take(MAX_LINE).read_line(&mut line) {
            Ok(0) | Err(_) => return 0,
            Ok(_) => {}
        }
        let id = line.trim();
        if !spool::is_job_id(id) {
            answer("- FAILED not a job id\n");
            continue;
        }
        start(root, name, id);
    }
}

/// Forks the child that starts job `id` and reports it, then reaps that
/// child (it exits right after the job's own fork).
fn start(root: &Root, name: &str, id: &str) {
    // SAFETY: the zygote is single-threaded and has no runtime.
    match unsafe { nix::unistd::fork() } {
        Ok(nix::unistd::ForkResult::Child) => {
            let line = match super::runner::start_detached(root, name, id) {
                Ok((pid, start)) => format!("{id} {pid} {start}\n"),
                Err(why) => format!("{id} FAILED {why}\n"),
            };
            answer(&line);
            // SAFETY: ends this child at once, without running the
            // zygote's exit handlers or destructors.
            unsafe { libc::_exit(0) }
        }
        Ok(nix::unistd::ForkResult::Parent { child }) => {
            let _ = nix::sys::wait::waitpid(child, None);
        }
        Err(e) => answer(&format!("{id} FAILED cannot fork: {e}\n")),
    }
}

/// One answer line, in one write (shorter than PIPE_BUF, so never torn).
fn answer(line: &str) {
    let _ = nix::unistd::write(std::io::stdout().as_fd(), line.as_bytes());
}
