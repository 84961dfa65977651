//! A process as both stores persist it: a pid plus its start time (field 22
//! of `/proc/PID/stat`, clock ticks after boot). Together they name one
//! process for good, so a pid reused by another process is never mistaken
//! for a job or driver that is still running. Also signal names, as the
//! minion's `jobs.signal_job` and `func jobs kill --signal` read them, and
//! the user a process runs for ([`invoking_user`]).

/// The start time of `pid`, if it exists and has not exited (a zombie has
/// finished its work and counts as gone).
pub fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: fields
    // after it start past the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    // `rest` starts at field 3 (state); field 22 is the 20th from here.
    if fields.next()? == "Z" {
        return None;
    }
    fields.nth(18)?.parse().ok()
}

/// Whether the process `pid` that started at `start` still exists.
pub fn alive(pid: u32, start: u64) -> bool {
    pid != 0 && start_time(pid) == Some(start)
}

/// Who runs this process, for job records and audit lines: under `sudo`
/// (real uid 0 with `SUDO_USER` set) the user who ran sudo, as Salt and
/// Ansible record it; otherwise the real user's name (or uid). Only root
/// is believed: anyone else can set `SUDO_USER` to any name.
pub fn invoking_user() -> String {
    let uid = nix::unistd::getuid();
    if uid.is_root() {
        if let Ok(sudo_user) = std::env::var("SUDO_USER") {
            let name = sudo_user.trim();
            if !name.is_empty() && name != "root" && name.len() <= 64 && !name.chars().any(char::is_control) {
                return name.to_string();
            }
        }
    }
    nix::unistd::User::from_uid(uid)
        .ok()
        .flatten()
        .map(|u| u.name)
        .unwrap_or_else(|| uid.to_string())
}

/// Raises this process's soft limit on open files to its hard limit (a
/// server holds up to `max_connections` sockets, plus its files; the
/// common soft default of 1024 would make `accept` fail first). Returns
/// the limit now in force.
pub fn raise_open_files() -> Option<u64> {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).ok()?;
    if soft < hard && setrlimit(Resource::RLIMIT_NOFILE, hard, hard).is_ok() {
        return Some(hard);
    }
    Some(soft)
}

/// A signal by name (`TERM`, `SIGKILL`, `kill`) or number.
pub fn parse_signal(text: &str) -> Option<nix::sys::signal::Signal> {
    use nix::sys::signal::Signal;
    let text = text.trim();
    if let Ok(n) = text.parse::<i32>() {
        return Signal::try_from(n).ok();
    }
    let upper = text.to_ascii_uppercase();
    let name = match upper.starts_with("SIG") {
        true => upper,
        false => format!("SIG{upper}"),
    };
    name.parse().ok()
}

/// This overlord's name, where several overlords share a store (batch
/// leases, job drivers): `FUNC_HOST` if set (several overlords
/// sharing one machine, or containers sharing a host name), else the host
/// name.
pub fn overlord_host() -> &'static str {
    static HOST: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    HOST.get_or_init(|| {
        if let Some(name) = std::env::var("FUNC_HOST")
            .ok()
            .filter(|h| !h.is_empty() && h.len() <= 255)
        {
            return name;
        }
        nix::unistd::gethostname()
            .ok()
            .and_then(|h| h.into_string().ok())
            .unwrap_or_else(|| "localhost".into())
    })
}

/// This program, to start again as a worker or driver: `/proc/self/exe`
/// where there is one (it works even after the file was replaced by an
/// upgrade, when the path would name the new version or nothing), else the
/// path it was started from.
pub fn own_exe() -> std::io::Result<std::path::PathBuf> {
    let proc_exe = std::path::PathBuf::from("/proc/self/exe");
    if proc_exe.exists() {
        return Ok(proc_exe);
    }
    std::env::current_exe()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn our_own_start_time_is_stable_and_foreign_starts_are_not_alive() {
        let me = std::process::id();
        let start = start_time(me).unwrap();
        assert_eq!(start_time(me), Some(start));
        assert!(alive(me, start));
        assert!(!alive(me, start + 1), "same pid, other start: another process");
        assert!(!alive(0, 0));
    }

    #[test]
    fn signal_names() {
        use nix::sys::signal::Signal;
        assert_eq!(parse_signal("TERM"), Some(Signal::SIGTERM));
        assert_eq!(parse_signal("sigkill"), Some(Signal::SIGKILL));
        assert_eq!(parse_signal("9"), Some(Signal::SIGKILL));
        assert_eq!(parse_signal("HUP "), Some(Signal::SIGHUP));
        assert_eq!(parse_signal("NOPE"), None);
        assert_eq!(parse_signal("999"), None);
    }
}
