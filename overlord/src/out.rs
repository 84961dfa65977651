//! Standard output that never panics: `func ... | head -1` closes the pipe
//! early, and `println!` would then panic (Rust ignores SIGPIPE, so the
//! write fails with EPIPE). [`out!`]/[`outln!`] write through [`write`],
//! which notes a closed stdout once and drops everything after it: the
//! command still finishes its work (a sync batch runs to its end, its
//! state recorded as usual) and exits with its normal status. [`err!`]/
//! [`errln!`] do the same for stderr (`2>&1 | head`).

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

static CLOSED: AtomicBool = AtomicBool::new(false);

/// Writes `text` to stdout (flushed); after a broken pipe, does nothing.
pub fn write(text: &str) {
    if CLOSED.load(Ordering::Relaxed) {
        return;
    }
    let mut stdout = std::io::stdout().lock();
    if stdout
        .write_all(text.as_bytes())
        .and_then(|_| stdout.flush())
        .is_err()
    {
        CLOSED.store(true, Ordering::Relaxed);
    }
}

/// Whether stdout was closed by its reader.
pub fn closed() -> bool {
    CLOSED.load(Ordering::Relaxed)
}

/// `print!` that survives a closed stdout.
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => { $crate::out::write(&format!($($arg)*)) };
}

/// `println!` that survives a closed stdout.
#[macro_export]
macro_rules! outln {
    () => { $crate::out::write("\n") };
    ($($arg:tt)*) => { $crate::out::write(&format!("{}\n", format_args!($($arg)*))) };
}

/// Writes `text` to stderr; a failure (a closed pipe: `func ... 2>&1 |
/// head -1`) is ignored, where `eprintln!` would panic.
pub fn write_err(text: &str) {
    let mut stderr = std::io::stderr().lock();
    let _ = stderr.write_all(text.as_bytes()).and_then(|_| stderr.flush());
}

/// `eprint!` that survives a closed stderr.
#[macro_export]
macro_rules! err {
    ($($arg:tt)*) => { $crate::out::write_err(&format!($($arg)*)) };
}

/// `eprintln!` that survives a closed stderr.
#[macro_export]
macro_rules! errln {
    () => { $crate::out::write_err("\n") };
    ($($arg:tt)*) => { $crate::out::write_err(&format!("{}\n", format_args!($($arg)*))) };
}
