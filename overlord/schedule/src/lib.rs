//! Schedules (DESIGN §14; AWX's schedules, Salt's scheduler): a call
//! request run at times given by a 5-field cron line (the local time zone,
//! as cron) or every N seconds, with its owner's rights at every run. Kept
//! in the job store (`store/schedules.rs`, both backends) and run by
//! func-api's scheduler (`api/scheduler.rs`); `func schedule …` and `…/api/v1/
//! schedules` manage them.
//!
//! - [`Schedule`]: the record as stored. Its request, times, owner, enabled
//!   flag and a version every change raises are signed with the overlord
//!   key when it is accepted or changed ([`seal`]); a deletion leaves a
//!   signed tombstone. Before every run and change the record is checked
//!   ([`trusted`]) against the signature and what this overlord has seen
//!   (`seen.rs`, outside the store): whoever can write the store cannot
//!   make a schedule run something else, elsewhere, as someone else, while
//!   disabled or deleted, or more often than its signed times say.
//! - [`When`]: the validated times; [`When::next_after`].
//! - [`claim`]: the change that takes a due run (one transaction, so one
//!   func-api wins each run): the next run is set past now, so a run missed
//!   while nothing ran is made up once, never once per missed time.

pub mod manage;
pub mod seen;

use serde::{Deserialize, Serialize};

use overlord::gate::{CallFields, GateError};
use overlord::store::Seal;

/// The shortest interval (`every`), seconds.
pub const MIN_EVERY: u64 = 1;
/// The longest interval, seconds (a year).
pub const MAX_EVERY: u64 = 366 * 86_400;
/// Schedules one owner may have, by default (`[api] max_schedules_per_owner`).
pub const DEFAULT_PER_OWNER: usize = 100;
/// The shortest interval of a schedule whose owner is a token with limited
/// rights, by default (`[api] min_every_limited`), seconds.
pub const DEFAULT_MIN_EVERY_LIMITED: u64 = 60;
/// Scheduled runs of one limited owner in progress at once, by default
/// (`[api] max_running_per_owner`): a run due beyond it is skipped.
pub const DEFAULT_RUNNING_PER_OWNER: usize = 4;
/// A run started this long after its time is a missed run made up.
pub const MADE_UP_AFTER: f64 = 30.0;
/// Longest name.
pub const MAX_NAME: usize = 64;
/// The request's largest JSON text.
pub const MAX_REQUEST: usize = 64 << 10;

/// When a schedule runs.
#[derive(Debug, Clone)]
pub enum When {
    Cron(Box<croner::Cron>, String),
    Every(u64),
}

impl When {
    /// The one check of a schedule's times: exactly one of a 5-field cron
    /// line and an interval of at least [`MIN_EVERY`] seconds.
    pub fn parse(cron: Option<&str>, every: Option<u64>) -> Result<When, GateError> {
        let bad = |why: String| Err(GateError::Invalid(why));
        match (cron, every) {
            (Some(_), Some(_)) => bad("a schedule has cron or every, not both".into()),
            (None, None) => bad("a schedule needs cron (\"m h dom mon dow\") or every (seconds)".into()),
            (None, Some(secs)) if !(MIN_EVERY..=MAX_EVERY).contains(&secs) => {
                bad(format!("every: {MIN_EVERY} to {MAX_EVERY} seconds"))
            }
            (None, Some(secs)) => Ok(When::Every(secs)),
            (Some(line), None) => {
                let line = line.trim();
                let fields = line.split_whitespace().count();
                if line.len() > 200 || (fields != 5 && !line.starts_with('@')) {
                    return bad(format!(
                        "cron: 5 fields \"minute hour day-of-month month day-of-week\", not {:?}",
                        common::paths::shorten(line)
                    ));
                }
                let parsed = croner::Cron::new(line).parse().map_err(|e| {
                    GateError::Invalid(format!(
                        "cron {:?}: {}{e}",
                        common::paths::shorten(line),
                        bad_field(line)
                    ))
                })?;
                if let Some(field) = never_matching_field(&parsed) {
                    return bad(format!("cron {line:?} never comes: no {field} matches"));
                }
                let when = When::Cron(Box::new(parsed), line.to_string());
                if when.next_after(overlord::store::now()).is_none() {
                    return bad(format!("cron {line:?} never comes"));
                }
                Ok(when)
            }
        }
    }

    /// The first time after `t` (epoch seconds) it runs.
    ///
    /// The search is bounded: [`When::parse`] admits only lines where some
    /// minute, some hour and some day of four consecutive years match, so
    /// the next run is found within about four years of days (a line no
    /// minute matches made croner search hour by hour to the year 5000:
    /// ~10 s of CPU per request).
    pub fn next_after(&self, t: f64) -> Option<f64> {
        match self {
            When::Every(secs) => Some(t + *secs as f64),
            When::Cron(cron, _) => {
                let start =
                    chrono::DateTime::from_timestamp(t.floor() as i64, 0)?.with_timezone(&chrono::Local);
                let next = cron.find_next_occurrence(&start, false).ok()?;
                Some(next.timestamp() as f64)
            }
        }
    }
}

const FIELDS: [&str; 5] = [
    "minute (0-59)",
    "hour (0-23)",
    "day of month (1-31)",
    "month (1-12)",
    "day of week (0-7)",
];

/// Which field of a 5-field line croner refuses (`the minute field (0-59)
/// "61": `), found by trying each with the others `*`; "" when none alone.
fn bad_field(line: &str) -> String {
    let fields: Vec<&str> = line.split_whitespace().collect();
    if fields.len() != 5 {
        return String::new();
    }
    for (i, field) in fields.iter().enumerate() {
        let alone: Vec<&str> = (0..5).map(|j| if j == i { *field } else { "*" }).collect();
        if croner::Cron::new(&alone.join(" ")).parse().is_err() {
            return format!("the {} field {field:?}: ", FIELDS[i]);
        }
    }
    String::new()
}

/// The field of `cron` that no value matches (`None`: each field has one),
/// checked value by value: 60 minutes, 24 hours, and the days of four
/// years (a leap year among them), so at most ~1,550 cheap checks.
fn never_matching_field(cron: &croner::Cron) -> Option<&'static str> {
    let p = &cron.pattern;
    if !(0..60).any(|m| p.minute_match(m).unwrap_or(false)) {
        return Some("minute");
    }
    if !(0..24).any(|h| p.hour_match(h).unwrap_or(false)) {
        return Some("hour");
    }
    let day = (2028..2032).any(|y| {
        (1..=12).any(|m| {
            p.month_match(m).unwrap_or(false) && (1..=31).any(|d| p.day_match(y, m, d).unwrap_or(false))
        })
    });
    (!day).then_some("day")
}

/// Who owns a schedule: the user its jobs run as, and for a func-api token
/// which one (a token revoked, expired or made anew under its name stops
/// the schedule).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Owner {
    /// `api:NAME` (a token), `api:cert:CN`, `oidc:NAME` (a person signed
    /// in by single sign-on), or a command-line user.
    pub user: String,
    /// The token's name and a digest of its hash; `None` (and no
    /// `person`): an administrator (the overlord's certificate, an admin
    /// token, `func schedule`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<OwnerToken>,
    /// A person signed in by single sign-on: the groups it was in when it
    /// made the schedule, whose rights `[roles]` gives at every run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub person: Option<OwnerPerson>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct OwnerPerson {
    pub groups: Vec<String>,
    /// Whether its groups made it an administrator then.
    #[serde(default)]
    pub admin: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct OwnerToken {
    pub name: String,
    /// SHA-256 of `schedule-owner:` and the token's hash (the token file's
    /// hash is not copied into the store).
    pub check: String,
    /// Whether it was an admin token when the schedule was made.
    #[serde(default)]
    pub admin: bool,
}

impl Owner {
    /// Whether the owner is a token with limited rights (its schedules'
    /// rate is bounded: `[api] min_every_limited`, `max_running_per_owner`).
    pub fn limited(&self) -> bool {
        self.token.as_ref().is_some_and(|t| !t.admin) || self.person.as_ref().is_some_and(|p| !p.admin)
    }
}

/// Refuses times that would run a limited owner's schedule more often than
/// every `min_every` seconds (an interval, or two of a cron line's next
/// sixteen runs closer than that).
pub fn check_rate(owner: &Owner, when: &When, min_every: u64) -> Result<(), GateError> {
    if !owner.limited() {
        return Ok(());
    }
    let closest = match when {
        When::Every(secs) => *secs as f64,
        w => {
            let Some(mut t) = w.next_after(overlord::store::now()) else {
                return Ok(());
            };
            let mut closest = f64::INFINITY;
            for _ in 0..16 {
                let Some(next) = w.next_after(t) else { break };
                closest = closest.min(next - t);
                t = next;
            }
            closest
        }
    };
    match closest < min_every as f64 {
        true => Err(GateError::Invalid(format!(
            "a token with limited rights runs a schedule at most every {min_every} s ([api] min_every_limited)"
        ))),
        false => Ok(()),
    }
}

impl OwnerToken {
    /// The digest a token with hash `hash` is known by.
    pub fn check_of(hash: &str) -> String {
        let digest = ring::digest::digest(&ring::digest::SHA256, format!("schedule-owner:{hash}").as_bytes());
        digest.as_ref().iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// A schedule as stored.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Schedule {
    pub name: String,
    /// The call request (func-api's `POST /api/v1/calls` body).
    pub request: serde_json::Value,
    /// The notification targets (`[notify.NAME]`) its runs are told to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notify: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cron: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub every: Option<u64>,
    pub enabled: bool,
    pub owner: Owner,
    pub created: f64,
    /// The next run (when enabled).
    #[serde(default)]
    pub due: Option<f64>,
    #[serde(default)]
    pub last_run: Option<f64>,
    #[serde(default)]
    pub last_job: Option<String>,
    /// Why the last run did not start (refused, skipped, failed to start).
    #[serde(default)]
    pub last_error: Option<String>,
    /// The last run made up a run missed while no func-api ran.
    #[serde(default)]
    pub made_up: bool,
    /// Why it was disabled, when not by a person (its owner's token gone).
    #[serde(default)]
    pub disabled_reason: Option<String>,
    #[serde(default)]
    pub runs: u64,
    /// Which func-api took the last run (`host:pid`), and when.
    #[serde(default)]
    pub claimed_by: Option<String>,
    /// Raised by every change (signed): a record older than the version
    /// an overlord has seen is one put back, and refused.
    #[serde(default)]
    pub version: u64,
    /// When this version was signed (signed): its runs count from here.
    #[serde(default)]
    pub since: f64,
    /// A signed tombstone: the schedule was deleted.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub deleted: bool,
    /// When the last run's period began (not signed: a run's due time
    /// counts from the latest of this, `since` and what was seen here).
    #[serde(default)]
    pub anchor: Option<f64>,
    #[serde(default)]
    pub seal: Option<Seal>,
}

/// The fields that decide what runs, when and as whom, signed.
#[derive(Serialize)]
struct Signed<'a> {
    v: u32,
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    version: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    deleted: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    enabled: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    since: Option<f64>,
    request: &'a serde_json::Value,
    cron: Option<&'a str>,
    every: Option<u64>,
    owner: &'a Owner,
}

/// The signed text: version 2 signs the enabled flag, the version, the
/// tombstone mark and `since`; version 1 (older records) did not.
fn signed_bytes(s: &Schedule, v: u32) -> Vec<u8> {
    let two = (v == 2).then_some(());
    let doc = Signed {
        v,
        name: &s.name,
        version: two.map(|()| s.version),
        deleted: two.map(|()| s.deleted),
        enabled: two.map(|()| s.enabled),
        since: two.map(|()| s.since),
        request: &s.request,
        cron: s.cron.as_deref(),
        every: s.every,
        owner: &s.owner,
    };
    let mut out = b"func-schedule\n".to_vec();
    out.extend(serde_json::to_vec(&doc).unwrap_or_default());
    out
}

/// Signs `s` with the overlord key below `root`.
pub fn seal(root: &common::paths::Root, s: &mut Schedule) -> Result<(), GateError> {
    let signer = overlord::seal::Signer::load(root)
        .map_err(|e| GateError::Engine(overlord::error::EngineError::Credentials(e.to_string())))?;
    s.seal = signer.sign(&signed_bytes(s, 2));
    match s.seal {
        Some(_) => Ok(()),
        None => Err(GateError::Engine(overlord::error::EngineError::Credentials(
            "cannot sign the schedule with the overlord key".into(),
        ))),
    }
}

/// Whether `s` may be used as it stands: signed (version 2) by an overlord
/// of our CA, not older than the version this overlord has seen, and
/// neither it nor what was seen a deletion. `Err`: why not.
pub fn trusted(root: &common::paths::Root, s: &Schedule) -> Result<(), String> {
    trusted_against(root, s, seen::get(root, &s.name))
}

/// [`trusted`], against `seen`, what this overlord saw of the schedule
/// (read once by a caller that needs it too).
pub fn trusted_against(root: &common::paths::Root, s: &Schedule, seen: seen::Entry) -> Result<(), String> {
    let seal = s
        .seal
        .as_ref()
        .ok_or(overlord::seal::SealError::Unsigned)
        .map_err(|e| e.to_string())?;
    if let Err(e) = overlord::seal::verify_bytes(root, seal, &signed_bytes(s, 2)) {
        return Err(match overlord::seal::verify_bytes(root, seal, &signed_bytes(s, 1)) {
            Ok(()) => "it was signed by an older func, without its enabled flag: enable it again (func schedule enable) to sign it anew".into(),
            Err(_) => e.to_string(),
        });
    }
    if s.deleted || (seen.deleted && s.version <= seen.version) {
        return Err(format!(
            "it was deleted (version {}): a saved record put back",
            seen.version.max(s.version)
        ));
    }
    if s.version < seen.version {
        return Err(format!(
            "its version {} is older than version {} seen here: a replaced record put back",
            s.version, seen.version
        ));
    }
    Ok(())
}

/// Whether `s`'s version-2 signature holds (a tombstone's, say), whatever
/// was seen here.
pub fn signed(root: &common::paths::Root, s: &Schedule) -> bool {
    s.seal
        .as_ref()
        .is_some_and(|seal| overlord::seal::verify_bytes(root, seal, &signed_bytes(s, 2)).is_ok())
}

/// Whether `s` was signed as version 1 (an older func) by an overlord of
/// our CA: such a record may be enabled again by an administrator, which
/// signs it anew.
pub fn signed_v1(root: &common::paths::Root, s: &Schedule) -> bool {
    s.seal
        .as_ref()
        .is_some_and(|seal| overlord::seal::verify_bytes(root, seal, &signed_bytes(s, 1)).is_ok())
}

impl Schedule {
    /// A new schedule of `owner`, made at `now`: `request` at the times
    /// `when` (the next run from now when `enabled`), not signed yet.
    pub fn new(
        name: String,
        request: serde_json::Value,
        when: &When,
        enabled: bool,
        owner: Owner,
        now: f64,
    ) -> Schedule {
        let (cron, every) = match when {
            When::Cron(_, line) => (Some(line.clone()), None),
            When::Every(secs) => (None, Some(*secs)),
        };
        Schedule {
            name,
            request,
            notify: Vec::new(),
            cron,
            every,
            enabled,
            owner,
            created: now,
            due: enabled.then(|| when.next_after(now)).flatten(),
            last_run: None,
            last_job: None,
            last_error: None,
            made_up: false,
            disabled_reason: None,
            runs: 0,
            claimed_by: None,
            version: 1,
            since: now,
            deleted: false,
            anchor: None,
            seal: None,
        }
    }

    /// Its times, as checked when it was made.
    pub fn when(&self) -> Result<When, GateError> {
        When::parse(self.cron.as_deref(), self.every)
    }

    /// Its request, read as every door's call request.
    pub fn call(&self) -> Result<overlord::gate::Call, GateError> {
        call_of(&self.request)
    }
}

/// The call a schedule's request makes, checked by the gate; it always runs
/// as a job (an async call, or a batch with its own driver), so each run
/// has a job id and its results are kept.
pub fn call_of(request: &serde_json::Value) -> Result<overlord::gate::Call, GateError> {
    let text = request.to_string();
    if text.len() > MAX_REQUEST {
        return Err(GateError::Invalid(format!(
            "request: at most {MAX_REQUEST} bytes of JSON"
        )));
    }
    let mut fields: CallFields = serde_json::from_value(request.clone())
        .map_err(|e| GateError::Invalid(format!("request: {}", common::paths::shorten(&e.to_string()))))?;
    fields.asynchronous = true;
    overlord::gate::Call::new(fields)
}

/// Schedules one owner may have: overlord.conf's `[api]
/// max_schedules_per_owner` (func-api reads it with its settings; the
/// command line here), [`DEFAULT_PER_OWNER`] when unset or unreadable.
pub fn per_owner(root: &common::paths::Root) -> usize {
    common::config::Ini::load(&root.overlord_conf())
        .ok()
        .and_then(|ini| {
            ini.str("api", "max_schedules_per_owner")
                .and_then(|v| v.trim().parse().ok())
        })
        .filter(|n: &usize| (1..=overlord::store::schedules::MAX_SCHEDULES).contains(n))
        .unwrap_or(DEFAULT_PER_OWNER)
}

/// A schedule's name: 1 to [`MAX_NAME`] letters, digits, `-`, `_`, `.`.
pub fn check_name(name: &str) -> Result<(), GateError> {
    if (1..=MAX_NAME).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && !name.starts_with('.')
    {
        Ok(())
    } else {
        Err(GateError::Invalid(format!(
            "a schedule name is 1 to {MAX_NAME} letters, digits, '-', '_', '.'"
        )))
    }
}

/// A due run taken: the schedule as it was, and whether the run makes up
/// one missed.
pub struct Claimed {
    pub schedule: Schedule,
    /// When it was due.
    pub due: f64,
    pub made_up: bool,
}

/// When `s` is next due, from its signed times and the latest anchor:
/// its own (`since`, the last run's) and `seen_anchor`, this overlord's
/// record of it. Never from the store's `due`, which only says when to look.
pub fn due_time(s: &Schedule, seen_anchor: f64) -> Option<f64> {
    let anchor = s.since.max(s.anchor.unwrap_or(0.0)).max(seen_anchor);
    match s.when().ok()? {
        When::Every(secs) => Some(anchor + secs as f64),
        w => w.next_after(anchor),
    }
}

/// Takes schedule `s`'s run if it is enabled and due at `now` (by
/// [`due_time`]): its period's anchor and next run are set after `now` (a
/// run missed while nothing ran is made up once, now), and the run is
/// marked as `holder`'s. `None`: not due (another func-api took it, or it
/// changed); the store's `due` is then set to the true next run.
pub fn claim(s: &mut Schedule, now: f64, holder: &str, seen_anchor: f64) -> Option<Claimed> {
    if !s.enabled || s.deleted {
        return None;
    }
    let due = due_time(s, seen_anchor)?;
    if due > now {
        s.due = Some(due);
        return None;
    }
    let before = s.clone();
    let anchor = match s.when() {
        // Keeps the cadence; after a gap, starts again from now.
        Ok(When::Every(secs)) if due + secs as f64 > now => due,
        Ok(_) => now,
        Err(_) => return None,
    };
    s.anchor = Some(anchor);
    let next = due_time(s, seen_anchor)?;
    s.due = Some(next);
    s.last_run = Some(now);
    s.runs += 1;
    s.made_up = now - due > MADE_UP_AFTER;
    s.claimed_by = Some(holder.to_string());
    Some(Claimed {
        made_up: s.made_up,
        schedule: before,
        due,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_cron_or_every_and_checked() {
        assert!(matches!(When::parse(None, Some(1)), Ok(When::Every(1))));
        assert!(When::parse(None, Some(0)).is_err());
        assert!(When::parse(Some("*/5 * * * *"), None).is_ok());
        assert!(When::parse(Some("0 3 * * *"), Some(5)).is_err());
        assert!(When::parse(None, None).is_err());
        for bad in ["* * * *", "0 0 0 * * *", "61 * * * *", "x y z a b", "0 0 30 2 *"] {
            assert!(When::parse(Some(bad), None).is_err(), "{bad}");
        }
        // Lines no minute, hour or day matches are refused before any
        // search (a search from them took ~10 s of CPU per request).
        for (never, field) in [
            (", * * * *", "minute"),
            ("* , * * *", "hour"),
            ("0 0 31 2 *", "day"),
        ] {
            match When::parse(Some(never), None) {
                Err(GateError::Invalid(why)) => {
                    assert!(why.contains(&format!("no {field} matches")), "{never}: {why}")
                }
                other => panic!("{never}: {:?}", other.map(|_| ())),
            }
        }
        assert!(When::parse(Some("L * * * *"), None).is_err());
        // Issue 47: "Component error: Number out of bounds" named no field.
        match When::parse(Some("61 * * * *"), None) {
            Err(GateError::Invalid(why)) => assert!(why.contains("the minute (0-59) field \"61\""), "{why}"),
            other => panic!("{:?}", other.map(|_| ())),
        }
        match When::parse(Some("0 3 * 13 *"), None) {
            Err(GateError::Invalid(why)) => assert!(why.contains("month (1-12)"), "{why}"),
            other => panic!("{:?}", other.map(|_| ())),
        }
        let w = When::parse(Some("*/5 * * * *"), None).unwrap();
        let next = w.next_after(1_700_000_000.0).unwrap();
        assert!(next > 1_700_000_000.0 && next <= 1_700_000_300.0);
        assert_eq!((next as i64) % 300, 0, "every fifth minute");
    }

    #[test]
    fn a_limited_owners_schedules_run_at_most_so_often() {
        let limited = Owner {
            user: "api:web".into(),
            token: Some(OwnerToken {
                name: "web".into(),
                check: String::new(),
                admin: false,
            }),
            person: None,
        };
        let person = Owner {
            user: "oidc:alice".into(),
            token: None,
            person: Some(OwnerPerson {
                groups: vec!["web".into()],
                admin: false,
            }),
        };
        assert!(person.limited());
        let admin = Owner {
            user: "cli:root".into(),
            token: None,
            person: None,
        };
        let every = |s| When::parse(None, Some(s)).unwrap();
        assert!(check_rate(&limited, &every(59), 60).is_err());
        assert!(check_rate(&limited, &every(60), 60).is_ok());
        assert!(check_rate(&admin, &every(1), 60).is_ok());
        let cron = When::parse(Some("* * * * *"), None).unwrap();
        assert!(check_rate(&limited, &cron, 120).is_err());
        assert!(check_rate(&limited, &cron, 60).is_ok());
    }

    fn every(secs: u64, due: f64) -> Schedule {
        let owner = Owner {
            user: "root".into(),
            token: None,
            person: None,
        };
        let request = serde_json::json!({"spec": "*", "module": "test", "method": "ping"});
        // Signed at `due - secs`: its first run is `due`.
        let s = Schedule::new(
            "s".into(),
            request,
            &When::Every(secs),
            true,
            owner,
            due - secs as f64,
        );
        assert_eq!(s.due, Some(due));
        s
    }

    #[test]
    fn a_run_is_claimed_once_and_a_gap_is_made_up_once() {
        let mut s = every(10, 100.0);
        assert!(claim(&mut s, 99.0, "a", 0.0).is_none(), "not due yet");
        let c = claim(&mut s, 100.5, "a", 0.0).unwrap();
        assert!(!c.made_up);
        assert_eq!(s.due, Some(110.0), "the cadence is kept");
        assert!(
            claim(&mut s, 100.6, "b", 0.0).is_none(),
            "taken: the next run is later"
        );
        // Nothing ran for an hour: one run now, the next one from now.
        let c = claim(&mut s, 3710.0, "b", 0.0).unwrap();
        assert!(c.made_up);
        assert_eq!(s.due, Some(3720.0));
        assert!(claim(&mut s, 3710.0, "a", 0.0).is_none());
        s.enabled = false;
        assert!(claim(&mut s, 5000.0, "a", 0.0).is_none(), "disabled");
    }

    /// Issue 46: a store writer set `due = now` (and rolled the last run
    /// back) on a weekly schedule, and func-api ran it on demand. The due
    /// time follows from the signed times and the anchors, never the store.
    #[test]
    fn the_stores_due_time_and_last_run_are_not_believed() {
        let mut s = every(7 * 86_400, 1_000_000.0);
        let c = claim(&mut s, 1_000_001.0, "a", 0.0).unwrap();
        assert_eq!(c.due, 1_000_000.0);
        let seen_anchor = s.anchor.unwrap();
        // The writer: due now, the anchor rolled back to the start.
        s.due = Some(0.0);
        s.anchor = None;
        assert!(
            claim(&mut s, 1_000_100.0, "a", seen_anchor).is_none(),
            "not due: a week from the last run"
        );
        assert_eq!(
            s.due,
            Some(1_000_000.0 + 7.0 * 86_400.0),
            "the store's due set right"
        );
    }
}
