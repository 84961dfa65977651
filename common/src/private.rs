//! Files that hold requests, results, arguments, logs or keys: created 0600
//! (the mode given at creation, never a later chmod) in directories that are
//! 0700, and never opened through a symlink. Both daemons and `func` use
//! these for their stores, spools and logs, so a local user can neither
//! read them nor open them to take their locks.
//!
//! Older installs created such files 0644 in 0755 directories;
//! [`private_dir`] and [`tighten`] bring those down at start-up. The umask
//! is never changed: commands a minion runs for its callers inherit the one
//! funcd was started with.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// Mode of private files.
pub const FILE_MODE: u32 = 0o600;
/// Mode of directories that hold private files.
pub const DIR_MODE: u32 = 0o700;

/// Makes `dir` exist as a 0700 directory: created so (its parents as usual),
/// or tightened if an older install made it wider. A symlink in its place
/// is refused.
pub fn private_dir(dir: &Path) -> io::Result<()> {
    if let Some(parent) = dir.parent() {
        fs::create_dir_all(parent)?;
    }
    match fs::DirBuilder::new().mode(DIR_MODE).create(dir) {
        Ok(()) => return Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let meta = fs::symlink_metadata(dir)?;
    if !meta.is_dir() {
        return Err(io::Error::other(format!(
            "{} is not a directory (a symlink or a file is in its place)",
            dir.display()
        )));
    }
    if meta.permissions().mode() & 0o077 != 0 {
        fs::set_permissions(dir, fs::Permissions::from_mode(DIR_MODE))?;
    }
    Ok(())
}

/// Options that open (creating 0600 if missing) a private file without
/// following a symlink at its name.
pub fn options() -> OpenOptions {
    let mut opts = OpenOptions::new();
    opts.mode(FILE_MODE).custom_flags(libc_flags());
    opts
}

fn libc_flags() -> i32 {
    nix::fcntl::OFlag::O_NOFOLLOW.bits() | nix::fcntl::OFlag::O_CLOEXEC.bits()
}

/// Opens `path` for appending (a log), creating it 0600.
pub fn append(path: &Path) -> io::Result<File> {
    options().create(true).append(true).open(path)
}

/// Writes a whole private file (0600, not through a link): to a temporary
/// name next to it, then renamed over it. With `durable`, the data and the
/// directory entry are fsynced.
pub fn write(path: &Path, bytes: &[u8], durable: bool) -> io::Result<()> {
    use std::io::Write;
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::other("no file name"))?
        .to_string_lossy();
    let tmp = path.with_file_name(format!(".{name}.tmp{}", std::process::id()));
    let written = (|| {
        let _ = fs::remove_file(&tmp);
        let mut f = options().write(true).create_new(true).open(&tmp)?;
        f.write_all(bytes)?;
        if durable {
            f.sync_all()?;
        }
        fs::rename(&tmp, path)?;
        if durable {
            if let Some(dir) = path.parent() {
                File::open(dir)?.sync_all()?;
            }
        }
        Ok(())
    })();
    if written.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    written
}

/// Brings an existing file from an older install down to 0600 (not
/// through a link); a missing file is fine.
pub fn tighten(path: &Path) -> io::Result<()> {
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.is_file() && meta.permissions().mode() & 0o077 != 0 => {
            fs::set_permissions(path, fs::Permissions::from_mode(FILE_MODE))
        }
        Ok(_) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// Detaches from the terminal (`daemon(3)`) keeping the logs: stdin and
/// stdout go to /dev/null, stderr — where the daemons log — is appended to
/// `log` (0600, in a 0700 directory). Rotate it with logrotate's
/// `copytruncate` (the daemon keeps the file open, writing with O_APPEND).
pub fn daemonise_logging_to(log: &Path) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    if let Some(dir) = log.parent() {
        private_dir(dir)?;
    }
    let file = append(log)?;
    let null = OpenOptions::new().read(true).write(true).open("/dev/null")?;
    nix::unistd::daemon(false, true).map_err(io::Error::from)?;
    // SAFETY: dup2 onto this process's standard descriptors; both sources are open.
    unsafe {
        libc_dup2(null.as_raw_fd(), 0);
        libc_dup2(null.as_raw_fd(), 1);
        libc_dup2(file.as_raw_fd(), 2);
    }
    Ok(())
}

unsafe fn libc_dup2(from: i32, to: i32) {
    // SAFETY: the caller passes open descriptors.
    unsafe { nix::libc::dup2(from, to) };
}

/// Every regular file directly in `dir`, tightened (older spools and logs).
pub fn tighten_all(dir: &Path) -> io::Result<()> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Ok(());
    };
    for entry in entries.flatten() {
        tighten(&entry.path())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(p: &Path) -> u32 {
        fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777
    }

    #[test]
    fn created_private_and_older_installs_tightened() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("var/lib/func");
        private_dir(&dir).unwrap();
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&tmp.path().join("var/lib")) & 0o700, 0o700);
        write(&dir.join("a"), b"x", true).unwrap();
        assert_eq!(mode(&dir.join("a")), 0o600);
        append(&dir.join("log")).unwrap();
        assert_eq!(mode(&dir.join("log")), 0o600);
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
        fs::write(dir.join("old"), b"secret").unwrap();
        fs::set_permissions(dir.join("old"), fs::Permissions::from_mode(0o644)).unwrap();
        private_dir(&dir).unwrap();
        tighten_all(&dir).unwrap();
        assert_eq!((mode(&dir), mode(&dir.join("old"))), (0o700, 0o600));
        std::os::unix::fs::symlink("/etc/passwd", dir.join("link")).unwrap();
        assert!(append(&dir.join("link")).is_err(), "never opened through a link");
        tighten(&dir.join("link")).unwrap();
        assert_eq!(
            mode(Path::new("/etc/passwd")),
            0o644,
            "the link's target untouched"
        );
    }
}
