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
/// plain mutex is enough; a failed write is reported once, not per call.
pub struct AuditLog {
    file: Mutex<Option<File>>,
}

impl AuditLog {
    /// Opens (creating) the log; if that fails, auditing is off and a warning says why.
    pub fn open(path: &Path) -> Self {
        let file = path
            .parent()
            .map(common::private::private_dir)
            .transpose()
            .and_then(|_| common::private::tighten(path))
            .and_then(|_| common::private::append(path));
        let file = match file {
            Ok(f) => Some(f),
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "audit log unavailable");
                None
            }
        };
        Self {
            file: Mutex::new(file),
        }
    }

    /// Records one call.
    pub fn record(&self, peer: SocketAddr, who: &Caller, method: &str, params: &[Value]) {
        let now = time::OffsetDateTime::now_utc();
        let line = format!(
            "{} {} {} {} called with {}\n",
            now.format(&time::format_description::well_known::Rfc3339)
                .unwrap_or_default(),
            peer.ip(),
            escape(&who.key),
            escape(&common::paths::shorten(method)),
            render_args(params)
        );
        let mut guard = self.file.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(f) = guard.as_mut() {
            if let Err(e) = f.write_all(line.as_bytes()) {
                tracing::warn!(error = %e, "audit log write failed; auditing stops");
                *guard = None;
            }
        }
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
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() || matches!(c, '\u{2028}' | '\u{2029}' | '\u{85}') => {
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
        assert_eq!(escape("x\r\n2026 fake\u{1b}[1m\\\u{2028}"), "x\\r\\n2026 fake\\u{1b}[1m\\\\\\u{2028}");
        let mut keyed = std::collections::BTreeMap::new();
        keyed.insert("k\n".to_string(), Value::Nil);
        assert_eq!(render_args(&[Value::Struct(keyed)]), "({'k\\n': None})");
        let huge = Value::String("x".repeat(100_000));
        let r = render_args(&[huge]);
        assert!(r.len() <= MAX_ARGS_CHARS + 3 && r.ends_with("..."), "{}", r.len());
        assert_eq!(render_args(&[Value::Base64(vec![0; 10])]), "(<10 bytes>)");
    }
}
