//! `[api]` in overlord.conf: where func-api listens, its certificate, and
//! its limits. Every key is optional; `func-api --listen` overrides `listen`.

use std::path::PathBuf;

use common::paths::Root;

/// func-api's port (DESIGN §14).
pub const DEFAULT_PORT: u16 = 51236;

/// func-api's settings.
#[derive(Debug, Clone)]
pub struct ApiSettings {
    /// `listen = ADDR:PORT` (default `0.0.0.0:51236`).
    pub listen: String,
    /// `cert`, `key`: the service's certificate and key (PEM); by default
    /// a certificate for this host issued by the local CA at first start.
    pub cert: Option<PathBuf>,
    pub key: Option<PathBuf>,
    /// `max_body`: the largest request body (default 1 MiB): larger is 413.
    pub max_body: usize,
    /// `calls_per_token`: calls one caller may have in progress (default 8): more is 429.
    pub calls_per_token: usize,
    /// `event_backlog`: events kept for `Last-Event-ID` resumes (default 10,000).
    pub event_backlog: usize,
    /// `sessions`: browser sessions kept at most (default 10,000; the oldest goes).
    pub sessions: usize,
    /// `auth_failures_per_minute`: failed authentications one address may
    /// make in a minute before it is refused (429) for the rest of it (default 20).
    pub auth_failures: u32,
    /// `max_connections`: connections served at once (default 1,024); when
    /// all are taken, one still in its handshake or yet to send a request goes.
    pub max_connections: usize,
    /// `idle_timeout`: seconds a kept-alive connection may stay idle
    /// (default 15); it is then ended cleanly (TLS close_notify, then FIN,
    /// and the socket lingers so a late request sees a clean end). Every
    /// answer says it: `Keep-Alive: timeout=N`.
    pub idle_timeout: u64,
    /// `cors_origins`: browser origins (`https://dash.example.org`, comma
    /// or space separated) allowed to call the API; default none.
    pub cors_origins: Vec<String>,
    /// `max_idle_connections`: connections to minions kept open between
    /// requests (default 8192; a relay keeps one per minion of its segment).
    pub max_idle_connections: usize,
    /// `keep_idle_for`: seconds an idle connection to a minion is kept
    /// (default 20: below funcd's own 30 s, after which it closes them).
    pub keep_idle_for: u64,
    /// `max_schedules_per_owner`: schedules one owner (a token, a
    /// certificate, a command-line user) may have.
    pub max_schedules_per_owner: usize,
    /// `min_every_limited`: the shortest interval (seconds) of a schedule
    /// whose owner is a token with limited rights (default 60).
    pub min_every_limited: u64,
    /// `max_running_per_owner`: scheduled runs of one limited owner in
    /// progress at once (default 4); a run due beyond it is skipped.
    pub max_running_per_owner: usize,
    /// `public_url`: how people reach this service (`https://func.example.org`),
    /// for the links in notifications; default `https://` and `listen`.
    pub public_url: Option<String>,
}

impl ApiSettings {
    /// As configured below `root`; a malformed value is an error.
    pub fn load(root: &Root) -> Result<Self, String> {
        // overlord.conf as the process read it once (`conf.rs`).
        let conf = overlord::conf::OverlordConf::of(root).map_err(|e| e.to_string())?;
        let ini = Some(&conf.ini);
        let num = |key: &str, default: u64, max: u64| -> Result<usize, String> {
            let v = match &ini {
                Some(ini) => ini.u64("api", key).map_err(|e| e.to_string())?,
                None => None,
            };
            match v {
                Some(v) if v == 0 || v > max => Err(format!(
                    "{}: [api] {key} = {v}: from 1 to {max}",
                    root.overlord_conf().display()
                )),
                Some(v) => Ok(v as usize),
                None => Ok(default as usize),
            }
        };
        let text = |key: &str| ini.and_then(|i| i.str("api", key)).map(str::to_string);
        Ok(ApiSettings {
            listen: text("listen").unwrap_or_else(|| format!("0.0.0.0:{DEFAULT_PORT}")),
            cert: text("cert").map(|p| path_of(root, &p)),
            key: text("key").map(|p| path_of(root, &p)),
            max_body: num("max_body", 1 << 20, 64 << 20)?,
            calls_per_token: num("calls_per_token", 8, 1024)?,
            event_backlog: num("event_backlog", 10_000, 1_000_000)?,
            sessions: num("sessions", 10_000, 1_000_000)?,
            auth_failures: num("auth_failures_per_minute", 20, 1_000_000)? as u32,
            max_connections: num("max_connections", 1024, 65_536)?,
            idle_timeout: num("idle_timeout", 15, 3600)? as u64,
            max_idle_connections: num("max_idle_connections", overlord::pool::MAX_IDLE as u64, 1_000_000)?,
            keep_idle_for: num("keep_idle_for", overlord::pool::IDLE_FOR.as_secs(), 3600)? as u64,
            max_schedules_per_owner: num(
                "max_schedules_per_owner",
                overlord_schedule::DEFAULT_PER_OWNER as u64,
                overlord::store::schedules::MAX_SCHEDULES as u64,
            )?,
            min_every_limited: num(
                "min_every_limited",
                overlord_schedule::DEFAULT_MIN_EVERY_LIMITED,
                overlord_schedule::MAX_EVERY,
            )? as u64,
            max_running_per_owner: num(
                "max_running_per_owner",
                overlord_schedule::DEFAULT_RUNNING_PER_OWNER as u64,
                100_000,
            )?,
            public_url: text("public_url"),
            cors_origins: text("cors_origins")
                .map(|t| {
                    t.split([',', ' '])
                        .map(|o| o.trim().trim_end_matches('/').to_string())
                        .filter(|o| !o.is_empty())
                        .collect()
                })
                .unwrap_or_default(),
        })
    }
}

/// A secret set inline (`KEY = …`) or in a file (`KEY_file = PATH`, a
/// relative path below the root), trimmed; `None` when neither is set.
/// The error never holds the secret.
pub fn secret(
    root: &Root,
    key: &str,
    inline: Option<&str>,
    file: Option<&str>,
) -> Result<Option<String>, String> {
    match (inline, file) {
        (Some(s), None) => Ok(Some(s.to_string())),
        (None, Some(p)) => {
            let path = path_of(root, p);
            let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            Ok(Some(text.trim().to_string()))
        }
        (Some(_), Some(_)) => Err(format!("set {key} or {key}_file, not both")),
        (None, None) => Ok(None),
    }
}

/// A path from the configuration: an absolute one as written, a relative
/// one below the root.
fn path_of(root: &Root, text: &str) -> PathBuf {
    match std::path::Path::new(text).is_absolute() {
        true => PathBuf::from(text),
        false => root.join(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absolute_paths_are_taken_as_written_relative_ones_below_the_root() {
        let root = Root::new("/srv/ov2");
        assert_eq!(
            path_of(&root, "/etc/ssl/api.pem"),
            PathBuf::from("/etc/ssl/api.pem")
        );
        assert_eq!(
            path_of(&root, "etc/api.pem"),
            PathBuf::from("/srv/ov2/etc/api.pem")
        );
    }
}
