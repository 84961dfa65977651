//! Files below a trusted directory, reached only through directory
//! descriptors so that no symbolic link on the way is ever followed.
//!
//! Why: funcd runs as root and writes where callers ask (copyfile). A path
//! check followed by an open by name leaves a window in which a local user
//! who can write in one of the directories swaps a component for a symlink
//! (`renameat2(RENAME_EXCHANGE)`), and a link planted under a name funcd is
//! about to create redirects the write anywhere. Here the check *is* the
//! open: every component is opened relative to the descriptor of its parent,
//! with `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)` where the kernel has
//! it and `O_NOFOLLOW` per component otherwise, and files are created with
//! `O_EXCL | O_NOFOLLOW` relative to the final directory's descriptor.

use std::ffi::OsStr;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path};

use nix::errno::Errno;
use nix::fcntl::{OFlag, OpenHow, ResolveFlag};
use nix::sys::stat::{FileStat, Mode, SFlag};

/// Why a path below the directory could not be used.
#[derive(Debug, thiserror::Error)]
pub enum BeneathError {
    #[error("goes through a symbolic link; refused")]
    Symlink,
    #[error("a component is not a directory")]
    NotDirectory,
    #[error("is not a regular file")]
    NotRegular,
    #[error("path must be relative and without '..'")]
    Escapes,
    #[error("{0}")]
    Io(#[from] io::Error),
}

impl From<Errno> for BeneathError {
    fn from(e: Errno) -> Self {
        match e {
            Errno::ELOOP => BeneathError::Symlink,
            Errno::ENOTDIR => BeneathError::NotDirectory,
            Errno::EXDEV => BeneathError::Escapes,
            other => BeneathError::Io(io::Error::from(other)),
        }
    }
}

/// An open directory; everything below it is reached through its descriptor.
#[derive(Debug)]
pub struct Dir {
    fd: OwnedFd,
}

impl std::os::fd::AsRawFd for Dir {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        self.fd.as_raw_fd()
    }
}

const DIR_FLAGS: OFlag = OFlag::O_RDONLY
    .union(OFlag::O_DIRECTORY)
    .union(OFlag::O_NOFOLLOW)
    .union(OFlag::O_CLOEXEC);

impl Dir {
    /// Opens a trusted directory (the minion's `--root`, set by the
    /// administrator) by its path; symlinks in that path are the admin's.
    pub fn open_trusted(path: &Path) -> Result<Self, BeneathError> {
        let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC;
        let fd = nix::fcntl::open(path, flags, Mode::empty())?;
        Ok(Self { fd })
    }

    /// Opens the directory at `path` whose last component must not be a
    /// symlink (the directories above it are the administrator's).
    pub fn open_dir_nofollow(path: &Path) -> Result<Self, BeneathError> {
        let fd = nix::fcntl::open(path, DIR_FLAGS, Mode::empty())?;
        Ok(Self { fd })
    }

    /// The directory `rel` below this one, never through a symlink; with
    /// `create`, missing directories are made (mode 0755) on the way.
    pub fn open_dir(&self, rel: &Path, create: bool) -> Result<Dir, BeneathError> {
        let parts = parts(rel)?;
        if parts.is_empty() {
            return Ok(Dir {
                fd: self.fd.try_clone()?,
            });
        }
        let how = OpenHow::new()
            .flags(DIR_FLAGS)
            .resolve(ResolveFlag::RESOLVE_BENEATH | ResolveFlag::RESOLVE_NO_SYMLINKS);
        match nix::fcntl::openat2(self.fd.as_fd(), rel, how) {
            Ok(fd) => return Ok(Dir { fd }),
            Err(Errno::EXDEV) => return Err(BeneathError::Escapes),
            // Otherwise walk one component at a time: it makes missing
            // directories, names precisely what is in the way (a link, a
            // file), and serves kernels without openat2 (before 5.6).
            Err(_) => {}
        }
        let mut dir = Dir {
            fd: self.fd.try_clone()?,
        };
        for part in parts {
            dir = dir.child_dir(part, create)?;
        }
        Ok(dir)
    }

    /// One component down, `O_NOFOLLOW`: a symlink there is refused.
    fn child_dir(&self, name: &OsStr, create: bool) -> Result<Dir, BeneathError> {
        match nix::fcntl::openat(self.fd.as_fd(), name, DIR_FLAGS, Mode::empty()) {
            Ok(fd) => Ok(Dir { fd }),
            Err(Errno::ENOENT) if create => {
                match nix::sys::stat::mkdirat(self.fd.as_fd(), name, Mode::from_bits_truncate(0o755)) {
                    Ok(()) | Err(Errno::EEXIST) => {}
                    Err(e) => return Err(e.into()),
                }
                let fd = nix::fcntl::openat(self.fd.as_fd(), name, DIR_FLAGS, Mode::empty())?;
                Ok(Dir { fd })
            }
            Err(e) => Err(self.explain(name, e)),
        }
    }

    /// Turns `ELOOP`/`ENOTDIR` into what the entry really is.
    fn explain(&self, name: &OsStr, e: Errno) -> BeneathError {
        match self.stat(name) {
            Ok(Some(st)) if is_kind(&st, SFlag::S_IFLNK) => BeneathError::Symlink,
            _ => e.into(),
        }
    }

    /// `lstat` of an entry of this directory; `None` if there is none.
    pub fn stat(&self, name: &OsStr) -> Result<Option<FileStat>, BeneathError> {
        match nix::sys::stat::fstatat(self.fd.as_fd(), name, nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW) {
            Ok(st) => Ok(Some(st)),
            Err(Errno::ENOENT) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Opens an existing regular file of this directory for reading or
    /// appending; a symlink, FIFO, device or directory there is refused
    /// (`O_NONBLOCK`, so a FIFO cannot hang the call).
    pub fn open_existing(&self, name: &OsStr, append: bool) -> Result<File, BeneathError> {
        let access = if append {
            OFlag::O_WRONLY | OFlag::O_APPEND
        } else {
            OFlag::O_RDONLY
        };
        let flags = access | OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC | OFlag::O_NOCTTY;
        let fd = nix::fcntl::openat(self.fd.as_fd(), name, flags, Mode::empty())
            .map_err(|e| self.explain(name, e))?;
        let st = nix::sys::stat::fstat(&fd)?;
        if !is_kind(&st, SFlag::S_IFREG) {
            return Err(BeneathError::NotRegular);
        }
        let file = File::from(fd);
        clear_nonblock(&file)?;
        Ok(file)
    }

    /// Creates a new file `O_EXCL | O_NOFOLLOW` with `mode` (so it never
    /// opens anything that already exists, a planted link included).
    /// `Ok(None)` when the name is taken.
    pub fn create_new(&self, name: &OsStr, mode: u32) -> Result<Option<File>, BeneathError> {
        let flags = OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        match nix::fcntl::openat(self.fd.as_fd(), name, flags, Mode::from_bits_truncate(mode)) {
            Ok(fd) => Ok(Some(File::from(fd))),
            Err(Errno::EEXIST) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Renames an entry of this directory over another (atomic; replaces a
    /// file or a link itself, never what a link points to).
    pub fn rename(&self, from: &OsStr, to: &OsStr) -> Result<(), BeneathError> {
        Ok(nix::fcntl::renameat(self.fd.as_fd(), from, self.fd.as_fd(), to)?)
    }

    /// Removes a file entry (not following a link); a missing one is fine.
    pub fn remove(&self, name: &OsStr) {
        let _ = nix::unistd::unlinkat(self.fd.as_fd(), name, nix::unistd::UnlinkatFlags::NoRemoveDir);
    }

    /// Makes the directory's entries durable.
    pub fn sync(&self) -> Result<(), BeneathError> {
        Ok(nix::unistd::fsync(self.fd.as_fd())?)
    }

    /// Opens `rel` for reading as if this directory were `/`: symlinks are
    /// followed but can never leave it (`RESOLVE_IN_ROOT`). `None` when
    /// there is no such regular file, or the kernel cannot confine it.
    pub fn open_in_root(&self, rel: &Path) -> Option<File> {
        parts(rel).ok()?;
        let how = OpenHow::new()
            .flags(OFlag::O_RDONLY | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC | OFlag::O_NOCTTY)
            .resolve(ResolveFlag::RESOLVE_IN_ROOT | ResolveFlag::RESOLVE_NO_MAGICLINKS);
        let fd = match nix::fcntl::openat2(self.fd.as_fd(), rel, how) {
            Ok(fd) => fd,
            // No openat2: the strict walk (no symlink at all) still confines it.
            Err(Errno::ENOSYS | Errno::EPERM) => {
                let name = rel.file_name()?;
                let dir = self.open_dir(rel.parent()?, false).ok()?;
                return dir.open_existing(name, false).ok();
            }
            Err(_) => return None,
        };
        let st = nix::sys::stat::fstat(&fd).ok()?;
        if !is_kind(&st, SFlag::S_IFREG) {
            return None;
        }
        let file = File::from(fd);
        clear_nonblock(&file).ok()?;
        Some(file)
    }
}

fn is_kind(st: &FileStat, kind: SFlag) -> bool {
    SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT == kind
}

fn clear_nonblock(file: &File) -> io::Result<()> {
    let flags = nix::fcntl::fcntl(file, nix::fcntl::FcntlArg::F_GETFL)?;
    let flags = OFlag::from_bits_truncate(flags) - OFlag::O_NONBLOCK;
    nix::fcntl::fcntl(file, nix::fcntl::FcntlArg::F_SETFL(flags))?;
    Ok(())
}

/// The normal components of a relative path; `..`, absolute paths and NUL
/// bytes are refused.
fn parts(rel: &Path) -> Result<Vec<&OsStr>, BeneathError> {
    if rel.as_os_str().as_bytes().contains(&0) {
        return Err(BeneathError::Escapes);
    }
    rel.components()
        .filter(|c| !matches!(c, Component::CurDir))
        .map(|c| match c {
            Component::Normal(p) => Ok(p),
            _ => Err(BeneathError::Escapes),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::os::unix::fs::symlink;

    #[test]
    fn walks_creates_and_refuses_links_on_the_way() {
        let tmp = tempfile::tempdir().unwrap();
        let root = Dir::open_trusted(tmp.path()).unwrap();
        let d = root.open_dir(Path::new("a/b/c"), true).unwrap();
        let mut f = d.create_new(OsStr::new("f"), 0o600).unwrap().unwrap();
        f.write_all(b"x").unwrap();
        assert!(d.create_new(OsStr::new("f"), 0o600).unwrap().is_none(), "O_EXCL");
        let outside = tempfile::tempdir().unwrap();
        symlink(outside.path(), tmp.path().join("a/link")).unwrap();
        for create in [false, true] {
            let e = root.open_dir(Path::new("a/link/x"), create).unwrap_err();
            assert!(matches!(e, BeneathError::Symlink), "{e:?}");
            // The per-component walk (what kernels without openat2 use) agrees.
            let a = root.open_dir(Path::new("a"), false).unwrap();
            assert!(matches!(
                a.child_dir(OsStr::new("link"), create),
                Err(BeneathError::Symlink)
            ));
        }
        assert!(matches!(
            root.open_dir(Path::new("../x"), true),
            Err(BeneathError::Escapes)
        ));
        symlink("/etc/hostname", d.path_for_test("ln")).unwrap();
        assert!(matches!(
            d.open_existing(OsStr::new("ln"), false),
            Err(BeneathError::Symlink)
        ));
        assert!(
            d.create_new(OsStr::new("ln"), 0o600).unwrap().is_none(),
            "a planted link is never opened"
        );
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
        let mut text = String::new();
        d.open_existing(OsStr::new("f"), false)
            .unwrap()
            .read_to_string(&mut text)
            .unwrap();
        assert_eq!(text, "x");
    }

    impl Dir {
        fn path_for_test(&self, name: &str) -> std::path::PathBuf {
            std::fs::read_link(format!(
                "/proc/self/fd/{}",
                std::os::fd::AsRawFd::as_raw_fd(&self.fd)
            ))
            .unwrap()
            .join(name)
        }
    }
}
