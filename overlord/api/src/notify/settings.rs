//! `[notify.NAME]` in overlord.conf: where func-api tells of jobs that end.
//!
//! ```ini
//! [notify.ops-hook]
//! url = https://hooks.example.org/func      # a webhook: one signed JSON POST per job
//! secret_file = etc/func/ops-hook.secret     # or secret = …: X-Func-Signature's HMAC key
//! on = failed                                # or finished (every job)
//! for = all                                  # or schedules (only runs of schedules naming it)
//!
//! [notify.ops-mail]
//! smtp = mail.example.org:587                # a mail per job
//! smtp_tls = starttls                        # or tls (implicit), or none (loopback only)
//! from = func@example.org
//! to = ops@example.org, oncall@example.org
//! ```

use common::paths::Root;

/// Which ends a target is told of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum On {
    /// Jobs where some host failed, timed out or could not be reached.
    Failed,
    /// Every job.
    Finished,
}

/// Which jobs a target is told of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum For {
    /// Every job.
    All,
    /// Only runs of schedules that name it (`"notify": [NAME]`).
    Schedules,
}

/// How mail reaches its server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SmtpTls {
    StartTls,
    Tls,
    /// Plain text: a server on loopback only.
    None,
}

/// How a target is told.
#[derive(Clone)]
pub enum How {
    Webhook {
        url: String,
        secret: String,
    },
    Mail {
        host: String,
        port: u16,
        tls: SmtpTls,
        from: String,
        to: Vec<String>,
    },
}

/// One `[notify.NAME]`.
#[derive(Clone)]
pub struct Target {
    pub name: String,
    pub on: On,
    pub scope: For,
    pub how: How,
}

impl std::fmt::Debug for Target {
    /// Everything but the secret.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Target")
            .field("name", &self.name)
            .field("on", &self.on)
            .field("for", &self.scope)
            .field("to", &self.destination())
            .finish()
    }
}

impl Target {
    /// Where it goes, for people (never the secret): the webhook's scheme
    /// and host (its path or query may hold a secret, as Slack's do), or
    /// the mail's recipients.
    pub fn destination(&self) -> String {
        match &self.how {
            How::Webhook { url, .. } => {
                let (scheme, rest) = url.split_once("://").unwrap_or(("https", url));
                format!(
                    "{scheme}://{}/…",
                    rest.split(['/', '?', '#']).next().unwrap_or("")
                )
            }
            How::Mail { to, .. } => format!("mail to {}", to.join(", ")),
        }
    }

    pub fn kind(&self) -> &'static str {
        match self.how {
            How::Webhook { .. } => "webhook",
            How::Mail { .. } => "mail",
        }
    }

    /// Whether a job that ended `ok` (or not), run by `schedule` whose
    /// notifications are `named`, is told to this target.
    pub fn wants(&self, ok: bool, named: &[String]) -> bool {
        let outcome = self.on == On::Finished || !ok;
        let job = self.scope == For::All || named.contains(&self.name);
        outcome && job
    }
}

/// Every `[notify.NAME]` below `root`; a value that cannot be used is an
/// error naming it.
pub fn load(root: &Root) -> Result<Vec<Target>, String> {
    let conf = overlord::conf::OverlordConf::of(root).map_err(|e| e.to_string())?;
    let ini = &conf.ini;
    let file = root.overlord_conf();
    let mut targets = Vec::new();
    for section in ini.sections() {
        let Some(name) = section.strip_prefix("notify.") else {
            continue;
        };
        let bad = |key: &str, why: &str| format!("{}: [notify.{name}] {key}: {why}", file.display());
        if name.is_empty()
            || name.len() > 64
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        {
            return Err(bad("", "a name is letters, digits, - _ . (at most 64)"));
        }
        let get = |key: &str| ini.str(section, key).map(str::to_string);
        let on = match get("on").as_deref().unwrap_or("failed") {
            "failed" => On::Failed,
            "finished" => On::Finished,
            other => return Err(bad("on", &format!("{other:?}: failed or finished"))),
        };
        let scope = match get("for").as_deref().unwrap_or("all") {
            "all" => For::All,
            "schedules" => For::Schedules,
            other => return Err(bad("for", &format!("{other:?}: all or schedules"))),
        };
        let how = match (get("url"), get("smtp")) {
            (Some(url), None) => {
                crate::oidc::settings::check_url(&url).map_err(|why| bad("url", &why))?;
                let secret =
                    secret(root, get("secret"), get("secret_file")).map_err(|why| bad("secret", &why))?;
                How::Webhook { url, secret }
            }
            (None, Some(smtp)) => mail(&smtp, &get).map_err(|(key, why)| bad(key, &why))?,
            (Some(_), Some(_)) => {
                return Err(bad("url", "a target is a webhook (url) or mail (smtp), not both"))
            }
            (None, None) => return Err(bad("url", "set url (a webhook) or smtp (mail)")),
        };
        targets.push(Target {
            name: name.to_string(),
            on,
            scope,
            how,
        });
    }
    Ok(targets)
}

/// A webhook's secret: set, and long enough to sign with.
fn secret(root: &Root, text: Option<String>, file: Option<String>) -> Result<String, String> {
    let secret = crate::config::secret(root, "secret", text.as_deref(), file.as_deref())?
        .ok_or("a webhook needs secret (or secret_file): its documents are signed")?;
    match secret.len() >= 16 {
        true => Ok(secret),
        false => Err("at least 16 characters".into()),
    }
}

fn mail(smtp: &str, get: &dyn Fn(&str) -> Option<String>) -> Result<How, (&'static str, String)> {
    let (host, port) = smtp
        .rsplit_once(':')
        .and_then(|(h, p)| Some((h.trim_matches(['[', ']']).to_string(), p.parse::<u16>().ok()?)))
        .filter(|(h, _)| !h.is_empty())
        .ok_or(("smtp", format!("{smtp:?}: expected HOST:PORT")))?;
    let tls = match get("smtp_tls").as_deref().unwrap_or("starttls") {
        "starttls" => SmtpTls::StartTls,
        "tls" => SmtpTls::Tls,
        "none" => SmtpTls::None,
        other => return Err(("smtp_tls", format!("{other:?}: starttls, tls or none"))),
    };
    let loopback = host.eq_ignore_ascii_case("localhost")
        || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback());
    if tls == SmtpTls::None && !loopback {
        return Err(("smtp_tls", "none only for a server on loopback".into()));
    }
    let from = get("from").ok_or(("from", "needed with smtp".to_string()))?;
    let to: Vec<String> = get("to")
        .unwrap_or_default()
        .split([',', ' '])
        .filter(|t| !t.is_empty())
        .map(str::to_string)
        .collect();
    if to.is_empty() {
        return Err(("to", "needed with smtp".into()));
    }
    // Checked now: a bad address would fail every delivery.
    let mailbox = |a: &str| {
        a.parse::<lettre::message::Mailbox>()
            .map(|_| ())
            .map_err(|e| format!("{a:?}: {e}"))
    };
    mailbox(&from).map_err(|e| ("from", e))?;
    for t in &to {
        mailbox(t).map_err(|e| ("to", e))?;
    }
    Ok(How::Mail {
        host,
        port,
        tls,
        from,
        to,
    })
}
