//! Careful writes: write to a temporary file in the same directory, fsync,
//! rename over the target, fsync the directory. Private keys get mode 0600
//! from the moment they exist; everything else 0644.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use crate::{CertError, Result};

/// Mode of private key files.
pub const PRIVATE: u32 = 0o600;
/// Mode of certificates and other public files.
pub const PUBLIC: u32 = 0o644;

/// Atomically writes `contents` to `path` with `mode`, creating parent
/// directories (0755) as needed, durably (the file and the directory
/// synced before it returns).
pub fn write_atomic(path: &Path, contents: &[u8], mode: u32) -> Result<()> {
    write_file(path, contents, mode, true)
}

/// [`write_atomic`] without the syncs: durable only once the file system
/// is synced (`store::GroupCommit`, many writes at a time).
pub fn write_deferred(path: &Path, contents: &[u8], mode: u32) -> Result<()> {
    write_file(path, contents, mode, false)
}

fn write_file(path: &Path, contents: &[u8], mode: u32, durable: bool) -> Result<()> {
    let io = |action, source| CertError::Io {
        action,
        path: path.to_path_buf(),
        source,
    };
    let dir = path
        .parent()
        .ok_or_else(|| io("writing", std::io::Error::other("no parent directory")))?;
    if mode & 0o077 == 0 {
        // Keys live in 0700 directories (tightened if an older install made them wider).
        common::private::private_dir(dir).map_err(|e| io("creating the directory of", e))?;
    } else {
        common::private::state_dir(dir, common::private::PUBLIC_DIR_MODE)
            .map_err(|e| io("creating the directory of", e))?;
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp{}", std::process::id()));
    let result = (|| {
        let _ = fs::remove_file(&tmp);
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits())
            .open(&tmp)?;
        f.write_all(contents)?;
        if durable {
            f.sync_all()?;
        }
        fs::rename(&tmp, path)?;
        match durable {
            true => fs::File::open(dir)?.sync_all(),
            false => Ok(()),
        }
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result.map_err(|e| io("writing", e))
}

/// Reads a text file, naming it in the error.
pub fn read_text(path: &Path) -> Result<String> {
    fs::read_to_string(path).map_err(|source| CertError::Io {
        action: "reading",
        path: path.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn private_files_are_0600_and_replace_atomically() {
        let dir = tempfile::tempdir().unwrap();
        let key = dir.path().join("a/b/key.pem");
        write_atomic(&key, b"one", PRIVATE).unwrap();
        write_atomic(&key, b"two", PRIVATE).unwrap();
        assert_eq!(fs::read(&key).unwrap(), b"two");
        assert_eq!(fs::metadata(&key).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(
            fs::read_dir(key.parent().unwrap()).unwrap().count(),
            1,
            "no temp file left"
        );
    }
}
