//! func-api's tokens: made by `func-api token create`, printed once, stored
//! only as a SHA-256 hash (with the name, the rights and the expiry) in
//! `var/lib/func/api/tokens.json` (0600 in a 0700 directory, replaced
//! atomically). The service reads the file again whenever it changes, so a
//! revoke takes effect at the next request, and ends open event streams.
//!
//! A token is an admin (everything) or holds rules `SPEC=GLOB,…`; what
//! they allow is judged by the gate (`gate::rights`).

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use common::paths::Root;
use serde::{Deserialize, Serialize};

pub use overlord::gate::rights::{Rights, Rule};

/// Longest life a token may be given (a year); the default is 12 hours, as
/// salt-api's `token_expire`.
pub const MAX_EXPIRES: f64 = 365.0 * 86_400.0;
pub const DEFAULT_EXPIRES: f64 = 12.0 * 3600.0;
/// Tokens kept at most.
pub const MAX_TOKENS: usize = 10_000;

/// A stored token (never the token itself).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Token {
    pub name: String,
    /// SHA-256 of the token, hex.
    pub hash: String,
    pub admin: bool,
    #[serde(default)]
    pub allow: Vec<Rule>,
    pub created: f64,
    pub expires: f64,
}

impl Token {
    pub fn expired(&self, now: f64) -> bool {
        now >= self.expires
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct File {
    tokens: Vec<Token>,
}

/// The token file below `root`.
pub fn path(root: &Root) -> PathBuf {
    root.status_dir().join("api").join("tokens.json")
}

/// The SHA-256 of `token`, hex.
pub fn hash(token: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, token.as_bytes());
    digest.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

/// Why a token could not be made, listed or revoked.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error("no randomness from the system")]
    NoRandomness,
    /// The token file cannot be read or written.
    #[error("{}: {source}", path.display())]
    File {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: {source}", path.display())]
    Unreadable {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("bad token name {0:?}: 1 to 64 letters, digits, '-', '_', '.', '@'")]
    BadName(String),
    #[error("a token named {0:?} exists (func-api token revoke {0} first)")]
    Exists(String),
    #[error("{MAX_TOKENS} tokens exist; revoke some first")]
    Full,
}

/// `n` random bytes as URL-safe base64 (no padding).
pub fn random(n: usize) -> Result<String, TokenError> {
    use base64::Engine as _;
    use ring::rand::SecureRandom as _;
    let mut bytes = vec![0u8; n];
    ring::rand::SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| TokenError::NoRandomness)?;
    Ok(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes))
}

fn load(path: &Path) -> Result<File, TokenError> {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|source| TokenError::Unreadable {
            path: path.to_path_buf(),
            source,
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(File::default()),
        Err(source) => Err(TokenError::File {
            path: path.to_path_buf(),
            source,
        }),
    }
}

fn save(path: &Path, file: &File) -> Result<(), TokenError> {
    let failed = |path: &Path| {
        let path = path.to_path_buf();
        move |source| TokenError::File { path, source }
    };
    if let Some(dir) = path.parent() {
        common::private::private_dir(dir).map_err(failed(dir))?;
    }
    let bytes = serde_json::to_vec_pretty(file).map_err(|source| TokenError::Unreadable {
        path: path.to_path_buf(),
        source,
    })?;
    common::private::write(path, &bytes, true).map_err(failed(path))
}

/// A token name: 1 to 64 letters, digits, `-`, `_`, `.`, `@`.
pub fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '@'))
}

/// Creates token `name` and returns the token (the only time it exists in clear).
pub fn create(
    root: &Root,
    name: &str,
    admin: bool,
    allow: Vec<Rule>,
    expires_in: f64,
) -> Result<(String, Token), TokenError> {
    if !valid_name(name) {
        return Err(TokenError::BadName(common::paths::shorten(name)));
    }
    let path = path(root);
    let mut file = load(&path)?;
    let now = overlord::store::now();
    file.tokens.retain(|t| !t.expired(now));
    if file.tokens.iter().any(|t| t.name == name) {
        return Err(TokenError::Exists(name.to_string()));
    }
    if file.tokens.len() >= MAX_TOKENS {
        return Err(TokenError::Full);
    }
    let secret = format!("fapi_{}", random(32)?);
    let token = Token {
        name: name.to_string(),
        hash: hash(&secret),
        admin,
        allow,
        created: now,
        expires: now + expires_in,
    };
    file.tokens.push(token.clone());
    save(&path, &file)?;
    Ok((secret, token))
}

/// Every stored token.
pub fn list(root: &Root) -> Result<Vec<Token>, TokenError> {
    Ok(load(&path(root))?.tokens)
}

/// Removes token `name`; whether it existed.
pub fn revoke(root: &Root, name: &str) -> Result<bool, TokenError> {
    let path = path(root);
    let mut file = load(&path)?;
    let before = file.tokens.len();
    file.tokens.retain(|t| t.name != name);
    if file.tokens.len() == before {
        return Ok(false);
    }
    save(&path, &file)?;
    Ok(true)
}

/// The tokens as the service knows them, read again when the file changes.
pub struct Tokens {
    path: PathBuf,
    stamp: Option<(SystemTime, u64)>,
    tokens: Vec<Token>,
}

impl Tokens {
    pub fn new(root: &Root) -> Self {
        let mut t = Tokens {
            path: path(root),
            stamp: None,
            tokens: Vec::new(),
        };
        t.reload();
        t
    }

    fn reload(&mut self) {
        let stamp = std::fs::metadata(&self.path)
            .ok()
            .and_then(|m| Some((m.modified().ok()?, m.len())));
        if stamp == self.stamp && stamp.is_some() {
            return;
        }
        match load(&self.path) {
            Ok(file) => {
                self.tokens = file.tokens;
                self.stamp = stamp;
            }
            // A file being replaced or damaged: refuse every token until
            // it reads again (never keep a revoked one alive).
            Err(e) => {
                tracing::warn!(error = %e, "token file unreadable; refusing tokens");
                self.tokens.clear();
                self.stamp = None;
            }
        }
    }

    /// The token named `name`, expired or not (a schedule's owner).
    pub fn named(&mut self, name: &str) -> Option<Token> {
        self.reload();
        self.tokens.iter().find(|t| t.name == name).cloned()
    }

    /// The live token whose hash is `hash`.
    pub fn find(&mut self, hash: &str) -> Option<Token> {
        self.reload();
        let now = overlord::store::now();
        self.tokens
            .iter()
            // Hashes of 256-bit random tokens: comparing them tells an attacker nothing.
            .find(|t| t.hash == hash)
            .filter(|t| !t.expired(now))
            .cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_stored_hashed_and_revocable() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        let (secret, tok) = create(&root, "ci", true, Vec::new(), 60.0).unwrap();
        let text = std::fs::read_to_string(path(&root)).unwrap();
        assert!(!text.contains(&secret), "the token is never stored in clear");
        assert!(text.contains(&hash(&secret)));
        let mode =
            std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(path(&root)).unwrap().permissions());
        assert_eq!(mode & 0o777, 0o600);
        let mut live = Tokens::new(&root);
        assert_eq!(live.find(&hash(&secret)).unwrap().name, tok.name);
        assert!(
            create(&root, "ci", true, Vec::new(), 60.0).is_err(),
            "names are unique"
        );
        assert!(revoke(&root, "ci").unwrap());
        assert!(live.find(&hash(&secret)).is_none());
        assert!(create(&root, "bad name", true, Vec::new(), 60.0).is_err());
    }
}
