//! What this overlord has seen of each schedule, kept outside the store
//! (`var/lib/func/schedules.seen`, 0600): the highest signed version, whether
//! that version deleted it, and the time its runs count from (the anchor).
//! Whoever can write the store can put back a record that a change or a
//! deletion replaced (still validly signed) or roll a run's time back: a
//! record older than the version seen here, or one of a schedule deleted
//! here, is refused, and a run's due time never counts from before the
//! anchor seen here (DESIGN §9).
//!
//! The file is read and written under a lock (func-api's scheduler, its
//! requests and `func schedule` may change it at once), whole, through a
//! temporary file.

use std::collections::BTreeMap;
use std::path::PathBuf;

use common::paths::Root;
use serde::{Deserialize, Serialize};

/// One schedule as seen here.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct Entry {
    pub version: u64,
    #[serde(default)]
    pub deleted: bool,
    /// Its runs count from here (epoch seconds).
    #[serde(default)]
    pub anchor: f64,
}

/// Most schedules remembered (a name's entry is kept after a deletion).
const MAX_ENTRIES: usize = 200_000;

fn path(root: &Root) -> PathBuf {
    root.join("var/lib/func/schedules.seen")
}

/// Everything seen, by schedule name.
pub fn all(root: &Root) -> BTreeMap<String, Entry> {
    load_from(root)
}

fn load_from(root: &Root) -> BTreeMap<String, Entry> {
    std::fs::read(path(root))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

/// What was seen of `name` (default: nothing).
pub fn get(root: &Root, name: &str) -> Entry {
    load_from(root).get(name).copied().unwrap_or_default()
}

/// Records `entry` for `name`, never lowering what was seen: the highest
/// version (deleted if that version deleted it) and the latest anchor.
pub fn raise(root: &Root, name: &str, entry: Entry) -> std::io::Result<()> {
    let file = path(root);
    if let Some(dir) = file.parent() {
        common::private::private_dir(dir)?;
    }
    let lock = common::private::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(file.with_extension("lock"))?;
    // Held until dropped at the end.
    let _held = nix::fcntl::Flock::lock(lock, nix::fcntl::FlockArg::LockExclusive)
        .map_err(|(_, e)| std::io::Error::from(e))?;
    let mut all = load_from(root);
    let seen = all.entry(name.to_string()).or_default();
    let before = *seen;
    if entry.version > seen.version {
        seen.version = entry.version;
        seen.deleted = entry.deleted;
    } else if entry.version == seen.version {
        seen.deleted |= entry.deleted;
    }
    seen.anchor = seen.anchor.max(entry.anchor);
    if *seen == before {
        return Ok(());
    }
    if all.len() > MAX_ENTRIES {
        return Err(std::io::Error::other("too many schedules remembered"));
    }
    let text = serde_json::to_vec(&all).map_err(std::io::Error::other)?;
    common::private::write(&file, &text, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_was_seen_only_rises() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path().to_path_buf());
        let e = |version, deleted, anchor| Entry {
            version,
            deleted,
            anchor,
        };
        raise(&root, "s", e(3, false, 100.0)).unwrap();
        raise(&root, "s", e(2, false, 50.0)).unwrap();
        assert_eq!(get(&root, "s"), e(3, false, 100.0));
        raise(&root, "s", e(4, true, 0.0)).unwrap();
        raise(&root, "s", e(4, false, 200.0)).unwrap();
        assert_eq!(get(&root, "s"), e(4, true, 200.0), "a deletion stays");
        assert_eq!(get(&root, "other"), Entry::default());
        let mode = std::fs::metadata(path(&root)).unwrap().permissions();
        assert_eq!(std::os::unix::fs::PermissionsExt::mode(&mode) & 0o777, 0o600);
    }
}
