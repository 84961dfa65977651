//! Func's ACL files (`etc/func/minion-acl.d/*.acl`): lines
//! `<cn>-<subject hash> = method glob, method glob`, globs on both sides
//! (`web1-* = test.*`). The overlord's marked certificate may call everything;
//! any other certificate may call only what an ACL line grants it.
//!
//! A key is split at its **last** `-` into a CN pattern and a subject-hash
//! pattern, and each is matched on its own: `m2-*` means "host m2, any
//! certificate", and does not match a host enrolled as `m2-evil`. CNs are
//! host names, so their pattern matches without regard to letter case. A
//! key without `-` is a CN pattern with any hash.

use std::path::Path;

use common::identity::PeerIdentity;
use glob::{MatchOptions, Pattern};

/// Who is calling, as ACLs, job ownership and the audit log see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// `<cn>-<subject hash>` (Func's ACL key).
    pub key: String,
    /// The overlord's marked certificate: may call and see everything.
    pub overlord: bool,
}

impl Caller {
    pub fn new(key: impl Into<String>, overlord: bool) -> Self {
        Self {
            key: key.into(),
            overlord,
        }
    }
}

impl From<&PeerIdentity> for Caller {
    fn from(who: &PeerIdentity) -> Self {
        Self::new(who.acl_key(), who.overlord)
    }
}

/// One parsed ACL line.
#[derive(Debug)]
struct Rule {
    cn: Pattern,
    hash: Pattern,
    methods: Vec<Pattern>,
}

/// All ACL rules of a minion.
#[derive(Debug, Default)]
pub struct Acl {
    rules: Vec<Rule>,
}

/// ACL file sizes we read; a larger file is skipped with a warning.
const MAX_ACL_FILE: u64 = 1 << 20;

const ANY_CASE: MatchOptions = MatchOptions {
    case_sensitive: false,
    require_literal_separator: false,
    require_literal_leading_dot: false,
};

/// `<cn>-<hash>` split at the last `-`; no `-`: all of it is the CN.
fn split_key(key: &str) -> (&str, Option<&str>) {
    match key.rsplit_once('-') {
        Some((cn, hash)) => (cn, Some(hash)),
        None => (key, None),
    }
}

impl Acl {
    /// Loads every `*.acl` file of `dir`, in name order. A missing directory
    /// means no rules. Bad lines are skipped with a warning naming file and
    /// line (Func crashed on a line with two `=`).
    pub fn load(dir: &Path) -> Self {
        let mut acl = Self::default();
        let Ok(entries) = std::fs::read_dir(dir) else {
            return acl;
        };
        let mut files: Vec<_> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "acl"))
            .collect();
        files.sort();
        for file in files {
            match std::fs::metadata(&file) {
                Ok(m) if m.len() <= MAX_ACL_FILE => {}
                _ => {
                    tracing::warn!(file = %file.display(), "ACL file unreadable or over 1 MiB, skipped");
                    continue;
                }
            }
            let Ok(bytes) = std::fs::read(&file) else {
                continue;
            };
            acl.add_text(&file, &String::from_utf8_lossy(&bytes));
        }
        acl
    }

    /// Parses ACL text; `source` only names it in warnings.
    pub fn add_text(&mut self, source: &Path, text: &str) {
        for (idx, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            match parse_line(line) {
                Some(rule) => self.rules.push(rule),
                None => {
                    tracing::warn!(file = %source.display(), line = idx + 1, "malformed ACL line skipped")
                }
            }
        }
    }

    /// Whether `who` may call `method` (the name after any `async.` prefix).
    pub fn allows(&self, who: &Caller, method: &str) -> bool {
        if who.overlord {
            return true;
        }
        let (cn, hash) = split_key(&who.key);
        self.rules
            .iter()
            .filter(|r| r.cn.matches_with(cn, ANY_CASE) && hash.is_some_and(|h| r.hash.matches(h)))
            .any(|r| r.methods.iter().any(|m| m.matches(method)))
    }
}

fn parse_line(line: &str) -> Option<Rule> {
    let (key, methods) = line.split_once('=')?;
    if methods.contains('=') {
        return None;
    }
    let (cn, hash) = split_key(key.trim());
    let methods = methods
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|m| !m.is_empty())
        .map(Pattern::new)
        .collect::<Result<Vec<_>, _>>()
        .ok()?;
    (!cn.is_empty() && !methods.is_empty()).then_some(Rule {
        cn: Pattern::new(cn).ok()?,
        hash: Pattern::new(hash.unwrap_or("*")).ok()?,
        methods,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn who(cn: &str, overlord: bool) -> Caller {
        Caller::new(format!("{cn}-1234"), overlord)
    }

    #[test]
    fn overlord_may_call_everything_others_need_rules() {
        let mut acl = Acl::default();
        assert!(acl.allows(&who("overlord", true), "command.run"));
        assert!(!acl.allows(&who("m2", false), "test.ping"));
        acl.add_text(
            Path::new("t.acl"),
            "# comment\nm2-* = test.*, system.list_methods\nbad line\nx = a = b\nWEB1-1234 = command.run\n",
        );
        assert!(acl.allows(&who("m2", false), "test.ping"));
        assert!(acl.allows(&who("m2", false), "system.list_methods"));
        assert!(!acl.allows(&who("m2", false), "command.run"));
        assert!(
            acl.allows(&who("web1", false), "command.run"),
            "host key is lower-cased as in Func"
        );
        assert!(!acl.allows(&who("m3", false), "test.ping"));
    }

    #[test]
    fn loads_only_acl_files_and_tolerates_missing_dir() {
        let dir = tempfile::tempdir().unwrap();
        assert!(!Acl::load(&dir.path().join("absent")).allows(&who("m2", false), "test.ping"));
        std::fs::write(dir.path().join("a.acl"), "m2-1234 = test.ping\n").unwrap();
        std::fs::write(dir.path().join("b.txt"), "m2-1234 = command.run\n").unwrap();
        let acl = Acl::load(dir.path());
        assert!(acl.allows(&who("m2", false), "test.ping"));
        assert!(!acl.allows(&who("m2", false), "command.run"));
    }

    #[test]
    fn a_key_splits_at_its_last_dash_into_cn_and_hash() {
        let mut acl = Acl::default();
        acl.add_text(
            Path::new("t.acl"),
            "m2-* = test.*\nweb-1-99 = command.run\n*-5 = system.*\nbare = process.*\n",
        );
        assert!(acl.allows(&Caller::new("m2-1234", false), "test.ping"));
        assert!(
            acl.allows(&Caller::new("M2-1", false), "test.ping"),
            "CNs ignore case"
        );
        assert!(
            !acl.allows(&Caller::new("m2-evil-1234", false), "test.ping"),
            "m2-* is host m2, not any name starting with m2-"
        );
        assert!(acl.allows(&Caller::new("web-1-99", false), "command.run"));
        assert!(!acl.allows(&Caller::new("web-1-98", false), "command.run"));
        assert!(!acl.allows(&Caller::new("web-199", false), "command.run"));
        assert!(acl.allows(&Caller::new("any-host-5", false), "system.list_modules"));
        assert!(!acl.allows(&Caller::new("any-host-6", false), "system.list_modules"));
        assert!(acl.allows(&Caller::new("bare-77", false), "process.info"));
        assert!(!acl.allows(&Caller::new("bare2-77", false), "process.info"));
    }
}
