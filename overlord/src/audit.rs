//! The overlord's audit log, `var/log/func/api-audit.log` (0600 in a 0700
//! directory): one JSON line per action — when, who, from which address,
//! what, which hosts (the first 50 named, the count always), and the
//! answer's status. func-api writes a line per request; drivers write one
//! when they refuse a request whose signature does not verify. Arguments
//! are not logged (they may hold secrets); the minions log every call too.

use std::io::Write as _;
use std::sync::Mutex;

use common::paths::Root;

/// Hosts named in one line at most.
const HOSTS_SHOWN: usize = 50;

pub struct Audit {
    path: std::path::PathBuf,
    file: Mutex<Option<std::fs::File>>,
}

impl Audit {
    pub fn new(root: &Root) -> Self {
        Audit {
            path: root.log_dir().join("api-audit.log"),
            file: Mutex::new(None),
        }
    }

    /// Writes one line; a failure to write is logged, never fatal.
    pub fn line(
        &self,
        who: &str,
        from: Option<std::net::IpAddr>,
        action: &str,
        hosts: &[String],
        status: u16,
    ) {
        let line = serde_json::json!({
            "time": crate::store::now(),
            "who": who,
            "from": from.map(|a| a.to_string()),
            "action": action,
            "hosts": hosts.iter().take(HOSTS_SHOWN).collect::<Vec<_>>(),
            "host_count": hosts.len(),
            "status": status,
        });
        let mut file = self.file.lock().unwrap_or_else(|p| p.into_inner());
        if file.is_none() {
            if let Some(dir) = self.path.parent() {
                let _ = common::private::private_dir(dir);
            }
            *file = common::private::append(&self.path).ok();
        }
        let written = file.as_mut().map(|f| f.write_all(format!("{line}\n").as_bytes()));
        if !matches!(written, Some(Ok(()))) {
            crate::log::line(&format!("cannot write the audit log {}", self.path.display()));
            *file = None;
        }
    }
}
