//! Local facts: files in `etc/func/facts.d/` below the minion's root —
//! `NAME.json` (one JSON object) or an executable `NAME` that prints one —
//! each key a fact (`NAME.KEY`, tagged `KEY`), so `role=web` targets the
//! hosts whose `facts.d/role.json` says `{"role": "web"}`. They are trusted
//! as drop-in modules are (DESIGN §10): the directory and every ancestor
//! owned by root or funcd's user and writable by nobody else, each file
//! owned by one of them and not writable by group or others, no links.
//! Bounded: 64 files, 64 KiB of JSON each, an executable 10 s and 64 KiB
//! of output. A broken one is reported with why (`fact.items()`'s
//! `__errors__`), never fatal: the other facts stay.

use std::collections::BTreeMap;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::time::Duration;

use common::Value;

use crate::dropin::exec::{self, Bounds, Ended, Group};
use crate::dropin::trust;

/// Files read at most.
pub const MAX_FILES: usize = 64;
/// Bytes of one JSON file or one executable's output.
pub const MAX_BYTES: usize = 64 * 1024;
/// How long one executable may take.
pub const TIMEOUT: Duration = Duration::from_secs(10);
/// Keys one file may give.
pub const MAX_KEYS: usize = 256;

/// The facts one file gave.
#[derive(Debug, Clone, PartialEq)]
pub struct LocalFacts {
    /// The file's name without `.json`.
    pub name: String,
    pub values: BTreeMap<String, Value>,
}

/// What `facts.d` holds: the files that gave facts, and why the others
/// did not (by file name).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Gathered {
    pub files: Vec<LocalFacts>,
    pub broken: BTreeMap<String, String>,
}

/// Which local facts to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Which {
    /// JSON files and executables.
    All,
    /// JSON files only (cheap: a filter's first look).
    Json,
    /// Executables only.
    Executables,
}

/// Reads every local fact below `dir`.
pub fn gather(dir: &Path) -> Gathered {
    gather_some(dir, Which::All)
}

/// Reads the local facts of kind `which` below `dir`.
pub fn gather_some(dir: &Path, which: Which) -> Gathered {
    let mut out = Gathered::default();
    match trust::dir_refusal(dir) {
        Ok(false) => return out,
        Ok(true) => {}
        Err(why) => {
            out.broken.insert("facts.d".into(), why);
            return out;
        }
    }
    let mut names: Vec<String> = match std::fs::read_dir(dir) {
        Ok(entries) => entries
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| !n.starts_with('.') && !n.ends_with('~'))
            .collect(),
        Err(e) => {
            out.broken.insert("facts.d".into(), e.to_string());
            return out;
        }
    };
    names.sort();
    for (i, file) in names.into_iter().enumerate() {
        if i >= MAX_FILES {
            out.broken
                .insert(file, format!("more than {MAX_FILES} files in facts.d: not read"));
            continue;
        }
        let json = file.ends_with(".json");
        if (json && which == Which::Executables) || (!json && which == Which::Json) {
            continue;
        }
        match read_one(&dir.join(&file), &file) {
            Ok(facts) => out.files.push(facts),
            Err(why) => {
                tracing::warn!(file = %file, why = %why, "local fact not read");
                out.broken.insert(file, why);
            }
        }
    }
    out
}

fn read_one(path: &Path, file: &str) -> Result<LocalFacts, String> {
    let name = file.strip_suffix(".json").unwrap_or(file);
    if name.is_empty()
        || !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-".contains(&b))
    {
        return Err("a fact file's name is letters, digits, '_' and '-' (and .json)".into());
    }
    let meta = std::fs::symlink_metadata(path).map_err(|e| e.to_string())?;
    let text = if file.ends_with(".json") {
        if let Some(why) = data_refusal(&meta) {
            return Err(why);
        }
        if meta.len() > MAX_BYTES as u64 {
            return Err(format!("larger than {MAX_BYTES} bytes"));
        }
        std::fs::read(path).map_err(|e| e.to_string())?
    } else {
        if let Some(why) = trust::file_refusal(&meta) {
            return Err(format!("neither NAME.json nor a trusted executable: {why}"));
        }
        run(path)?
    };
    let json: serde_json::Value = serde_json::from_slice(&text).map_err(|e| format!("not JSON: {e}"))?;
    let serde_json::Value::Object(map) = json else {
        return Err("not one JSON object".into());
    };
    if map.len() > MAX_KEYS {
        return Err(format!("more than {MAX_KEYS} facts"));
    }
    let mut values = BTreeMap::new();
    for (key, value) in map {
        if key.is_empty()
            || key.len() > 128
            || key.contains("__")
            || !key.bytes().all(|b| b.is_ascii_graphic())
        {
            return Err(format!(
                "fact name {:?}: 1 to 128 printable characters, no spaces, no '__'",
                common::paths::shorten(&key)
            ));
        }
        let value = crate::dropin::json::from_json(&value).map_err(|e| format!("{key}: {e}"))?;
        values.insert(key, value);
    }
    Ok(LocalFacts {
        name: name.to_string(),
        values,
    })
}

/// Why a JSON fact file may not be believed (a file anyone else could
/// write would let them choose which hosts a filter targets).
fn data_refusal(meta: &std::fs::Metadata) -> Option<String> {
    if meta.file_type().is_symlink() {
        return Some("a symbolic link (install the file itself)".into());
    }
    if !meta.is_file() {
        return Some("not a regular file".into());
    }
    let uid = meta.uid();
    if uid != 0 && uid != nix::unistd::geteuid().as_raw() {
        return Some(format!("owned by uid {uid}, not root or funcd's user"));
    }
    let mode = meta.permissions().mode();
    (mode & 0o022 != 0).then(|| format!("writable by group or others (mode {:04o})", mode & 0o7777))
}

/// Runs a fact executable within its bounds; its stdout.
fn run(path: &Path) -> Result<Vec<u8>, String> {
    let mut cmd = std::process::Command::new(path);
    cmd.env_clear()
        .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
        .env("LANG", "C.UTF-8")
        .current_dir("/");
    let bounds = Bounds {
        timeout: TIMEOUT,
        max_stdout: MAX_BYTES,
        max_stderr: 4096,
    };
    let done = exec::run(cmd, b"", bounds, Group::Own).map_err(|e| e.to_string())?;
    match done.ended {
        Ended::Exit(0) => Ok(done.stdout),
        Ended::Exit(code) => Err(format!(
            "exited with status {code}: {}",
            String::from_utf8_lossy(&done.stderr_tail).trim()
        )),
        Ended::Signal(sig) => Err(format!("killed by signal {sig}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn private_dir() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o700)).unwrap();
        dir
    }

    fn write(dir: &Path, name: &str, text: &str, mode: u32) {
        let p = dir.join(name);
        fs::write(&p, text).unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn json_files_and_executables_give_facts_and_broken_ones_say_why() {
        let dir = private_dir();
        let d = dir.path();
        write(d, "role.json", r#"{"role": "web", "tier": 2}"#, 0o644);
        write(d, "rack", "#!/bin/sh\necho '{\"rack\": \"r7\"}'\n", 0o755);
        write(d, "bad.json", "{not json", 0o644);
        write(d, "list.json", "[1, 2]", 0o644);
        write(d, "open.json", r#"{"x": 1}"#, 0o666);
        write(d, "fails", "#!/bin/sh\necho oops >&2\nexit 3\n", 0o755);
        write(d, "notes", "just text", 0o644);
        std::os::unix::fs::symlink(d.join("role.json"), d.join("link.json")).unwrap();
        let got = gather(d);
        let names: Vec<&str> = got.files.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["rack", "role"]);
        assert_eq!(got.files[1].values["tier"], Value::Integer(2));
        assert_eq!(got.files[0].values["rack"], Value::String("r7".into()));
        for (file, why) in [
            ("bad.json", "not JSON"),
            ("list.json", "not one JSON object"),
            ("open.json", "writable by group or others"),
            ("fails", "exited with status 3: oops"),
            ("notes", "neither NAME.json nor a trusted executable"),
            ("link.json", "symbolic link"),
        ] {
            assert!(
                got.broken.get(file).is_some_and(|w| w.contains(why)),
                "{file}: {:?}",
                got.broken
            );
        }
    }

    #[test]
    fn a_directory_others_can_write_gives_nothing() {
        let dir = private_dir();
        write(dir.path(), "role.json", r#"{"role": "web"}"#, 0o644);
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o777)).unwrap();
        let got = gather(dir.path());
        assert!(got.files.is_empty());
        assert!(got.broken["facts.d"].contains("writable"), "{got:?}");
        assert_eq!(gather(&dir.path().join("missing")), Gathered::default());
    }
}
