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
    std::fs::read_to_string(root.signed_certs_dir().join(format!("{name}.addr")))
        .ok()
        .and_then(usable)
        .or_else(|| {
            shared_minions(root)?
                .into_iter()
                .find(|(n, _)| n == name)
                .and_then(|(_, a)| a)
                .and_then(usable)
        })
        .unwrap_or_else(|| format!("{name}:{DEFAULT_PORT}"))
}

#[cfg(test)]
mod tests {
    use super::*;

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
