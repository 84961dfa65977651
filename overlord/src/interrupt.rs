//! Ctrl-C on a command that drives work itself (a sync batch, a polling
//! async call): SIGINT only sets a flag; the loop doing the work notices
//! it, leaves its job or batch in a state that says what happened, and the
//! command prints the job id and the commands to follow, stop or resume it.

use std::sync::atomic::{AtomicBool, Ordering};

static REQUESTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_sigint(_: nix::libc::c_int) {
    REQUESTED.store(true, Ordering::SeqCst);
}

/// From now on, SIGINT (Ctrl-C) sets the flag instead of ending `func`.
pub fn catch() {
    let action = nix::sys::signal::SigAction::new(
        nix::sys::signal::SigHandler::Handler(on_sigint),
        nix::sys::signal::SaFlags::SA_RESTART,
        nix::sys::signal::SigSet::empty(),
    );
    // SAFETY: the handler only stores to an atomic (async-signal-safe).
    let _ = unsafe { nix::sys::signal::sigaction(nix::sys::signal::Signal::SIGINT, &action) };
}

/// Whether Ctrl-C was pressed.
pub fn requested() -> bool {
    REQUESTED.load(Ordering::SeqCst)
}

/// Exit status after Ctrl-C (128 + SIGINT, as shells report it).
pub const EXIT: i32 = 130;

/// `text` quoted for a POSIX shell: job ids contain `*`, `;` and `@`.
pub fn shell_quote(text: &str) -> String {
    if text
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"-_.,:/=+%".contains(&b))
    {
        return text.to_string();
    }
    format!("'{}'", text.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting() {
        assert_eq!(shell_quote("abc-1.5"), "abc-1.5");
        assert_eq!(shell_quote("web1;db*-test-ping-1.5"), "'web1;db*-test-ping-1.5'");
        assert_eq!(shell_quote("a'b"), r"'a'\''b'");
    }
}
