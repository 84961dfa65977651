//! func-api's tokens: made by `func-api token create`, printed once, stored
//! only as a SHA-256 hash (with the name, the rights and the expiry) in
//! `var/lib/func/api/tokens.json` (0600 in a 0700 directory, replaced
//! atomically). The service reads the file again whenever it changes, so a
//! revoke takes effect at the next request, and ends open event streams.
//!
//! Rights: a token is an admin (everything) or holds rules `SPEC=GLOB,…`:
//! a call is allowed when every host it reaches is named by the SPEC of a
//! rule whose method globs match the method (`web*=test.*,service.*`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use common::paths::Root;
use serde::{Deserialize, Serialize};

use crate::groups::Groups;

/// Longest life a token may be given (a year); the default is 12 hours, as
/// salt-api's `token_expire`.
pub const MAX_EXPIRES: f64 = 365.0 * 86_400.0;
pub const DEFAULT_EXPIRES: f64 = 12.0 * 3600.0;
/// Tokens kept at most.
pub const MAX_TOKENS: usize = 10_000;

/// One rule: hosts (a SPEC of globs, `;`-separated, `@group` allowed) and
/// the methods they may be called with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rule {
    pub spec: String,
    pub methods: Vec<String>,
}

impl Rule {
    /// Parses `SPEC=GLOB[,GLOB…]`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let (spec, methods) = text
            .rsplit_once('=')
            .ok_or_else(|| format!("--allow {text:?}: expected SPEC=METHOD_GLOB[,METHOD_GLOB…]"))?;
        let spec = spec.trim();
        let methods: Vec<String> = methods
            .split(',')
            .map(str::trim)
            .filter(|m| !m.is_empty())
            .map(str::to_string)
            .collect();
        if spec.is_empty() || methods.is_empty() {
            return Err(format!(
                "--allow {text:?}: both a SPEC and a method glob are needed"
            ));
        }
        for m in &methods {
            glob::Pattern::new(m).map_err(|e| format!("--allow: bad method glob {m:?}: {e}"))?;
        }
        for part in spec
            .split(';')
            .map(str::trim)
            .filter(|p| !p.is_empty() && !p.starts_with('@'))
        {
            glob::Pattern::new(part).map_err(|e| format!("--allow: bad SPEC glob {part:?}: {e}"))?;
        }
        Ok(Rule {
            spec: spec.to_string(),
            methods,
        })
    }

    fn allows_method(&self, method: &str) -> bool {
        self.methods
            .iter()
            .any(|g| glob::Pattern::new(g).is_ok_and(|p| p.matches(method)))
    }

    /// The hosts among `known` this rule names.
    fn hosts(&self, known: &[String], groups: &Groups) -> BTreeSet<String> {
        crate::targets::select(&self.spec, known, groups).unwrap_or_default()
    }
}

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

/// Who is asking, once authenticated, and what they may do.
#[derive(Debug, Clone)]
pub struct Rights {
    /// Everything (an admin token, or the overlord's certificate).
    pub admin: bool,
    pub rules: Vec<Rule>,
}

impl Rights {
    pub fn admin() -> Self {
        Rights {
            admin: true,
            rules: Vec::new(),
        }
    }

    /// The first host of `hosts` that may not be called with `method`;
    /// `None` when all may. Judged on the names alone, before any call.
    pub fn forbidden<'a>(
        &self,
        root: &Root,
        method: &str,
        hosts: impl IntoIterator<Item = &'a String>,
    ) -> Option<String> {
        if self.admin {
            return None;
        }
        let allowed = self.hosts_for(root, Some(method));
        hosts.into_iter().find(|h| !allowed.contains(*h)).cloned()
    }

    /// The hosts these rights reach with `method` (any method: `None`).
    pub fn hosts_for(&self, root: &Root, method: Option<&str>) -> BTreeSet<String> {
        let known = crate::targets::all_minions(root);
        let groups = Groups::load(&root.groups_file());
        self.rules
            .iter()
            .filter(|r| method.is_none_or(|m| r.allows_method(m)))
            .flat_map(|r| r.hosts(&known, &groups))
            .collect()
    }

    /// Whether every one of `hosts` (at least one) may be called with
    /// `method`, on the names alone: each rule is judged once over all the
    /// hosts, not once per host (events and listings of big jobs).
    pub fn allows_all(&self, hosts: &[String], method: &str, groups: &Groups) -> bool {
        if self.admin {
            return true;
        }
        if hosts.is_empty() {
            return false;
        }
        let mut covered = BTreeSet::new();
        for rule in self.rules.iter().filter(|r| r.allows_method(method)) {
            covered.extend(rule.hosts(hosts, groups));
        }
        hosts.iter().all(|h| covered.contains(h))
    }

    /// Whether `host` may be called with `method` (names only, no lookups
    /// of the certificates: for events and listings of known hosts).
    pub fn allows(&self, host: &str, method: &str, groups: &Groups) -> bool {
        self.admin
            || self
                .rules
                .iter()
                .any(|r| r.allows_method(method) && r.hosts(&[host.to_string()], groups).contains(host))
    }
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

/// `n` random bytes as URL-safe base64 (no padding).
pub fn random(n: usize) -> Result<String, String> {
    use base64::Engine as _;
    use ring::rand::SecureRandom as _;
    let mut bytes = vec![0u8; n];
    ring::rand::SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| "no randomness from the system".to_string())?;
    Ok(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes))
}

fn load(path: &Path) -> Result<File, String> {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| format!("{}: {e}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(File::default()),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

fn save(path: &Path, file: &File) -> Result<(), String> {
    if let Some(dir) = path.parent() {
        common::private::private_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let bytes = serde_json::to_vec_pretty(file).map_err(|e| e.to_string())?;
    common::private::write(path, &bytes, true).map_err(|e| format!("{}: {e}", path.display()))
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
) -> Result<(String, Token), String> {
    if !valid_name(name) {
        return Err(format!(
            "bad token name {:?}: 1 to 64 letters, digits, '-', '_', '.', '@'",
            common::paths::shorten(name)
        ));
    }
    let path = path(root);
    let mut file = load(&path)?;
    let now = crate::store::now();
    file.tokens.retain(|t| !t.expired(now));
    if file.tokens.iter().any(|t| t.name == name) {
        return Err(format!(
            "a token named {name:?} exists (func-api token revoke {name} first)"
        ));
    }
    if file.tokens.len() >= MAX_TOKENS {
        return Err(format!("{MAX_TOKENS} tokens exist; revoke some first"));
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
pub fn list(root: &Root) -> Result<Vec<Token>, String> {
    Ok(load(&path(root))?.tokens)
}

/// Removes token `name`; whether it existed.
pub fn revoke(root: &Root, name: &str) -> Result<bool, String> {
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

    /// The live token whose hash is `hash`.
    pub fn find(&mut self, hash: &str) -> Option<Token> {
        self.reload();
        let now = crate::store::now();
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
    fn rules_parse_and_judge() {
        let r = Rule::parse("web*=test.*,service.*").unwrap();
        assert_eq!(r.spec, "web*");
        assert_eq!(r.methods, ["test.*", "service.*"]);
        assert!(Rule::parse("web*").is_err());
        assert!(Rule::parse("=test.*").is_err());
        assert!(Rule::parse("web*=").is_err());
        assert!(Rule::parse("web*=[").is_err());
        let rights = Rights {
            admin: false,
            rules: vec![r],
        };
        let g = Groups::default();
        assert!(rights.allows("web1", "test.ping", &g));
        assert!(!rights.allows("web1", "command.run", &g));
        assert!(!rights.allows("db1", "test.ping", &g));
        assert!(Rights::admin().allows("db1", "command.run", &g));
        let web: Vec<String> = vec!["web1".into(), "web2".into()];
        assert_eq!(
            rights.allows_all(&web, "test.ping", &g),
            web.iter().all(|h| rights.allows(h, "test.ping", &g))
        );
        assert!(!rights.allows_all(&["web1".into(), "db1".into()], "test.ping", &g));
        assert!(!rights.allows_all(&[], "test.ping", &g));
    }

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
