//! The engine's log lines: a worker's or a detached driver's warnings, one
//! line each on stderr (the terminal for `func`, `var/log/func/driver.log`
//! for a detached driver). A closed stderr is ignored, never a panic. The
//! engine prints nothing else: results go to its callers.

use std::io::Write;

/// Writes one log line.
pub fn line(text: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{text}");
}
