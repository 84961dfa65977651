//! Values as every layer needs them, with no I/O and no display: XML-RPC
//! values to and from JSON (`xmlrpc::json`, re-exported), the text
//! of a `REMOTE_ERROR`, and the natural order of host names (`web2` before
//! `web10`).

use crate::Value;

pub use crate::xmlrpc::json::{from_json, tagged, to_json};

/// Natural order of host names: `web2` before `web10`.
pub fn natural_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    let (mut x, mut y) = (a.as_bytes(), b.as_bytes());
    loop {
        match (x.first(), y.first()) {
            (None, None) => return a.cmp(b),
            (None, _) => return std::cmp::Ordering::Less,
            (_, None) => return std::cmp::Ordering::Greater,
            (Some(c), Some(d)) if c.is_ascii_digit() && d.is_ascii_digit() => {
                let n = x.iter().take_while(|c| c.is_ascii_digit()).count();
                let m = y.iter().take_while(|c| c.is_ascii_digit()).count();
                let (p, q) = (trim_zeros(&x[..n]), trim_zeros(&y[..m]));
                let order = p.len().cmp(&q.len()).then(p.cmp(q));
                if order != std::cmp::Ordering::Equal {
                    return order;
                }
                (x, y) = (&x[n..], &y[m..]);
            }
            (Some(c), Some(d)) => {
                if c != d {
                    return c.cmp(d);
                }
                (x, y) = (&x[1..], &y[1..]);
            }
        }
    }
}

fn trim_zeros(digits: &[u8]) -> &[u8] {
    let zeros = digits.iter().take_while(|d| **d == b'0').count();
    &digits[zeros.min(digits.len().saturating_sub(1))..]
}

/// Host names in natural order.
pub fn natural<'a>(names: impl IntoIterator<Item = &'a String>) -> Vec<&'a String> {
    let mut v: Vec<&String> = names.into_iter().collect();
    v.sort_by(|a, b| natural_cmp(a, b));
    v
}

/// The type of a `REMOTE_ERROR` list (`None`: not one).
pub fn error_kind(value: &Value) -> Option<&str> {
    error_field(value, 1)
}

/// The message of a `REMOTE_ERROR` list (`None`: not one).
pub fn error_message(value: &Value) -> Option<&str> {
    error_field(value, 2)
}

fn error_field(value: &Value, at: usize) -> Option<&str> {
    match value {
        Value::Array(items) if crate::xmlrpc::is_remote_error(value) => match items.get(at) {
            Some(Value::String(text)) => Some(text.as_str()),
            _ => None,
        },
        _ => None,
    }
}

/// `ERROR (type): message` for a `REMOTE_ERROR` list, as sent (the
/// display layer escapes it for a terminal).
pub fn error_text(value: &Value) -> String {
    let Value::Array(items) = value else {
        return "ERROR".into();
    };
    let text = |i: usize| match items.get(i) {
        Some(Value::String(s)) => s.trim_end_matches('\n').to_string(),
        _ => String::new(),
    };
    let message = text(2);
    match message.is_empty() {
        true => format!("ERROR ({})", text(1)),
        false => format!("ERROR ({}): {message}", text(1)),
    }
}

/// `text` as one URL path segment (job ids hold SPEC characters: `*`, `;`).
pub fn url_segment(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => out.push(b as char),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_and_natural_order() {
        assert_eq!(to_json(&Value::Base64(b"hello!?".to_vec())), "aGVsbG8hPw==");
        let names = ["web10".to_string(), "web2".to_string(), "db1".to_string()];
        assert_eq!(natural(names.iter()), ["db1", "web2", "web10"]);
    }
}

/// How one host ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    Ok,
    Failed,
    Unreachable,
    TimedOut,
    /// Never sent: a batch stopped, halted by `--failhard` or killed
    /// before its turn (not a failure of its own; the exit status still
    /// says the run did not succeed).
    Abandoned,
}

/// How `value`, a result of `method`, counts.
pub fn class(method: &str, value: &Value) -> Class {
    if crate::outcome::ok(method, value) {
        return Class::Ok;
    }
    let kind = match value {
        Value::Array(items) if crate::xmlrpc::is_remote_error(value) => match items.get(1) {
            Some(Value::String(k)) => k.as_str(),
            _ => "",
        },
        _ => "",
    };
    match kind {
        "socket.timeout" | "func.overlord.BatchTimeout" => Class::TimedOut,
        "socket.error"
        | "socket.gaierror"
        | "ssl.SSLError"
        | "func.overlord.WorkerDied"
        | "func.overlord.BatchUnreachable" => Class::Unreachable,
        "func.overlord.BatchAbandoned" => Class::Abandoned,
        _ => Class::Failed,
    }
}
