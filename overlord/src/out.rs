//! Standard output that never panics: `func ... | head -1` closes the pipe
//! early, and `println!` would then panic (Rust ignores SIGPIPE, so the
//! write fails with EPIPE). [`out!`]/[`outln!`] write through [`write`],
//! which notes a closed stdout once and drops everything after it: the
//! command still finishes its work (a sync batch runs to its end, its
//! state recorded as usual) and exits with its normal status. [`err!`]/
//! [`errln!`] do the same for stderr (`2>&1 | head`).
//!
//! Lines are terminal-safe: [`outln!`] and [`errln!`] pass what they print
//! through [`shown`], so no id, SPEC, user or function (typed by an API
//! caller, or read from a store someone else writes) can reach the
//! terminal as a control sequence, a bidi override or an invisible
//! character. [`out!`] and [`write`] print text as it is: only for blocks
//! built from [`shown`] pieces with colour added on purpose.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::io::Write;

use common::Value;
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

/// Characters a terminal may act on, or that change how text reads: C0
/// controls but tab and line feed, DEL, C1 controls, bidi marks, overrides
/// and isolates, zero-width characters, line and paragraph separators.
pub fn hazard(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{8}' | '\u{b}'..='\u{1f}' | '\u{7f}'..='\u{9f}' | '\u{61c}'
        | '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{2060}'..='\u{2069}' | '\u{feff}')
}

/// `text` safe to print inside a line: every [`hazard`] escaped (`\r`,
/// `\u{9b}`); line feeds are kept (the caller indents what follows them).
pub fn shown(text: &str) -> Cow<'_, str> {
    if !text.chars().any(hazard) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\r' => out.push_str("\\r"),
            c if hazard(c) => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// [`shown`], with line feeds escaped as `\n` too: text that must stay on
/// one line (struct keys, error messages, table cells).
pub fn shown_line(text: &str) -> Cow<'_, str> {
    match text.contains('\n') {
        true => Cow::Owned(shown(text).replace('\n', "\\n")),
        false => shown(text),
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

/// `println!` that survives a closed stdout, terminal-safe ([`shown`]).
#[macro_export]
macro_rules! outln {
    () => { $crate::out::write("\n") };
    ($($arg:tt)*) => { $crate::out::write(&format!("{}\n", $crate::out::shown(&format!($($arg)*)))) };
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

/// `eprintln!` that survives a closed stderr, terminal-safe ([`shown`]).
#[macro_export]
macro_rules! errln {
    () => { $crate::out::write_err("\n") };
    ($($arg:tt)*) => { $crate::out::write_err(&format!("{}\n", $crate::out::shown(&format!($($arg)*)))) };
}

/// How results are printed for programs (`--out`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    #[default]
    Json,
    Yaml,
    /// One `host: value` line per host (for grep and awk).
    Txt,
    /// One XML-RPC `methodResponse`: host results keep every XML-RPC type
    /// (base64, dateTime), for programs (Func's Python API reads it).
    Xmlrpc,
}

impl Format {
    /// The format `--out NAME` names (`json`, `yaml`, `txt`, `xmlrpc`).
    pub fn named(name: &str) -> Option<Format> {
        match name {
            "json" => Some(Format::Json),
            "yaml" => Some(Format::Yaml),
            "txt" => Some(Format::Txt),
            "xmlrpc" => Some(Format::Xmlrpc),
            _ => None,
        }
    }
}

/// `ERROR (type): message` for a `REMOTE_ERROR` list, on one line and
/// safe for a terminal (see [`shown_line`]).
pub fn error_line(value: &Value) -> String {
    shown_line(&crate::values::error_text(value)).into_owned()
}
