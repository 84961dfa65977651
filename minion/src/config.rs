//! The minion's settings: `etc/func/minion.conf` below the root (Func's key
//! names in `[main]`), overridden by command-line flags.

use std::net::SocketAddr;
use std::time::Duration;

use common::config::{ConfigError, Ini};
use common::paths::Root;
use common::xmlrpc::Limits;

/// Func's default minion port.
pub const DEFAULT_PORT: u16 = 51234;

/// Everything `funcd` needs to run.
#[derive(Debug, Clone)]
pub struct MinionConfig {
    pub root: Root,
    /// The minion's name: its certificate's CN and file names.
    pub name: String,
    pub listen: SocketAddr,
    pub limits: Limits,
    /// How long a client may take to finish the TLS handshake.
    pub handshake_timeout: Duration,
    /// How long a client may take to send a request's headers (also the
    /// idle limit of a kept-alive connection).
    pub header_timeout: Duration,
    /// How long a client may take to send a request body.
    pub body_timeout: Duration,
    /// Connections served at once; further ones wait in the kernel backlog.
    pub max_connections: usize,
    /// Directories below the root that `copyfile` may write (default `/`).
    pub copyfile_dirs: Vec<String>,
    /// Seconds an async job's record is kept after it finished (Func's 3600).
    pub keep_jobs: f64,
    /// What one caller may consume (`limits.rs`).
    pub quotas: crate::limits::Quotas,
    /// Drop-in modules' bounds (`[modules]`).
    pub modules: crate::dropin::Settings,
}

/// Values given on the command line, which win over the config file.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    pub name: Option<String>,
    pub listen: Option<SocketAddr>,
}

impl MinionConfig {
    /// Reads `etc/func/minion.conf` below `root` and applies `overrides`.
    pub fn load(root: Root, overrides: Overrides) -> Result<Self, ConfigError> {
        let ini = Ini::load(&root.minion_conf())?;
        let secs = |key: &str, default: f64| -> Result<Duration, ConfigError> {
            let v = ini.f64("main", key)?.unwrap_or(default);
            Ok(Duration::from_secs_f64(v.clamp(0.05, 86_400.0)))
        };
        let port = match ini.u64("main", "listen_port")? {
            Some(p) => u16::try_from(p).map_err(|_| ConfigError::Value {
                path: ini.path().to_path_buf(),
                section: "main".into(),
                key: "listen_port".into(),
                value: p.to_string(),
                expected: "a port number (0-65535)",
            })?,
            None => DEFAULT_PORT,
        };
        let addr = ini.str("main", "listen_addr").unwrap_or("0.0.0.0");
        let listen = format!("{addr}:{port}")
            .parse::<SocketAddr>()
            .or_else(|_| format!("[{addr}]:{port}").parse())
            .map_err(|_| ConfigError::Value {
                path: ini.path().to_path_buf(),
                section: "main".into(),
                key: "listen_addr".into(),
                value: addr.to_string(),
                expected: "an IP address",
            })?;
        let name = overrides
            .name
            .or_else(|| ini.str("main", "minion_name").map(str::to_string))
            .unwrap_or_else(default_name);
        let mut copyfile_dirs = ini.list("main", "copyfile_dirs");
        if copyfile_dirs.is_empty() {
            copyfile_dirs.push("/".into());
        }
        Ok(Self {
            name,
            listen: overrides.listen.unwrap_or(listen),
            limits: Limits {
                max_body: ini
                    .u64("main", "max_request_size")?
                    .map(|v| v as usize)
                    .unwrap_or(common::xmlrpc::DEFAULT_MAX_BODY),
                max_depth: ini
                    .u64("main", "max_nesting")?
                    .map(|v| v as usize)
                    .unwrap_or(common::xmlrpc::DEFAULT_MAX_DEPTH),
                max_values: ini
                    .u64("main", "max_request_values")?
                    .map(|v| v.clamp(1, 100_000_000) as usize)
                    .unwrap_or(common::xmlrpc::DEFAULT_MAX_VALUES),
            },
            handshake_timeout: secs("handshake_timeout", 5.0)?,
            header_timeout: secs("header_timeout", 30.0)?,
            body_timeout: secs("body_timeout", 60.0)?,
            max_connections: ini
                .u64("main", "max_connections")?
                .map(|v| v.max(1) as usize)
                .unwrap_or(1024),
            copyfile_dirs,
            keep_jobs: ini
                .f64("main", "keep_jobs")?
                .filter(|v| v.is_finite() && *v >= 0.0)
                .unwrap_or(3600.0),
            quotas: crate::limits::Quotas::load(&ini)?,
            modules: crate::dropin::Settings::load(&ini)?,
            root,
        })
    }
}

/// The host name, as Func falls back to it.
fn default_name() -> String {
    nix::unistd::gethostname()
        .ok()
        .and_then(|h| h.into_string().ok())
        .unwrap_or_else(|| "localhost".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_file_and_overrides() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        let cfg = MinionConfig::load(
            root.clone(),
            Overrides {
                name: Some("m1".into()),
                listen: None,
            },
        )
        .unwrap();
        assert_eq!(cfg.listen.port(), DEFAULT_PORT);
        assert_eq!(cfg.name, "m1");
        std::fs::create_dir_all(root.minion_conf().parent().unwrap()).unwrap();
        std::fs::write(root.minion_conf(), "[main]\nlisten_addr = 127.0.0.1\nlisten_port = 0\nminion_name = fromconf\nmax_request_size = 1000\nheader_timeout = 0.5\n").unwrap();
        let cfg = MinionConfig::load(root.clone(), Overrides::default()).unwrap();
        assert_eq!(cfg.listen.to_string(), "127.0.0.1:0");
        assert_eq!(cfg.name, "fromconf");
        assert_eq!(cfg.limits.max_body, 1000);
        assert_eq!(cfg.header_timeout, Duration::from_millis(500));
        std::fs::write(root.minion_conf(), "[main]\nlisten_port = 99999\n").unwrap();
        let err = MinionConfig::load(root, Overrides::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains("listen_port"), "{err}");
    }
}
