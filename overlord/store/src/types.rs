//! What the overlord's job store holds, whatever keeps it: a job's
//! metadata, its hosts and their states, the changes a driver makes, the
//! store's errors, and the job id and clock every writer uses.

use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// Default retention of finished overlord jobs (overlord.conf `keep_jobs`).
pub const DEFAULT_KEEP_JOBS: f64 = 86_400.0;

/// One overlord job.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct JobMeta {
    pub id: String,
    pub spec: String,
    /// `module.method`.
    pub function: String,
    pub args: Vec<String>,
    /// Who started it (`cli:USER`, `api:NAME`: `common::principal`).
    #[serde(deserialize_with = "spelled_user")]
    pub user: String,
    pub started: f64,
    /// Set when every host is finished.
    pub ended: Option<f64>,
    /// Set when the driver has sent the call to every host.
    pub dispatched: bool,
    /// Number of hosts.
    pub hosts: usize,
    /// Per-host limit for connect + call (seconds).
    pub timeout_secs: f64,
    /// Worker processes the driver uses.
    pub forks: usize,
    /// The driver process (pid, start time), once it runs.
    #[serde(default)]
    pub driver: Option<(u32, u64)>,
    /// The overlord host the driver runs on (`FUNC_HOST` or the host
    /// name; `None` in records made before shared stores: this host).
    #[serde(default)]
    pub driver_host: Option<String>,
    /// A batch (its state is in the `batches` table; `batch recover`
    /// resumes it, so a dead driver does not end its hosts).
    #[serde(default)]
    pub batch: bool,
    /// Typed arguments (`--json-args`, as JSON text); when set they are
    /// sent instead of `args` (which then only shows them).
    #[serde(default)]
    pub typed_args: Option<String>,
    /// The caller's rights when the request was accepted (a func-api
    /// token's `SPEC=METHODS` rules); `None`: an overlord administrator.
    #[serde(default)]
    pub rights: Option<Vec<String>>,
    /// The overlord's signature of the request (DESIGN §9, `seal.rs`):
    /// drivers send nothing whose seal does not verify.
    #[serde(default)]
    pub seal: Option<Seal>,
    /// Hosts the delegation map puts behind a relay are called through it
    /// (`func --delegate`, DESIGN §17); signed with the request.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub delegate: bool,
    /// The schedule whose run this job is (func-api's scheduler).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<String>,
    /// The job this one re-runs (`jobs rerun`, `POST …/rerun`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rerun_of: Option<String>,
    /// The notification targets (`[notify.NAME]`) told of its end, each
    /// claimed once in a transaction, so that several func-api on one
    /// store tell each target once.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notified: Vec<String>,
}

impl JobMeta {
    /// A new job's record before the store gives it an id: `function`
    /// called with `args` (or typed `typed_args`, as JSON text) on `hosts`
    /// hosts matched by `spec`, by the invoking user, now.
    pub fn new_call(
        spec: &str,
        function: &str,
        args: Vec<String>,
        typed_args: Option<String>,
        hosts: usize,
        (timeout_secs, forks): (f64, usize),
        batch: bool,
    ) -> Self {
        JobMeta {
            id: String::new(),
            spec: spec.to_string(),
            function: function.to_string(),
            args: match &typed_args {
                Some(t) => vec![t.clone()],
                None => args,
            },
            typed_args,
            user: common::principal::cli_user(),
            started: now(),
            ended: None,
            dispatched: false,
            hosts,
            timeout_secs,
            forks,
            driver: None,
            driver_host: None,
            batch,
            rights: None,
            seal: None,
            delegate: false,
            schedule: None,
            rerun_of: None,
            notified: Vec::new(),
        }
    }

    /// The arguments as sent, for people and documents: the typed values
    /// (`--json-args`, a transmit or API request), else the words.
    pub fn args_json(&self) -> serde_json::Value {
        match self
            .typed_args
            .as_deref()
            .map(serde_json::from_str::<serde_json::Value>)
        {
            Some(Ok(typed @ serde_json::Value::Array(_))) => typed,
            _ => serde_json::json!(self.args),
        }
    }

    /// The call's parameters: the typed ones, else the words as strings.
    pub fn params(&self) -> Vec<common::Value> {
        match self
            .typed_args
            .as_deref()
            .and_then(|t| serde_json::from_str(t).ok())
        {
            Some(serde_json::Value::Array(items)) => {
                items.iter().map(common::xmlrpc::json::from_json).collect()
            }
            _ => self
                .args
                .iter()
                .map(|a| common::Value::String(a.clone()))
                .collect(),
        }
    }
}

/// A job request's signature and the certificate to check it with
/// (made and checked by `seal.rs`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Seal {
    /// The signer's certificate (DER, base64).
    pub cert: String,
    /// ECDSA P-256 SHA-256 signature (ASN.1, base64) of the signed bytes.
    pub sig: String,
}

/// Where one host stands.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub enum HostState {
    /// Not called yet.
    Pending,
    /// Its minion job runs (`minion_job` set).
    Dispatched,
    /// Result known (`result_xml` set).
    Finished,
}

/// One host of a job.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct HostEntry {
    pub state: HostState,
    pub minion_job: Option<String>,
    /// The encoded `<methodResponse>` of the host's result.
    pub result_xml: Option<String>,
}

impl HostEntry {
    /// Applies `change` (a finished host never changes again; an
    /// abandonment applies only to a host never dispatched); whether the
    /// entry changed.
    pub fn apply(&mut self, change: &HostUpdate) -> bool {
        if self.state == HostState::Finished {
            return false;
        }
        match change {
            HostUpdate::Dispatched { minion_job } => {
                self.state = HostState::Dispatched;
                self.minion_job = Some(minion_job.clone());
            }
            HostUpdate::Finished { result_xml } => {
                self.state = HostState::Finished;
                self.result_xml = Some(result_xml.clone());
            }
            HostUpdate::Abandoned { result_xml } if self.state == HostState::Pending => {
                self.state = HostState::Finished;
                self.result_xml = Some(result_xml.clone());
            }
            HostUpdate::Abandoned { .. } => return false,
        }
        true
    }

    pub fn pending() -> Self {
        Self {
            state: HostState::Pending,
            minion_job: None,
            result_xml: None,
        }
    }
}

/// A job with its hosts.
#[derive(Debug, Clone, PartialEq)]
pub struct JobRecord {
    pub meta: JobMeta,
    pub hosts: BTreeMap<String, HostEntry>,
}

impl JobRecord {
    /// Hosts dispatched and not finished, with their minion job ids.
    pub fn in_flight(&self) -> impl Iterator<Item = (&str, &str)> {
        self.hosts
            .iter()
            .filter(|(_, e)| e.state == HostState::Dispatched)
            .filter_map(|(host, e)| Some((host.as_str(), e.minion_job.as_deref()?)))
    }
}

/// A change to one host.
#[derive(Debug, Clone)]
pub enum HostUpdate {
    Dispatched {
        minion_job: String,
    },
    Finished {
        result_xml: String,
    },
    /// Finished with this error, but only if never dispatched (its driver died).
    Abandoned {
        result_xml: String,
    },
}

/// The last facts seen from a minion (DESIGN §16), with when.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FactsRecord {
    /// Epoch seconds of the last reading.
    pub seen: f64,
    /// `{tag: value}`, as `fact.items` answers (JSON).
    pub facts: serde_json::Map<String, serde_json::Value>,
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The store's server cannot be reached (PostgreSQL down): trying
    /// again later may work.
    #[error("{0}")]
    Unavailable(String),
    #[error("job store {path}: {message}")]
    Open { path: String, message: String },
    #[error("job store {path} stayed busy (another func process holds it) for {secs}s")]
    Busy { path: String, secs: u64 },
    /// PostgreSQL failed a statement or the session broke.
    #[error(transparent)]
    Postgres(pgconn::PgError),
    /// The local redb file failed.
    #[error("job store: {0}")]
    Redb(#[from] redb::Error),
    /// A record that does not read back (or cannot be written) as JSON.
    #[error("job store: bad record: {0}")]
    Record(#[from] serde_json::Error),
    #[error("job store: {path}: {source}")]
    Io {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The store overlord.conf names cannot be used (the reason is said
    /// when the configuration is read), or the operation needs another.
    #[error("job store: {0}")]
    Unusable(String),
    /// A job's unfinished hosts could not be asked (the overlord's own
    /// certificate, key or CA could not be loaded).
    #[error("cannot call minions: {0}")]
    Caller(String),
}

/// Seconds since the epoch, now.
pub fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// Func's overlord job id: `<spec>-<module>-<method>-<epoch float>`, with
/// `-` inside the parts turned into `_`.
pub fn job_id(spec: &str, function: &str, stamp_us: u64) -> String {
    let clean = |s: &str| s.replace('-', "_");
    let (module, method) = function.rsplit_once('.').unwrap_or((function, ""));
    format!(
        "{}-{}-{}-{}",
        clean(spec),
        clean(module),
        clean(method),
        stamp_us as f64 / 1e6
    )
}

/// A job's user as `common::principal` spells it (older records named the
/// command line's user bare).
fn spelled_user<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let recorded = String::deserialize(d)?;
    Ok(common::principal::job_user(&recorded))
}
