//! Which files funcd is willing to execute as modules: regular files (not
//! links), executable, owned by root or by funcd's own user, not writable
//! by group or others — in a directory whose every ancestor is owned by
//! root or funcd's user and not writable by others (a sticky directory like
//! `/tmp` excepted: nobody else can rename what is in it), so that nobody
//! but those two can swap a module between the check and the exec.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

/// A file's identity and the attributes the verdict depends on: any change
/// (new content, chmod, chown, replacement) makes it be judged again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileKey {
    dev: u64,
    ino: u64,
    size: u64,
    mtime_ns: i64,
    ctime_ns: i64,
    mode: u32,
    uid: u32,
}

impl FileKey {
    pub fn of(meta: &std::fs::Metadata) -> Self {
        Self {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mtime_ns: meta.mtime() * 1_000_000_000 + meta.mtime_nsec(),
            ctime_ns: meta.ctime() * 1_000_000_000 + meta.ctime_nsec(),
            mode: meta.mode(),
            uid: meta.uid(),
        }
    }
}

fn trusted_owner(uid: u32) -> bool {
    uid == 0 || uid == nix::unistd::geteuid().as_raw()
}

/// Why the file described by `meta` (from `symlink_metadata`) may not run.
pub fn file_refusal(meta: &std::fs::Metadata) -> Option<String> {
    let ft = meta.file_type();
    if ft.is_symlink() {
        return Some("a symbolic link (install the file itself)".into());
    }
    if !ft.is_file() {
        return Some("not a regular file".into());
    }
    if !trusted_owner(meta.uid()) {
        return Some(format!("owned by uid {}, not root or funcd's user", meta.uid()));
    }
    let mode = meta.permissions().mode();
    if mode & 0o022 != 0 {
        return Some(format!(
            "writable by group or others (mode {:04o})",
            mode & 0o7777
        ));
    }
    if mode & 0o100 == 0 {
        return Some(format!(
            "not executable by its owner (mode {:04o})",
            mode & 0o7777
        ));
    }
    None
}

/// Why the modules in `dir` may not run: `dir` or one of its ancestors is
/// a link, not a directory, or writable by someone else. `Ok(false)` when
/// `dir` does not exist.
pub fn dir_refusal(dir: &Path) -> Result<bool, String> {
    match std::fs::symlink_metadata(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(format!("cannot read the directory: {e}")),
        Ok(_) => {}
    }
    for at in dir.ancestors() {
        let meta = std::fs::symlink_metadata(at).map_err(|e| format!("{}: {e}", at.display()))?;
        if meta.file_type().is_symlink() {
            return Err(format!("{} is a symbolic link", at.display()));
        }
        if !meta.is_dir() {
            return Err(format!("{} is not a directory", at.display()));
        }
        if !trusted_owner(meta.uid()) {
            return Err(format!("{} is owned by uid {}", at.display(), meta.uid()));
        }
        let mode = meta.permissions().mode();
        let sticky = mode & 0o1000 != 0;
        if mode & 0o022 != 0 && !(sticky && at != dir) {
            return Err(format!(
                "{} is writable by group or others (mode {:04o})",
                at.display(),
                mode & 0o7777
            ));
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn only_private_executables_of_a_trusted_owner() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("m");
        fs::write(&f, "#!/bin/sh\n").unwrap();
        let check = |mode: u32| {
            fs::set_permissions(&f, fs::Permissions::from_mode(mode)).unwrap();
            file_refusal(&fs::symlink_metadata(&f).unwrap())
        };
        assert_eq!(check(0o755), None);
        assert_eq!(check(0o700), None);
        assert!(check(0o775).unwrap().contains("writable by group"));
        assert!(check(0o757).unwrap().contains("writable by group or others"));
        assert!(check(0o644).unwrap().contains("not executable"));
        let link = dir.path().join("l");
        std::os::unix::fs::symlink(&f, &link).unwrap();
        assert!(file_refusal(&fs::symlink_metadata(&link).unwrap())
            .unwrap()
            .contains("symbolic link"));
    }

    #[test]
    fn a_directory_others_can_write_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mods = dir.path().join("mods");
        assert_eq!(dir_refusal(&mods), Ok(false));
        fs::create_dir(&mods).unwrap();
        fs::set_permissions(&mods, fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(dir_refusal(&mods), Ok(true));
        fs::set_permissions(&mods, fs::Permissions::from_mode(0o777)).unwrap();
        assert!(dir_refusal(&mods).unwrap_err().contains("writable"));
        fs::set_permissions(&mods, fs::Permissions::from_mode(0o1777)).unwrap();
        assert!(
            dir_refusal(&mods).is_err(),
            "sticky is fine above, not for the modules' own directory"
        );
        fs::set_permissions(&mods, fs::Permissions::from_mode(0o755)).unwrap();
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o777)).unwrap();
        assert!(dir_refusal(&mods).unwrap_err().contains("writable"));
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o700)).unwrap();
    }
}
