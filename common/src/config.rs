//! Func's INI config files (`[main]`, `key = value`, `#`/`;` comments), as read
//! by Python's ConfigParser: a missing file means the defaults, keys are
//! case-insensitive, and values are typed on access with errors that name the
//! file and key. A `#` or `;` preceded by whitespace ends a value (Python 2's
//! ConfigParser, which Func used, ended values at ` ;`; our own samples and
//! README put `# comments` after values), so `key = v   # note` is `v`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Largest config file we read; anything bigger is refused, not truncated.
const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// One parsed INI file: section → key → value.
#[derive(Debug, Clone, Default)]
pub struct Ini {
    path: PathBuf,
    sections: BTreeMap<String, BTreeMap<String, String>>,
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("config {path} is larger than {MAX_CONFIG_BYTES} bytes")]
    TooLarge { path: PathBuf },
    #[error("config {path} line {line}: {problem}")]
    Syntax {
        path: PathBuf,
        line: usize,
        problem: &'static str,
    },
    #[error("config {path}: [{section}] {key} = {value:?} is not {expected}")]
    Value {
        path: PathBuf,
        section: String,
        key: String,
        value: String,
        expected: &'static str,
    },
}

/// `value` up to an inline comment: a `#` or `;` preceded by whitespace.
fn without_comment(value: &str) -> &str {
    let bytes = value.as_bytes();
    let end = (1..bytes.len())
        .find(|&i| matches!(bytes[i], b'#' | b';') && bytes[i - 1].is_ascii_whitespace())
        .unwrap_or(bytes.len());
    &value[..end]
}

impl Ini {
    /// Reads `path`; a file that does not exist is an empty config.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let meta = match std::fs::metadata(path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Self {
                    path: path.to_path_buf(),
                    ..Self::default()
                });
            }
            Err(source) => {
                return Err(ConfigError::Io {
                    path: path.to_path_buf(),
                    source,
                })
            }
        };
        if meta.len() > MAX_CONFIG_BYTES {
            return Err(ConfigError::TooLarge {
                path: path.to_path_buf(),
            });
        }
        let bytes = std::fs::read(path).map_err(|source| ConfigError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let text = String::from_utf8_lossy(&bytes);
        Self::parse(path, &text)
    }

    /// Parses INI text; `path` only names the source in errors.
    pub fn parse(path: &Path, text: &str) -> Result<Self, ConfigError> {
        let mut ini = Self {
            path: path.to_path_buf(),
            sections: BTreeMap::new(),
        };
        let mut section: Option<String> = None;
        let mut last_key: Option<String> = None;
        for (idx, raw) in text.lines().enumerate() {
            let line_no = idx + 1;
            let syntax = |problem| ConfigError::Syntax {
                path: path.to_path_buf(),
                line: line_no,
                problem,
            };
            let trimmed = raw.trim();
            if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with(';') {
                continue;
            }
            // ConfigParser continuation: an indented line extends the last value.
            if raw.starts_with([' ', '\t']) {
                if let (Some(sec), Some(key)) = (&section, &last_key) {
                    if let Some(v) = ini.sections.get_mut(sec).and_then(|s| s.get_mut(key)) {
                        v.push('\n');
                        v.push_str(without_comment(trimmed).trim_end());
                        continue;
                    }
                }
            }
            if let Some(rest) = trimmed.strip_prefix('[') {
                let name = rest
                    .strip_suffix(']')
                    .ok_or_else(|| syntax("section header without ']'"))?;
                let name = name.trim().to_string();
                ini.sections.entry(name.clone()).or_default();
                section = Some(name);
                last_key = None;
                continue;
            }
            let sec = section
                .as_ref()
                .ok_or_else(|| syntax("key before any [section]"))?;
            let split = trimmed
                .find(['=', ':'])
                .ok_or_else(|| syntax("expected 'key = value'"))?;
            let key = trimmed[..split].trim().to_ascii_lowercase();
            if key.is_empty() {
                return Err(syntax("empty key"));
            }
            let value = without_comment(&trimmed[split + 1..]).trim().to_string();
            ini.sections
                .entry(sec.clone())
                .or_default()
                .insert(key.clone(), value);
            last_key = Some(key);
        }
        Ok(ini)
    }

    /// The file this config came from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Section names in sorted order.
    pub fn sections(&self) -> impl Iterator<Item = &str> {
        self.sections.keys().map(String::as_str)
    }

    /// Key/value pairs of one section.
    pub fn section(&self, name: &str) -> Option<&BTreeMap<String, String>> {
        self.sections.get(name)
    }

    /// A raw value, `None` when absent or empty (Func treats `key =` as unset).
    pub fn str(&self, section: &str, key: &str) -> Option<&str> {
        self.sections
            .get(section)
            .and_then(|s| s.get(&key.to_ascii_lowercase()))
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }

    fn typed<T>(
        &self,
        section: &str,
        key: &str,
        expected: &'static str,
        parse: impl Fn(&str) -> Option<T>,
    ) -> Result<Option<T>, ConfigError> {
        match self.str(section, key) {
            None => Ok(None),
            Some(v) => parse(v).map(Some).ok_or_else(|| ConfigError::Value {
                path: self.path.clone(),
                section: section.to_string(),
                key: key.to_string(),
                value: crate::paths::shorten(v),
                expected,
            }),
        }
    }

    /// An unsigned integer value.
    pub fn u64(&self, section: &str, key: &str) -> Result<Option<u64>, ConfigError> {
        self.typed(section, key, "a whole number", |v| v.parse().ok())
    }

    /// A float value (seconds, ratios).
    pub fn f64(&self, section: &str, key: &str) -> Result<Option<f64>, ConfigError> {
        self.typed(section, key, "a number", |v| {
            v.parse::<f64>().ok().filter(|f| f.is_finite())
        })
    }

    /// A boolean in ConfigParser's spellings (`1/yes/true/on`, `0/no/false/off`).
    pub fn bool(&self, section: &str, key: &str) -> Result<Option<bool>, ConfigError> {
        self.typed(section, key, "a boolean (yes/no)", |v| {
            match v.to_ascii_lowercase().as_str() {
                "1" | "yes" | "true" | "on" => Some(true),
                "0" | "no" | "false" | "off" => Some(false),
                _ => None,
            }
        })
    }

    /// A list split on commas and whitespace (Func's `ListOption`).
    pub fn list(&self, section: &str, key: &str) -> Vec<String> {
        self.str(section, key)
            .map(|v| {
                v.split(|c: char| c == ',' || c.is_whitespace())
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Ini, ConfigError> {
        Ini::parse(Path::new("test.conf"), text)
    }

    #[test]
    fn reads_func_minion_conf() {
        let ini = parse(
            "# comment\n[main]\nlog_level = DEBUG\nlisten_port = 51234\nminion_name =\nACL_DIR: /etc/x\n",
        )
        .unwrap();
        assert_eq!(ini.u64("main", "listen_port").unwrap(), Some(51234));
        assert_eq!(ini.str("main", "minion_name"), None);
        assert_eq!(ini.str("main", "acl_dir"), Some("/etc/x"));
        assert_eq!(ini.str("other", "x"), None);
    }

    #[test]
    fn whitespace_preceded_comments_end_a_value() {
        let ini = parse(
            "[main]\nca_fingerprint = SHA256 AB:CD   # from step 2\nport = 1 ; old style\nurl = http://x/#frag\nspec = web*;db1\nempty = # nothing\n",
        )
        .unwrap();
        assert_eq!(ini.str("main", "ca_fingerprint"), Some("SHA256 AB:CD"));
        assert_eq!(ini.u64("main", "port").unwrap(), Some(1));
        assert_eq!(
            ini.str("main", "url"),
            Some("http://x/#frag"),
            "no space before: kept"
        );
        assert_eq!(ini.str("main", "spec"), Some("web*;db1"));
        assert_eq!(ini.str("main", "empty"), None);
    }

    #[test]
    fn typed_errors_name_the_key() {
        let ini = parse("[main]\nlisten_port = lots\nautosign = maybe\n").unwrap();
        let err = ini.u64("main", "listen_port").unwrap_err().to_string();
        assert!(
            err.contains("listen_port") && err.contains("whole number"),
            "{err}"
        );
        assert!(ini.bool("main", "autosign").is_err());
    }

    #[test]
    fn syntax_errors_have_line_numbers() {
        let err = parse("key = before section\n").unwrap_err().to_string();
        assert!(err.contains("line 1"), "{err}");
        assert!(parse("[main\n").is_err());
        assert!(parse("[main]\njustaword\n").is_err());
    }

    #[test]
    fn lists_and_continuations() {
        let ini = parse("[main]\nforce_async = command.run, yumcmd.update\n  virt.install\n").unwrap();
        assert_eq!(
            ini.list("main", "force_async"),
            vec!["command.run", "yumcmd.update", "virt.install"]
        );
    }

    #[test]
    fn missing_file_is_empty_and_oversized_refused() {
        let dir = std::env::temp_dir().join(format!("func-ini-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let ini = Ini::load(&dir.join("absent.conf")).unwrap();
        assert_eq!(ini.sections().count(), 0);
        let big = dir.join("big.conf");
        std::fs::write(&big, vec![b'#'; (MAX_CONFIG_BYTES + 1) as usize]).unwrap();
        assert!(matches!(Ini::load(&big), Err(ConfigError::TooLarge { .. })));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
