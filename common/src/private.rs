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
/// [`PUBLIC_DIR_MODE`]; then checks every directory from `/` down to
/// `dir` (symlinks resolved first): each must belong to this process's user
/// or root, and others must not be able to write it (a sticky directory
/// like /tmp excepted: others cannot move what is ours in it; a group's
/// write, such as Debian's `/var/log` for `adm`, is the administrator's
/// choice). One of ours that others can write is repaired (`chmod go-w`),
/// and `dir` itself is brought down to `mode`; anything else is refused
/// with what to fix. The walk opens each directory relative to its parent
/// without following links and checks and changes it through that
/// descriptor, top down: a directory swapped for a link mid-walk is
/// refused, never followed, and each level is safe before the next.
pub fn state_dir(dir: &Path, mode: u32) -> io::Result<()> {
    create_dirs(dir, mode)?;
    if fs::symlink_metadata(dir)?.file_type().is_symlink() {
        return Err(io::Error::other(format!(
            "{} is a symlink: state directories must be real directories",
            dir.display()
        )));
    }
    check_path(dir, mode)
}

/// Creates `dir` (mode `mode`) and its missing ancestors (0755). `mkdir`'s
/// mode is only ever narrowed by the umask; [`check_path`] then sets the
/// exact mode through the directory's descriptor.
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
            Ok(()) => {
                // Exactly `want`, through a descriptor of what we just made.
                let fd = open_dir_nofollow(nix::fcntl::AT_FDCWD, path)?;
                nix::sys::stat::fchmod(&fd, nix::sys::stat::Mode::from_bits_truncate(want))?;
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

fn open_dir_nofollow<Fd: std::os::fd::AsFd>(at: Fd, name: &Path) -> io::Result<std::os::fd::OwnedFd> {
    use nix::fcntl::OFlag;
    let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    nix::fcntl::openat(at, name, flags, nix::sys::stat::Mode::empty()).map_err(|e| match e {
        nix::errno::Errno::ELOOP | nix::errno::Errno::ENOTDIR => io::Error::other(format!(
            "{} changed into a symlink or a file while it was checked: refused",
            name.display()
        )),
        other => io::Error::from(other),
    })
}

/// Walks `/` down to `dir` (see [`state_dir`]); `dir` ends at `mode` or narrower.
fn check_path(dir: &Path, mode: u32) -> io::Result<()> {
    let me = nix::unistd::geteuid().as_raw();
    let real = fs::canonicalize(dir)?;
    let mut fd = open_dir_nofollow(nix::fcntl::AT_FDCWD, Path::new("/"))?;
    let mut at = std::path::PathBuf::from("/");
    let parts: Vec<_> = real.components().skip(1).collect();
    for (i, part) in std::iter::once(None).chain(parts.iter().map(Some)).enumerate() {
        if let Some(part) = part {
            fd = open_dir_nofollow(&fd, Path::new(part.as_os_str()))?;
            at.push(part.as_os_str());
        }
        let st = nix::sys::stat::fstat(&fd)?;
        let current = (st.st_mode as u32) & 0o7777;
        if st.st_uid != me && st.st_uid != 0 {
            return Err(io::Error::other(format!(
                "{} belongs to uid {}, not to this user ({me}) or root: another user could replace what is below it",
                at.display(),
                st.st_uid
            )));
        }
        let last = i == parts.len();
        let sticky = current & 0o1000 != 0;
        let want = match (last, sticky) {
            // `dir` itself: no wider than asked.
            (true, false) => current & !(!mode & 0o077),
            (_, true) => current,
            // Others can write it: ours is closed to the group too.
            (false, false) if current & 0o002 != 0 => current & !0o022,
            (false, false) => current,
        };
        if want == current {
            continue;
        }
        if st.st_uid != me {
            return Err(io::Error::other(format!(
                "{} is writable by others (mode {current:o}): run chmod o-w on it",
                at.display()
            )));
        }
        nix::sys::stat::fchmod(&fd, nix::sys::stat::Mode::from_bits_truncate(want))?;
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
    fn a_group_writable_ancestor_is_left_alone_and_an_open_one_of_ours_closed() {
        let tmp = tempfile::tempdir().unwrap();
        let logs = tmp.path().join("var/log");
        fs::create_dir_all(&logs).unwrap();
        // Debian's /var/log: 0775, a group's to write; the administrator's choice.
        fs::set_permissions(&logs, fs::Permissions::from_mode(0o775)).unwrap();
        private_dir(&logs.join("func")).unwrap();
        assert_eq!(mode(&logs), 0o775, "left alone");
        fs::set_permissions(&logs, fs::Permissions::from_mode(0o777)).unwrap();
        private_dir(&logs.join("func")).unwrap();
        assert_eq!(mode(&logs), 0o755, "others could write it: closed");
        // A state directory that is a symlink is refused, never followed.
        std::os::unix::fs::symlink(tmp.path().join("elsewhere"), tmp.path().join("var/lib")).unwrap();
        fs::create_dir(tmp.path().join("elsewhere")).unwrap();
        assert!(state_dir(&tmp.path().join("var/lib"), PUBLIC_DIR_MODE).is_err());
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
