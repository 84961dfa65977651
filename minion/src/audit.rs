//! `var/log/func/audit.log` (0600, in a 0700 directory): one line per call
//! with time, peer address, caller identity, method and a short rendering of
//! the arguments (capped, so a large request never lands whole in the log).
//! Every field is escaped (control characters, line separators and `\\`
//! become `\n`, `\u{..}` …), so one call is always exactly one line.

use std::fs::File;
use std::io::Write;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Mutex;

use common::Value;

use crate::acl::Caller;

/// Longest argument rendering written per line.
const MAX_ARGS_CHARS: usize = 256;

/// An append-only audit log. Lines are small single `write` calls, so a
/// plain mutex is enough. A line that cannot be written (a full disk) is
/// kept (up to [`MAX_PENDING`] bytes) and written first once writing works
/// again; the failure is reported on stderr (the journal) when it starts,
/// and its end with how many lines were lost, if any: never silently off.
pub struct AuditLog {
    path: std::path::PathBuf,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    file: Option<File>,
    pending: std::collections::VecDeque<String>,
    pending_bytes: usize,
    /// Bytes of the first pending line already written (a short write on a
    /// full disk): the rest follows, so no line is torn or written twice.
    front_written: usize,
    lost: u64,
    failing: bool,
}

/// Audit lines kept in memory while the log cannot be written.
pub const MAX_PENDING: usize = 1 << 20;

fn open_log(path: &Path) -> std::io::Result<File> {
    if let Some(dir) = path.parent() {
        common::private::private_dir(dir)?;
    }
    common::private::tighten(path)?;
    common::private::append(path)
}

impl AuditLog {
    /// Opens (creating) the log; if that fails, it is retried on every call
    /// and a warning says why.
    pub fn open(path: &Path) -> Self {
        let file = match open_log(path) {
            Ok(f) => Some(f),
            Err(e) => {
                tracing::error!(path = %path.display(), error = %e, "audit log cannot be opened; retrying on every call");
                None
            }
        };
        Self {
            path: path.to_path_buf(),
            state: Mutex::new(State {
                failing: file.is_none(),
                file,
                ..State::default()
            }),
        }
    }

    /// Queues `line` and writes every queued line it can.
    fn write(&self, line: String) {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        st.pending_bytes += line.len();
        st.pending.push_back(line);
        while st.pending_bytes > MAX_PENDING && st.front_written == 0 {
            match st.pending.pop_front() {
                Some(old) => {
                    st.pending_bytes -= old.len();
                    st.lost += 1;
                }
                None => break,
            }
        }
        if st.file.is_none() {
            st.file = open_log(&self.path).ok();
        }
        while let Some(next) = st.pending.front().cloned() {
            let from = st.front_written;
            let written = match st.file.as_mut() {
                Some(f) => f.write(&next.as_bytes()[from..]),
                None => Err(std::io::Error::other("cannot open the audit log")),
            };
            match written {
                Ok(0) => return,
                Ok(n) if from + n < next.len() => st.front_written += n,
                Ok(_) => {
                    st.pending.pop_front();
                    st.pending_bytes -= next.len();
                    st.front_written = 0;
                }
                Err(e) => {
                    if !st.failing {
                        tracing::error!(path = %self.path.display(), error = %e, "audit log write failed; lines are kept in memory (up to 1 MiB) and written when it works again");
                        st.failing = true;
                    }
                    st.file = None;
                    return;
                }
            }
        }
        if st.failing {
            tracing::warn!(path = %self.path.display(), lost = st.lost, "audit log writable again; kept lines written");
            st.failing = false;
            st.lost = 0;
        }
    }

    /// Records one call; `user`: the user the overlord says it calls for
    /// (written as `key (user NAME)`).
    pub fn record(&self, peer: SocketAddr, who: &Caller, user: Option<&str>, method: &str, params: &[Value]) {
        let now = time::OffsetDateTime::now_utc();
        let user = user
            .map(|u| format!(" (user {})", escape(&common::paths::shorten(u))))
            .unwrap_or_default();
        let line = format!(
            "{} {} {}{user} {} called with {}\n",
            now.format(&time::format_description::well_known::Rfc3339)
                .unwrap_or_default(),
            peer.ip(),
            escape(&who.key),
            escape(&common::paths::shorten(method)),
            render_args(params)
        );
        self.write(line);
    }
}

/// A compact, capped rendering of call arguments.
pub fn render_args(params: &[Value]) -> String {
    let mut out = String::from("(");
    for (i, p) in params.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        render(p, &mut out);
        if out.len() > MAX_ARGS_CHARS {
            break;
        }
    }
    out.push(')');
    if out.len() > MAX_ARGS_CHARS {
        let mut cut = MAX_ARGS_CHARS;
        while !out.is_char_boundary(cut) {
            cut -= 1;
        }
        out.truncate(cut);
        out.push_str("...");
    }
    out
}

/// `text` with every character that could break or fake a log line
/// escaped: control characters, Unicode line and paragraph separators,
/// and the backslash itself.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    push_escaped(text, &mut out);
    out
}

fn push_escaped(text: &str, out: &mut String) {
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            // Controls, line separators, and bidi overrides that would let a
            // terminal show the line in another order.
            c if c.is_control()
                || matches!(c, '\u{2028}' | '\u{2029}' | '\u{85}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}') =>
            {
                out.push_str(&format!("\\u{{{:x}}}", c as u32))
            }
            c => out.push(c),
        }
    }
}

fn render(v: &Value, out: &mut String) {
    if out.len() > MAX_ARGS_CHARS {
        return;
    }
    match v {
        Value::String(s) => {
            out.push('\'');
            let cut: String = s.chars().take(MAX_ARGS_CHARS).collect();
            push_escaped(&cut, out);
            out.push('\'');
        }
        Value::Integer(i) => out.push_str(&i.to_string()),
        Value::Long(l) => out.push_str(&l.to_string()),
        Value::Double(d) => out.push_str(&d.to_string()),
        Value::Boolean(b) => out.push_str(if *b { "True" } else { "False" }),
        Value::Base64(b) => out.push_str(&format!("<{} bytes>", b.len())),
        Value::DateTime(d) => out.push_str(&d.to_string()),
        Value::Nil => out.push_str("None"),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                render(item, out);
                if out.len() > MAX_ARGS_CHARS {
                    break;
                }
            }
            out.push(']');
        }
        Value::Struct(members) => {
            out.push('{');
            for (i, (k, item)) in members.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push('\'');
                push_escaped(&k.chars().take(64).collect::<String>(), out);
                out.push_str("': ");
                render(item, out);
                if out.len() > MAX_ARGS_CHARS {
                    break;
                }
            }
            out.push('}');
        }
        _ => out.push('?'),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_and_caps() {
        assert_eq!(
            render_args(&[Value::Integer(1), Value::String("a\nb".into())]),
            "(1, 'a\\nb')"
        );
        assert_eq!(
            escape("x\r\n2026 fake\u{1b}[1m\\\u{2028}"),
            "x\\r\\n2026 fake\\u{1b}[1m\\\\\\u{2028}"
        );
        let mut keyed = std::collections::BTreeMap::new();
        keyed.insert("k\n".to_string(), Value::Nil);
        assert_eq!(render_args(&[Value::Struct(keyed)]), "({'k\\n': None})");
        assert_eq!(
            render_args(&[Value::String("a', 'b".into())]),
            "('a\\', \\'b')",
            "a quote inside a string cannot fake a second argument"
        );
        assert_eq!(escape("x\u{202e}y"), "x\\u{202e}y");
        let huge = Value::String("x".repeat(100_000));
        let r = render_args(&[huge]);
        assert!(r.len() <= MAX_ARGS_CHARS + 3 && r.ends_with("..."), "{}", r.len());
        assert_eq!(render_args(&[Value::Base64(vec![0; 10])]), "(<10 bytes>)");
    }
}
