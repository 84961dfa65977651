//! The `--root` path scheme: every binary reads and writes only below its root
//! (env `FUNC_ROOT`, default `/`), so several minions, a certmaster and an
//! overlord can run side by side on one machine with Func's own layout.

use std::path::{Component, Path, PathBuf};

/// Environment variable that sets the root when `--root` is not given.
pub const ROOT_ENV: &str = "FUNC_ROOT";

/// A directory under which all of a process's files live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    dir: PathBuf,
}

impl Root {
    /// A root at `dir` (not created; callers create directories as needed).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// The root directory itself.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// `rel` (written as an absolute Func path such as `/etc/func/minion.conf`)
    /// placed below the root.
    pub fn join(&self, rel: &str) -> PathBuf {
        self.dir.join(rel.trim_start_matches('/'))
    }

    /// Maps an absolute path given by a caller (e.g. a copyfile destination)
    /// below the root, refusing `..`, empty and relative paths. Symlinks are
    /// not resolved here; callers that write must check the resolved parent.
    pub fn confine(&self, requested: &str) -> Result<PathBuf, PathError> {
        if requested.is_empty() {
            return Err(PathError::Empty);
        }
        if requested.contains('\0') {
            return Err(PathError::Nul);
        }
        let path = Path::new(requested);
        if !path.is_absolute() {
            return Err(PathError::Relative(shorten(requested)));
        }
        let mut out = self.dir.clone();
        for comp in path.components() {
            match comp {
                Component::RootDir => {}
                Component::Normal(part) => out.push(part),
                Component::CurDir => {}
                Component::ParentDir | Component::Prefix(_) => {
                    return Err(PathError::Traversal(shorten(requested)));
                }
            }
        }
        Ok(out)
    }

    pub fn minion_conf(&self) -> PathBuf {
        self.join("etc/func/minion.conf")
    }
    pub fn overlord_conf(&self) -> PathBuf {
        self.join("etc/func/overlord.conf")
    }
    pub fn async_methods_conf(&self) -> PathBuf {
        self.join("etc/func/async_methods.conf")
    }
    pub fn groups_file(&self) -> PathBuf {
        self.join("etc/func/groups")
    }
    /// Local facts (DESIGN §16): `NAME.json` or executables.
    pub fn facts_dir(&self) -> PathBuf {
        self.join("etc/func/facts.d")
    }
    pub fn acl_dir(&self) -> PathBuf {
        self.join("etc/func/minion-acl.d")
    }
    pub fn certmaster_conf(&self) -> PathBuf {
        self.join("etc/certmaster/certmaster.conf")
    }
    pub fn certmaster_minion_conf(&self) -> PathBuf {
        self.join("etc/certmaster/minion.conf")
    }
    pub fn ca_dir(&self) -> PathBuf {
        self.join("etc/pki/certmaster/ca")
    }
    pub fn ca_key(&self) -> PathBuf {
        self.ca_dir().join("certmaster.key")
    }
    pub fn ca_cert(&self) -> PathBuf {
        self.ca_dir().join("certmaster.crt")
    }
    /// The CRL the certmaster publishes (and the overlord checks minions against).
    pub fn ca_crl(&self) -> PathBuf {
        self.ca_dir().join("certmaster.crl")
    }
    pub fn overlord_key(&self) -> PathBuf {
        self.ca_dir().join("overlord.pem")
    }
    pub fn overlord_cert(&self) -> PathBuf {
        self.ca_dir().join("overlord.cert")
    }
    /// Directory of a minion's own key, cert and CA copy.
    pub fn minion_pki_dir(&self) -> PathBuf {
        self.join("etc/pki/certmaster")
    }
    pub fn minion_key(&self, name: &str) -> PathBuf {
        self.minion_pki_dir().join(format!("{name}.pem"))
    }
    pub fn minion_cert(&self, name: &str) -> PathBuf {
        self.minion_pki_dir().join(format!("{name}.cert"))
    }
    pub fn minion_ca_cert(&self) -> PathBuf {
        self.minion_pki_dir().join("ca.cert")
    }
    /// The CRL a minion last fetched from the certmaster.
    pub fn minion_crl(&self) -> PathBuf {
        self.minion_pki_dir().join("crl.pem")
    }
    pub fn signed_certs_dir(&self) -> PathBuf {
        self.join("var/lib/certmaster/certmaster/certs")
    }
    pub fn pending_csrs_dir(&self) -> PathBuf {
        self.join("var/lib/certmaster/certmaster/csrs")
    }
    pub fn status_dir(&self) -> PathBuf {
        self.join("var/lib/func")
    }
    pub fn log_dir(&self) -> PathBuf {
        self.join("var/log/func")
    }
    pub fn audit_log(&self) -> PathBuf {
        self.log_dir().join("audit.log")
    }
    pub fn run_dir(&self) -> PathBuf {
        self.join("var/run")
    }
}

impl Default for Root {
    fn default() -> Self {
        Self::new("/")
    }
}

/// Why a caller-supplied path was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PathError {
    #[error("empty path")]
    Empty,
    #[error("path contains a NUL byte")]
    Nul,
    #[error("path must be absolute: {0}")]
    Relative(String),
    #[error("path must not contain '..': {0}")]
    Traversal(String),
}

/// At most 200 characters of `s`, for error messages that must stay short.
pub fn shorten(s: &str) -> String {
    const MAX: usize = 200;
    if s.chars().count() <= MAX {
        return s.to_string();
    }
    let mut out: String = s.chars().take(MAX).collect();
    out.push_str("...");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joins_below_root() {
        let root = Root::new("/tmp/r");
        assert_eq!(root.minion_conf(), PathBuf::from("/tmp/r/etc/func/minion.conf"));
        assert_eq!(
            root.minion_cert("m1"),
            PathBuf::from("/tmp/r/etc/pki/certmaster/m1.cert")
        );
    }

    #[test]
    fn confine_refuses_traversal_and_relative() {
        let root = Root::new("/tmp/r");
        assert_eq!(root.confine("/etc/x").unwrap(), PathBuf::from("/tmp/r/etc/x"));
        assert_eq!(root.confine("/a/./b").unwrap(), PathBuf::from("/tmp/r/a/b"));
        assert!(matches!(
            root.confine("/a/../../etc"),
            Err(PathError::Traversal(_))
        ));
        assert!(matches!(root.confine("etc/x"), Err(PathError::Relative(_))));
        assert_eq!(root.confine(""), Err(PathError::Empty));
        assert_eq!(root.confine("/a\0b"), Err(PathError::Nul));
    }

    #[test]
    fn shorten_caps_length() {
        let long = "x".repeat(1000);
        assert_eq!(shorten(&long).len(), 203);
        assert_eq!(shorten("abc"), "abc");
    }
}
