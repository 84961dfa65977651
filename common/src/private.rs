//! Files that hold requests, results, arguments, logs or keys: created 0600
//! (the mode given at creation, never a later chmod) in directories that are
//! 0700, and never opened through a symlink. Both daemons and `func` use
//! these for their stores, spools and logs, so a local user can neither
//! read them nor open them to take their locks.
//!
//! Older installs created such files 0644 in 0755 directories;
//! [`private_dir`] and [`tighten`] bring those down at start-up. The umask
//! is never changed (commands a minion runs for its callers inherit the one
//! funcd was started with) and never decides a directory's mode: every
//! directory is created with its own ([`state_dir`]), and the directories
//! above state must not let another user replace it.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// Mode of private files.
pub const FILE_MODE: u32 = 0o600;
/// Mode of directories that hold private files.
pub const DIR_MODE: u32 = 0o700;

/// Mode of the directories on the way to state (`etc`, `var`, `var/lib`,
/// `var/log`, `var/run`, the certificate directories): others may read
/// and enter them, never write.
pub const PUBLIC_DIR_MODE: u32 = 0o755;

/// Makes `dir` exist as a 0700 directory (created so, or tightened if an
/// older install made it wider), its missing parents 0755, and checks it
/// as [`state_dir`] does. A symlink in its place is refused.
pub fn private_dir(dir: &Path) -> io::Result<()> {
    state_dir(dir, DIR_MODE)
}

/// Makes `dir` exist with `mode` (created so, whatever the umask: a
/// process started under umask 000 made `var`, `var/lib` 0777, and a local
/// user could swap the state below them), its missing ancestors
/// [`PUBLIC_DIR_MODE`]; then checks `dir` and every directory above it:
/// each must belong to this process's user or root, and be writable by no
/// one else (a sticky directory like /tmp excepted: others cannot move what
/// is ours in it). A directory of ours that others can write is repaired
/// (the group and others lose write; `dir` itself is brought to `mode`),
/// anything else is refused with what to fix.
pub fn state_dir(dir: &Path, mode: u32) -> io::Result<()> {
    create_dirs(dir, mode)?;
    let meta = fs::symlink_metadata(dir)?;
    if !meta.is_dir() {
        return Err(io::Error::other(format!(
            "{} is not a directory (a symlink or a file is in its place)",
            dir.display()
        )));
    }
    // A sticky directory (a root of /tmp) is safe as it is and not ours to narrow.
    let current = meta.permissions().mode() & 0o7777;
    if current & 0o1000 == 0 && current & !mode & 0o077 != 0 {
        fs::set_permissions(dir, fs::Permissions::from_mode(mode))?;
    }
    check_ancestors(dir)
}

/// Creates `dir` (mode `mode`) and its missing ancestors (0755), each with
/// its mode set explicitly after `mkdir`, never left to the umask.
fn create_dirs(dir: &Path, mode: u32) -> io::Result<()> {
    let mut missing = Vec::new();
    let mut at = Some(dir);
    while let Some(path) = at {
        match fs::symlink_metadata(path) {
            Ok(_) => break,
            Err(e) if e.kind() == io::ErrorKind::NotFound => missing.push(path),
            Err(e) => return Err(e),
        }
        at = path.parent().filter(|p| !p.as_os_str().is_empty());
    }
    for path in missing.into_iter().rev() {
        let want = if path == dir { mode } else { PUBLIC_DIR_MODE };
        match fs::DirBuilder::new().mode(want).create(path) {
            Ok(()) => fs::set_permissions(path, fs::Permissions::from_mode(want))?,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Checks `dir` and every directory above it (see [`state_dir`]).
fn check_ancestors(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let me = nix::unistd::geteuid().as_raw();
    let my_group = nix::unistd::getegid().as_raw();
    let absolute = std::path::absolute(dir)?;
    for path in absolute.ancestors() {
        let meta = fs::metadata(path)?;
        let mode = meta.mode() & 0o7777;
        let sticky = mode & 0o1000 != 0;
        if meta.uid() != me && meta.uid() != 0 {
            return Err(io::Error::other(format!(
                "{} belongs to uid {}, not to this user ({me}) or root: another user could replace what is below it",
                path.display(),
                meta.uid()
            )));
        }
        let others_write = mode & 0o002 != 0 && !sticky;
        let group_write = mode & 0o020 != 0 && !sticky && meta.gid() != my_group && meta.gid() != 0;
        if !(others_write || group_write) {
            continue;
        }
        if meta.uid() == me {
            fs::set_permissions(path, fs::Permissions::from_mode(mode & !0o022))?;
            continue;
        }
        return Err(io::Error::other(format!(
            "{} is writable by others (mode {mode:o}): run chmod go-w on it",
            path.display()
        )));
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
