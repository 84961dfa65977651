//! Job processes as the kernel sees them: alive by pid + start time
//! (`common::process`), and signals to a job's whole process group.

pub use common::process::{alive, parse_signal, start_time};

/// Sends `signal` to the process group led by the job process `pid`
/// (started at `start`), so children it spawned get it too.
pub fn signal_group(pid: u32, start: u64, signal: nix::sys::signal::Signal) -> Result<(), String> {
    if !alive(pid, start) {
        return Err("the job process is gone".into());
    }
    let pgid = nix::unistd::Pid::from_raw(pid as i32);
    nix::sys::signal::killpg(pgid, signal).map_err(|e| e.to_string())
}
