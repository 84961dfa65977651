//! The overlord's audit log, `var/log/func/api-audit.log` (0600 in a 0700
//! directory): one JSON line per action — when, who, from which address,
//! what, which hosts (the first 50 named, the count always), and the
//! answer's status. func-api writes a line per request; `func` one per
//! command that changes something (who is `cli:USER`, the status its exit
//! status); drivers one when they refuse a request whose signature does
//! not verify; the scheduler one per run. Arguments are not logged (they
//! may hold secrets); the minions log every call too.
//!
//! [`page`] reads it back newest first (`GET /api/v1/audit`), a bounded
//! stretch of the file per request, from the end or from a cursor (the
//! byte offset of a line).

use std::io::{Read as _, Seek as _, Write as _};
use std::sync::Mutex;

use common::paths::Root;

/// Hosts named in one line at most.
const HOSTS_SHOWN: usize = 50;

pub struct Audit {
    path: std::path::PathBuf,
    file: Mutex<Option<std::fs::File>>,
}

impl Audit {
    pub fn new(root: &Root) -> Self {
        Audit {
            path: root.log_dir().join("api-audit.log"),
            file: Mutex::new(None),
        }
    }

    /// Writes one line; a failure to write is logged, never fatal.
    pub fn line(
        &self,
        who: &str,
        from: Option<std::net::IpAddr>,
        action: &str,
        hosts: &[String],
        status: u16,
    ) {
        self.write(serde_json::json!({
            "time": crate::store::now(),
            "who": who,
            "from": from.map(|a| a.to_string()),
            "action": action,
            "hosts": hosts.iter().take(HOSTS_SHOWN).collect::<Vec<_>>(),
            "host_count": hosts.len(),
            "status": status,
            "status_kind": "http",
        }));
    }

    /// A line of `func` (the command line): `cli:USER`, what, the SPEC it
    /// named (hosts are not resolved again for the log), its exit status.
    pub fn cli_line(&self, action: &str, spec: Option<&str>, exit_status: i32) {
        self.write(serde_json::json!({
            "time": crate::store::now(),
            "who": crate::principal::cli_user(),
            "from": null,
            "action": action,
            "spec": spec,
            "hosts": [],
            "host_count": 0,
            "status": exit_status,
            "status_kind": "exit",
        }));
    }

    fn write(&self, line: serde_json::Value) {
        let mut file = self.file.lock().unwrap_or_else(|p| p.into_inner());
        if file.is_none() {
            if let Some(dir) = self.path.parent() {
                let _ = common::private::private_dir(dir);
            }
            *file = common::private::append(&self.path).ok();
        }
        let written = file.as_mut().map(|f| f.write_all(format!("{line}\n").as_bytes()));
        if !matches!(written, Some(Ok(()))) {
            crate::log::line(&format!("cannot write the audit log {}", self.path.display()));
            *file = None;
        }
    }
}

/// The most read from the file for one page: a page of lines filtered out
/// ends early, with a cursor to go on from.
const SCAN: u64 = 8 << 20;
/// A line longer than this is skipped (none is written so long).
const LONGEST: usize = 1 << 20;

/// One page of the audit log, newest first.
pub struct Page {
    /// Each line as written, with `"id"`: its byte offset (a cursor).
    pub lines: Vec<serde_json::Value>,
    /// Where the next page starts (`before`); `None` at the file's start.
    pub next: Option<u64>,
}

/// At most `limit` lines of the audit log below `root` that `keep` keeps,
/// newest first, among those that begin before byte `before` (the end
/// when `None`). The file is opened without following a link.
pub fn page(
    root: &Root,
    limit: usize,
    before: Option<u64>,
    keep: &dyn Fn(&serde_json::Value) -> bool,
) -> std::io::Result<Page> {
    let path = root.log_dir().join("api-audit.log");
    let mut file = match common::private::options().read(true).open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Page {
                lines: Vec::new(),
                next: None,
            })
        }
        Err(e) => return Err(e),
    };
    let len = file.metadata()?.len();
    let mut end = before.unwrap_or(len).min(len);
    let floor = end.saturating_sub(SCAN);
    let mut lines = Vec::new();
    // Bytes after the last newline seen going back: the tail of a line
    // whose start is in an earlier chunk.
    let mut carry: Vec<u8> = Vec::new();
    let mut chunk = vec![0u8; 64 << 10];
    while end > floor && lines.len() < limit {
        let start = end.saturating_sub(chunk.len() as u64).max(floor);
        let n = (end - start) as usize;
        file.seek(std::io::SeekFrom::Start(start))?;
        file.read_exact(&mut chunk[..n])?;
        let mut buf = chunk[..n].to_vec();
        buf.append(&mut carry);
        // Every complete line in `buf` (one that starts after a newline, or
        // at the file's start) from the last one back.
        let mut stop = buf.len();
        while let Some(nl) = buf[..stop].iter().rposition(|&b| b == b'\n') {
            take(&buf[nl + 1..stop], start + nl as u64 + 1, keep, &mut lines);
            stop = nl;
            if lines.len() >= limit {
                return Ok(Page {
                    lines,
                    next: Some(start + nl as u64 + 1),
                });
            }
        }
        if start == 0 {
            take(&buf[..stop], 0, keep, &mut lines);
            return Ok(Page { lines, next: None });
        }
        carry = buf[..stop].to_vec();
        if carry.len() > LONGEST {
            carry.clear();
        }
        end = start;
    }
    // Scanned as far as one page may: go on from the line cut here.
    let next = end + carry.len() as u64;
    Ok(Page {
        lines,
        next: (next > 0).then_some(next),
    })
}

fn take(
    line: &[u8],
    offset: u64,
    keep: &dyn Fn(&serde_json::Value) -> bool,
    lines: &mut Vec<serde_json::Value>,
) {
    let Ok(mut doc) = serde_json::from_slice::<serde_json::Value>(line) else {
        return;
    };
    if !doc.is_object() {
        return;
    }
    spelled(&mut doc);
    if !keep(&doc) {
        return;
    }
    doc["id"] = offset.into();
    lines.push(doc);
}

/// A line as this version writes it: `who` as `crate::principal` spells
/// it, and `status_kind` saying what its `status` is: `exit` (the command
/// line's exit status; older lines: those with a `spec`) or `http`.
fn spelled(doc: &mut serde_json::Value) {
    if let Some(who) = doc["who"].as_str() {
        doc["who"] = crate::principal::audit_who(who).into();
    }
    if doc.get("status_kind").is_none() {
        let kind = if doc.get("spec").is_some() { "exit" } else { "http" };
        doc["status_kind"] = kind.into();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn older_lines_are_read_in_todays_spelling() {
        let mut token = serde_json::json!({"who": "web", "action": "login", "status": 200});
        spelled(&mut token);
        assert_eq!(
            (token["who"].as_str(), token["status_kind"].as_str()),
            (Some("api:web"), Some("http"))
        );
        let mut cli =
            serde_json::json!({"who": "cli:root", "action": "call test.ping", "spec": "m1", "status": 1});
        spelled(&mut cli);
        assert_eq!(
            (cli["who"].as_str(), cli["status_kind"].as_str()),
            (Some("cli:root"), Some("exit"))
        );
        let mut unknown = serde_json::json!({"who": "?", "action": "authenticate", "status": 401});
        spelled(&mut unknown);
        assert_eq!(unknown["who"], "?");
    }

    #[test]
    fn pages_go_back_from_the_end_line_by_line_and_filter() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        let audit = Audit::new(&root);
        for i in 0..2000 {
            let who = if i % 2 == 0 { "alice" } else { "bob" };
            audit.line(who, None, &format!("call test.n{i}"), &[format!("h{i}")], 200);
        }
        let all = |_: &serde_json::Value| true;
        let mut seen = Vec::new();
        let mut before = None;
        loop {
            let p = page(&root, 300, before, &all).unwrap();
            seen.extend(p.lines.iter().map(|l| l["action"].as_str().unwrap().to_string()));
            match p.next {
                Some(n) => before = Some(n),
                None => break,
            }
        }
        let expected: Vec<String> = (0..2000).rev().map(|i| format!("call test.n{i}")).collect();
        assert_eq!(seen, expected);
        // Lines written bare ("bob", as older versions wrote a token's name)
        // are read as the token's.
        let bob = |l: &serde_json::Value| l["who"] == "api:bob";
        let p = page(&root, 3, None, &bob).unwrap();
        let got: Vec<&str> = p.lines.iter().map(|l| l["action"].as_str().unwrap()).collect();
        assert_eq!(got, ["call test.n1999", "call test.n1997", "call test.n1995"]);
        let next = page(&root, 1, p.next, &bob).unwrap();
        assert_eq!(next.lines[0]["action"], "call test.n1993");
    }
}
