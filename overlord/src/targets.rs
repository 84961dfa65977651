//! Which minions a SPEC names, and where to call them.
//!
//! Minions are the signed certificates in the certmaster's store below the
//! overlord's root (`var/lib/certmaster/certmaster/certs/<name>.cert`), as in
//! Func. A SPEC is `;`-separated parts: a glob over names (`web*`,
//! `db[12]`), `@group` (every member) or `@group:glob` (members matching
//! the glob); members without a signed certificate are dropped. `-e`
//! subtracts another SPEC. Each minion is called at the address it
//! advertised at enrollment (`<name>.addr`), else `<name>:51234`.

use std::collections::BTreeSet;

use common::paths::Root;

use crate::groups::Groups;

/// Func's minion port, used when a minion advertised no address.
pub const DEFAULT_PORT: u16 = 51234;

/// One minion to call.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct Target {
    pub name: String,
    /// `host:port`.
    pub addr: String,
}

impl Target {
    /// Minion `name` at the address it advertised, read now (a minion may
    /// have restarted elsewhere since a job began).
    pub fn enrolled(root: &Root, name: &str) -> Self {
        Self {
            name: name.to_string(),
            addr: address(root, name),
        }
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TargetError {
    #[error("can't find any minions matching \"{0}\"{hint}", hint = comma_hint(.0))]
    NoMatch(String),
    #[error("bad pattern {pattern:?}: {detail}")]
    BadPattern { pattern: String, detail: String },
    #[error("unknown group {0:?} (see etc/func/groups)")]
    UnknownGroup(String),
}

/// Names of every signed minion, sorted: the certmaster's certificates
/// below the root, and with a shared store (`[store] url`) the minions the
/// store lists (what a certmaster configured with it signed), so an
/// overlord host without the certmaster resolves SPECs too.
pub fn all_minions(root: &Root) -> Vec<String> {
    let mut names = local_minions(root);
    if let Some(shared) = shared_minions(root) {
        names.extend(shared.into_iter().map(|(n, _)| n));
        names.sort();
        names.dedup();
    }
    names
}

/// The minions a shared store lists (name, address), read at most every
/// 2 s per process; `None` without one. An unreachable store is said once
/// per process and the local certificates are used.
fn shared_minions(root: &Root) -> Option<Vec<(String, Option<String>)>> {
    use std::sync::Mutex;
    use std::time::{Duration, Instant};
    type Cache = Option<(Instant, std::path::PathBuf, Vec<(String, Option<String>)>)>;
    static CACHE: Mutex<Cache> = Mutex::new(None);
    static WARNED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    let mut cache = CACHE.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((at, dir, list)) = cache.as_ref() {
        if at.elapsed() < Duration::from_secs(2) && dir == root.dir() {
            return Some(list.clone());
        }
    }
    match crate::settings::store(root).shared_minions()? {
        Ok(list) => {
            let list: Vec<(String, Option<String>)> = list
                .into_iter()
                .filter(|(n, _)| common::identity::is_valid_host_name(n))
                .collect();
            *cache = Some((Instant::now(), root.dir().to_path_buf(), list.clone()));
            Some(list)
        }
        Err(e) => {
            if !WARNED.swap(true, std::sync::atomic::Ordering::Relaxed) {
                crate::log::line(&format!(
                    "func: minion list: {e} (using the certificates below the root)"
                ));
            }
            None
        }
    }
}

fn local_minions(root: &Root) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(root.signed_certs_dir())
        .into_iter()
        .flatten()
        .filter_map(|e| {
            let path = e.ok()?.path();
            (path.extension()? == "cert").then(|| path.file_stem()?.to_str().map(str::to_string))?
        })
        .filter(|n| common::identity::is_valid_host_name(n))
        .collect();
    names.sort();
    names
}

/// "; use ';' …" when `spec` separates names with commas (Func uses `;`).
pub fn comma_hint(spec: &str) -> String {
    match spec.contains(',') {
        true => format!(" (hint: ';' separates names: '{}')", spec.replace(',', ";")),
        false => String::new(),
    }
}

/// Whether a SPEC part is a literal name (no glob characters, no group).
fn is_literal(part: &str) -> bool {
    !part.starts_with('@') && !part.contains(['*', '?', '['])
}

/// The literal names of `spec` (no glob characters) that select no minion
/// of `known`: typos that would otherwise be dropped silently.
pub fn missing_literals(spec: &str, known: &[String]) -> Vec<String> {
    spec.split(';')
        .map(str::trim)
        .filter(|p| !p.is_empty() && is_literal(p))
        .filter(|p| !known.iter().any(|k| k == p))
        .map(str::to_string)
        .collect()
}

/// Names a SPEC selects from `known`.
pub fn select(spec: &str, known: &[String], groups: &Groups) -> Result<BTreeSet<String>, TargetError> {
    let mut chosen = BTreeSet::new();
    for part in spec.split(';').map(str::trim).filter(|p| !p.is_empty()) {
        if let Some(group_part) = part.strip_prefix('@') {
            let (group, glob) = match group_part.split_once(':') {
                Some((g, pat)) => (g, Some(pattern(pat)?)),
                None => (group_part, None),
            };
            let members = groups
                .hosts(group)
                .ok_or_else(|| TargetError::UnknownGroup(group.to_string()))?;
            for member in members {
                // Members are themselves globs in Func; match them against signed names.
                let member_pat = pattern(&member)?;
                for name in known.iter().filter(|n| member_pat.matches(n)) {
                    if glob.as_ref().is_none_or(|g| g.matches(name)) {
                        chosen.insert(name.clone());
                    }
                }
            }
        } else {
            let pat = pattern(part)?;
            chosen.extend(known.iter().filter(|n| pat.matches(n)).cloned());
        }
    }
    Ok(chosen)
}

fn pattern(text: &str) -> Result<glob::Pattern, TargetError> {
    glob::Pattern::new(text).map_err(|e| TargetError::BadPattern {
        pattern: text.to_string(),
        detail: e.to_string(),
    })
}

/// Resolves SPEC minus EXCLUDE into targets (sorted); no match is an error.
pub fn resolve(root: &Root, spec: &str, exclude: Option<&str>) -> Result<Vec<Target>, TargetError> {
    Ok(with_addresses(root, resolve_names(root, spec, exclude)?.0))
}

/// Resolves SPEC minus EXCLUDE into minion names (sorted), with one scan of
/// the certificates directory and no per-host file read (async dispatch
/// needs only names: its driver reads each address when it calls), and the
/// literal names of SPEC that matched no minion. No match is an error.
pub fn resolve_names(
    root: &Root,
    spec: &str,
    exclude: Option<&str>,
) -> Result<(Vec<String>, Vec<String>), TargetError> {
    resolve_names_with(root, spec, exclude, &[])
}

/// [`resolve_names`] over the signed minions and `extra` (the minions a
/// delegation map names: reached through relays, signed elsewhere).
pub fn resolve_names_with(
    root: &Root,
    spec: &str,
    exclude: Option<&str>,
    extra: &[String],
) -> Result<(Vec<String>, Vec<String>), TargetError> {
    let mut known = all_minions(root);
    if !extra.is_empty() {
        known.extend(extra.iter().cloned());
        known.sort();
        known.dedup();
    }
    let missing = missing_literals(spec, &known);
    let groups = Groups::load(&root.groups_file());
    let mut chosen = select(spec, &known, &groups)?;
    if let Some(ex) = exclude {
        for name in select(ex, &known, &groups)? {
            chosen.remove(&name);
        }
    }
    if chosen.is_empty() {
        return Err(TargetError::NoMatch(spec.to_string()));
    }
    Ok((chosen.into_iter().collect(), missing))
}

/// `targets` with the addresses left unread (empty: see
/// `Plan::call_targets`) read now, except those of the hosts `relayed`
/// says a relay calls (their relay knows where they are).
pub fn read_addresses(root: &Root, targets: Vec<Target>, relayed: impl Fn(&str) -> bool) -> Vec<Target> {
    targets
        .into_iter()
        .map(|t| match t.addr.is_empty() && !relayed(&t.name) {
            true => Target::enrolled(root, &t.name),
            false => t,
        })
        .collect()
}

/// Each minion at the address it advertised.
fn with_addresses(root: &Root, names: Vec<String>) -> Vec<Target> {
    names
        .into_iter()
        .map(|name| Target {
            addr: address(root, &name),
            name,
        })
        .collect()
}

/// Where `name` said it can be reached (its `.addr` file below the root,
/// else the shared store's record of it, else `<name>:51234`).
pub fn address(root: &Root, name: &str) -> String {
    let usable = |s: String| Some(s.trim().to_string()).filter(|s| !s.is_empty() && s.len() < 300);
    let file = root.signed_certs_dir().join(format!("{name}.addr"));
    addresses::read(&file, |f| std::fs::read_to_string(f).ok().and_then(usable))
        .or_else(|| {
            shared_minions(root)?
                .into_iter()
                .find(|(n, _)| n == name)
                .and_then(|(_, a)| a)
                .and_then(usable)
        })
        .unwrap_or_else(|| format!("{name}:{DEFAULT_PORT}"))
}

/// The `.addr` files a long-lived process (func-api, a relay) has read,
/// kept while each file is unchanged: a call to its whole segment then
/// costs one `stat` per host instead of opening and reading each file.
///
/// A file counts as unchanged while its inode, length, change and
/// modification times are; the `.addr` files are rewritten in place (a
/// minion restarted on another port), so what was read within the last
/// [`RACY`] of its modification time is read again every time: a second
/// write in the same clock tick would not change the times.
pub mod addresses {
    use std::collections::HashMap;
    use std::os::unix::fs::MetadataExt;
    use std::path::{Path, PathBuf};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Mutex;
    use std::time::{Duration, SystemTime};

    /// Files modified this recently are not kept.
    pub const RACY: Duration = Duration::from_secs(2);
    /// Files kept at most (the rest are read every time).
    const MAX: usize = 1 << 20;

    static ON: AtomicBool = AtomicBool::new(false);
    static KEPT: Mutex<Option<HashMap<PathBuf, (Stamp, String)>>> = Mutex::new(None);

    #[derive(PartialEq, Eq, Clone, Copy)]
    struct Stamp {
        ino: u64,
        len: u64,
        mtime: (i64, i64),
        ctime: (i64, i64),
    }

    /// From now on this process keeps what it read (a long-lived one).
    pub fn keep() {
        ON.store(true, Ordering::Relaxed);
    }

    /// What `read` makes of `file`, from what was kept if the file is unchanged.
    pub(super) fn read(file: &Path, read: impl Fn(&Path) -> Option<String>) -> Option<String> {
        read_within(file, RACY, read)
    }

    /// [`read`], keeping only files neither modified nor changed within `racy`.
    pub(super) fn read_within(
        file: &Path,
        racy: Duration,
        read: impl Fn(&Path) -> Option<String>,
    ) -> Option<String> {
        if !ON.load(Ordering::Relaxed) {
            return read(file);
        }
        let meta = std::fs::symlink_metadata(file).ok()?;
        if !meta.is_file() {
            return read(file);
        }
        let stamp = Stamp {
            ino: meta.ino(),
            len: meta.len(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
        };
        let lock = || KEPT.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((kept, addr)) = lock().as_ref().and_then(|m| m.get(file)) {
            if *kept == stamp {
                return Some(addr.clone());
            }
        }
        let addr = read(file)?;
        let at = |(s, ns): (i64, i64)| {
            let (s, ns) = (u64::try_from(s).ok()?, u32::try_from(ns).ok()?);
            SystemTime::UNIX_EPOCH.checked_add(Duration::new(s, ns))
        };
        let settled = [stamp.mtime, stamp.ctime].into_iter().all(|t| {
            at(t)
                .and_then(|t| SystemTime::now().duration_since(t).ok())
                .is_some_and(|age| age >= racy)
        });
        let mut kept = lock();
        let map = kept.get_or_insert_with(HashMap::new);
        if settled && (map.len() < MAX || map.contains_key(file)) {
            map.insert(file.to_path_buf(), (stamp, addr.clone()));
        } else {
            map.remove(file);
        }
        Some(addr)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_address_is_read_again_once_its_file_changed() {
        use std::fs::OpenOptions;
        use std::io::Write;
        use std::time::{Duration, SystemTime};
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("m1.addr");
        let read = |f: &std::path::Path| std::fs::read_to_string(f).ok();
        let ago = |s| SystemTime::now() - Duration::from_secs(s);
        let rewrite = |text: &str, mtime: Option<SystemTime>| {
            let mut f = OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .open(&file)
                .unwrap();
            f.write_all(text.as_bytes()).unwrap();
            if let Some(t) = mtime {
                f.set_modified(t).unwrap();
            }
        };
        addresses::keep();
        rewrite("127.0.0.1:10001", Some(ago(60)));
        assert_eq!(addresses::read(&file, read).as_deref(), Some("127.0.0.1:10001"));
        // Rewritten in place, same length, just now: never kept, always read.
        rewrite("127.0.0.1:10002", None);
        assert_eq!(addresses::read(&file, read).as_deref(), Some("127.0.0.1:10002"));
        rewrite("127.0.0.1:10003", None);
        assert_eq!(addresses::read(&file, read).as_deref(), Some("127.0.0.1:10003"));
        // Changed and given back its old modification time: its change
        // time is recent, so it is read again.
        let old = ago(30);
        rewrite("127.0.0.1:10004", Some(old));
        assert_eq!(addresses::read(&file, read).as_deref(), Some("127.0.0.1:10004"));
        rewrite("127.0.0.1:10005", Some(old));
        assert_eq!(addresses::read(&file, read).as_deref(), Some("127.0.0.1:10005"));
        // Kept once settled (here: at once): an unchanged file is not read again.
        let now = Duration::ZERO;
        assert_eq!(
            addresses::read_within(&file, now, read).as_deref(),
            Some("127.0.0.1:10005")
        );
        assert_eq!(
            addresses::read(&file, |_| None).as_deref(),
            Some("127.0.0.1:10005")
        );
        // Gone: no address (the caller's fallbacks decide).
        std::fs::remove_file(&file).unwrap();
        assert_eq!(addresses::read(&file, read), None);
    }

    fn names() -> Vec<String> {
        ["db1", "db2", "web1", "web2", "web10"]
            .iter()
            .map(|s| s.to_string())
            .collect()
    }

    fn groups() -> Groups {
        Groups::parse("[web]\nhost = web1, web2, ghost\n[all]\nhost = *\n")
    }

    fn sel(spec: &str) -> Vec<String> {
        select(spec, &names(), &groups()).unwrap().into_iter().collect()
    }

    #[test]
    fn globs_lists_and_groups() {
        assert_eq!(sel("web?"), ["web1", "web2"]);
        assert_eq!(sel("web1;db*"), ["db1", "db2", "web1"]);
        assert_eq!(sel("db[!1]"), ["db2"]);
        assert_eq!(sel("@web"), ["web1", "web2"], "ghost has no certificate");
        assert_eq!(sel("@all:db*"), ["db1", "db2"]);
        assert!(sel("nothing*").is_empty());
        assert_eq!(
            select("@nope", &names(), &groups()),
            Err(TargetError::UnknownGroup("nope".into()))
        );
        assert!(matches!(
            select("[", &names(), &groups()),
            Err(TargetError::BadPattern { .. })
        ));
    }
}
