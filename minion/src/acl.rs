//! Func's ACL files (`etc/func/minion-acl.d/*.acl`): lines
//! `<cn>-<subject hash> = method glob, method glob`, globs on both sides
//! (`web1-* = test.*`). The overlord's marked certificate may call everything;
//! any other certificate may call only what an ACL line grants it.

use std::path::Path;

use common::identity::PeerIdentity;
use glob::Pattern;

/// One parsed ACL line.
#[derive(Debug)]
struct Rule {
    host: Pattern,
    methods: Vec<Pattern>,
}

/// All ACL rules of a minion.
#[derive(Debug, Default)]
pub struct Acl {
    rules: Vec<Rule>,
}

/// ACL file sizes we read; a larger file is skipped with a warning.
const MAX_ACL_FILE: u64 = 1 << 20;

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
    pub fn allows(&self, who: &PeerIdentity, method: &str) -> bool {
        if who.overlord {
            return true;
        }
        let key = who.acl_key();
        self.rules
            .iter()
            .filter(|r| r.host.matches(&key))
            .any(|r| r.methods.iter().any(|m| m.matches(method)))
    }
}

fn parse_line(line: &str) -> Option<Rule> {
    let (host, methods) = line.split_once('=')?;
    if methods.contains('=') {
        return None;
    }
    let host = Pattern::new(&host.trim().to_lowercase()).ok()?;
    let methods = methods
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|m| !m.is_empty())
        .map(Pattern::new)
        .collect::<Result<Vec<_>, _>>()
        .ok()?;
    (!methods.is_empty()).then_some(Rule { host, methods })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn who(cn: &str, overlord: bool) -> PeerIdentity {
        PeerIdentity {
            cn: cn.into(),
            subject_hash: 1234,
            overlord,
        }
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
}
