//! A warm `func` (DESIGN §14): a func-api serving the same root announces
//! itself there (`var/run/func-api.json`: its address, pid and start
//! time), and `func` hands it its calls now instead of calling the minions
//! itself. The call goes as a relay request (`relay::serve`) whose audience
//! is [`AUDIENCE`]: signed with the overlord key, verified by func-api
//! (DESIGN §9), which calls the hosts over its kept connections and streams
//! each host's end back. Answers are the same as calling directly.
//!
//! A job's driver hands its dispatch (`async.M.m` on every host, with the
//! job's signed request identity) the same way, so a job started while a
//! func-api serves the root costs its driver no TLS handshake.
//!
//! `func` calls the minions itself when no func-api answers: nothing
//! announced, its process gone, its address refusing the connection, or
//! its refusal (nothing ran). Once func-api has taken the request, a host
//! it did not answer for ends unreachable, never called a second time.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;

use common::paths::Root;

use super::client::{Handoff, RelayClient};
use super::map::RelayAddr;
use super::{Mode, Order};
use crate::reach::{Calling, Direct, Ends, Workers};
use crate::targets::Target;

pub use super::request::{is_local, AUDIENCE};

/// In a driver's environment: its job was started with `--direct` (or
/// set by hand): the driver calls the minions itself.
pub const DIRECT_ENV: &str = "FUNC_DIRECT";

static DIRECT: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// This process calls the minions itself (`func --direct`), and so do the
/// drivers it starts.
pub fn call_directly() {
    DIRECT.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Whether calls may be handed to the root's func-api (not `--direct`, nor
/// a driver of a job started so).
pub fn may_hand() -> bool {
    !DIRECT.load(std::sync::atomic::Ordering::Relaxed) && std::env::var_os(DIRECT_ENV).is_none()
}

/// Largest announcement read.
const MAX_ANNOUNCEMENT: u64 = 4096;

/// Where a func-api announces itself below `root`.
pub fn announcement(root: &Root) -> PathBuf {
    root.run_dir().join("func-api.json")
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Announced {
    address: String,
    pid: u32,
    start: u64,
}

/// The announcement of a func-api bound to `bound`; removed when dropped
/// (unless another func-api of the root has announced itself since).
pub struct Announcement(PathBuf);

impl Drop for Announcement {
    fn drop(&mut self) {
        let pid = std::process::id();
        let ours = std::fs::read(&self.0)
            .ok()
            .and_then(|text| serde_json::from_slice::<Announced>(&text).ok())
            .is_some_and(|a| a.pid == pid && Some(a.start) == common::process::start_time(pid));
        if ours {
            let _ = std::fs::remove_file(&self.0);
        }
    }
}

/// Announces this process (a func-api bound to `bound`) below `root`: a
/// wildcard address is reached on loopback.
pub fn announce(root: &Root, bound: SocketAddr) -> std::io::Result<Announcement> {
    let ip = match bound.ip() {
        std::net::IpAddr::V4(v4) if v4.is_unspecified() => std::net::Ipv4Addr::LOCALHOST.into(),
        std::net::IpAddr::V6(v6) if v6.is_unspecified() => std::net::Ipv6Addr::LOCALHOST.into(),
        ip => ip,
    };
    let pid = std::process::id();
    let doc = Announced {
        address: SocketAddr::new(ip, bound.port()).to_string(),
        pid,
        start: common::process::start_time(pid).unwrap_or(0),
    };
    let path = announcement(root);
    common::private::state_dir(&root.run_dir(), common::private::PUBLIC_DIR_MODE)?;
    let text = serde_json::to_vec(&doc).map_err(std::io::Error::other)?;
    common::private::write(&path, &text, false)?;
    Ok(Announcement(path))
}

/// The func-api announced below `root`, if its process still runs.
pub fn announced(root: &Root) -> Option<RelayAddr> {
    use std::io::Read as _;
    let file = common::private::options()
        .read(true)
        .open(announcement(root))
        .ok()?;
    let mut text = Vec::new();
    file.take(MAX_ANNOUNCEMENT).read_to_end(&mut text).ok()?;
    let doc: Announced = serde_json::from_slice(&text).ok()?;
    common::process::alive(doc.pid, doc.start).then(|| RelayAddr {
        name: AUDIENCE.to_string(),
        addr: doc.address,
    })
}

/// How often a front end waiting on the store looks whether the func-api
/// announced below the root still runs.
const ANNOUNCE_EVERY: std::time::Duration = std::time::Duration::from_millis(250);

/// What [`wait_change`] saw.
pub enum Waited {
    /// The job store changed: its generation now.
    Changed(u64),
    /// The func-api announced below the root is gone.
    Gone,
    /// Nothing, until the deadline (or Ctrl-C).
    Quiet,
}

/// Waits while the root's func-api records what its watcher follows:
/// until the job store's generation differs from `seen`, that func-api is
/// gone, `until` has passed or Ctrl-C; the store is looked at every
/// `pause`, the announcement every [`ANNOUNCE_EVERY`]. For the front ends
/// of a warm func (`status.rs`, `batch/warm.rs`).
pub fn wait_change(
    root: &Root,
    store: &dyn crate::store::JobStore,
    seen: Option<u64>,
    until: Option<std::time::Instant>,
    pause: std::time::Duration,
) -> Result<Waited, crate::store::StoreError> {
    use std::time::Instant;
    let mut looked: Option<Instant> = None;
    loop {
        if looked.is_none_or(|t| t.elapsed() >= ANNOUNCE_EVERY) {
            if announced(root).is_none() {
                return Ok(Waited::Gone);
            }
            looked = Some(Instant::now());
        }
        let generation = store.generation()?;
        if seen != Some(generation) {
            return Ok(Waited::Changed(generation));
        }
        let left = until.map(|u| u.saturating_duration_since(Instant::now()));
        if left.is_some_and(|l| l.is_zero()) || crate::interrupt::requested() {
            return Ok(Waited::Quiet);
        }
        std::thread::sleep(left.map_or(pause, |l| l.min(pause)));
    }
}

/// The minion job a start names when the minion refused it as already run
/// ("… already ran here as job ID: …"), if that is a minion job id.
fn started_before(value: &common::Value) -> Option<String> {
    if common::values::error_kind(value) != Some(common::rpc::client::ALREADY_RAN) {
        return None;
    }
    let message = common::values::error_message(value)?;
    let job = message.split_once(" as job ")?.1.split(':').next()?;
    common::rpc::client::is_minion_job_id(job).then(|| job.to_string())
}

/// Calls handed to the root's func-api; `fallback` calls them when it does
/// not take them.
pub struct Handed {
    pub client: RelayClient,
    pub fallback: Workers,
    pub root: Root,
    /// For the request: the SPEC, who asks (and their signed rights:
    /// `None`, an administrator), each host's timeout, and the signed job
    /// request the calls belong to, if any (each minion runs it once).
    pub spec: String,
    pub user: String,
    pub rights: Option<Vec<String>>,
    pub timeout: f64,
    pub job_request: Option<String>,
    /// What the request is called in func-api's audit trail (default:
    /// `SPEC-FUNCTION-now`): a job's id for its dispatch.
    pub id: Option<String>,
    /// `-v`: say which way the call went.
    pub verbose: bool,
}

impl Handed {
    /// Hands to the func-api announced below `root`, if one is (and this
    /// process may sign: it holds the overlord key).
    pub fn to_announced(
        root: &Root,
        fallback: Workers,
        spec: &str,
        timeout: f64,
        verbose: bool,
    ) -> Option<Self> {
        if !may_hand() {
            return None;
        }
        let addr = announced(root)?;
        let mut client = RelayClient::new(root, addr).ok()?;
        client.timeout = client
            .timeout
            .max(std::time::Duration::from_secs_f64(timeout.max(1.0)));
        Some(Handed {
            client,
            fallback,
            root: root.clone(),
            spec: spec.to_string(),
            user: crate::principal::cli_user(),
            rights: None,
            timeout,
            job_request: None,
            id: None,
            verbose,
        })
    }

    /// For a job's driver (`jobs/driver.rs`, `batch/warm.rs`): its starts
    /// (`async.M.m`) handed for the job's user and rights, with its signed
    /// request identity (each minion runs it at most once), named by its
    /// id; the worker fleet if func-api does not take them.
    pub fn for_job(
        root: &Root,
        meta: &crate::store::JobMeta,
        calling: &crate::settings::Calling,
    ) -> Option<Self> {
        // Without its signed identity a job's start is not taken (and a
        // minion could not tell a second one): called directly.
        let request = Some(crate::seal::request_id(meta)?);
        let workers = Workers {
            credentials: calling.credentials.clone(),
            how: crate::dispatch::Dispatch {
                forks: meta.forks.max(1),
                timeout_secs: meta.timeout_secs,
                concurrency: crate::settings::WORKER_CONCURRENCY,
                max_response: calling.max_response,
                handoff: false,
                verbose: false,
            },
            request: request.clone(),
        };
        let mut handed = Self::to_announced(root, workers, &meta.spec, meta.timeout_secs, false)?;
        handed.user.clone_from(&meta.user);
        handed.rights.clone_from(&meta.rights);
        handed.job_request = request;
        handed.id = Some(meta.id.clone());
        Some(handed)
    }

    /// `targets` at their addresses, for calling them here after all (a
    /// warm func leaves them unread: `Plan::call_targets`).
    fn addressed(&self, targets: Vec<Target>) -> Vec<Target> {
        crate::targets::read_addresses(&self.root, targets, |_| false)
    }

    fn say(&self, line: &str) {
        if self.verbose {
            crate::errln!("func: {line}");
        }
    }
}

impl Direct for Handed {
    fn call<'a>(
        &'a self,
        targets: Vec<Target>,
        function: &'a str,
        params: &'a [common::Value],
        ends: Ends,
    ) -> Calling<'a> {
        Box::pin(async move {
            if targets.is_empty() {
                return;
            }
            let hosts: Vec<String> = targets.iter().map(|t| t.name.clone()).collect();
            let order = Order {
                id: self
                    .id
                    .clone()
                    .unwrap_or_else(|| format!("{}-{function}-now", self.spec)),
                spec: self.spec.clone(),
                function: function.to_string(),
                params: params.to_vec(),
                user: self.user.clone(),
                rights: self.rights.clone(),
                timeout: self.timeout,
                forward: None,
                job_request: self.job_request.clone(),
            };
            let audience = BTreeMap::from([(AUDIENCE.to_string(), hosts.clone())]);
            let sealed = crate::seal::Signer::load(&self.root)
                .map_err(|e| super::RelayError::Config(e.to_string()))
                .and_then(|signer| order.sealed_to(&signer, audience, hosts.clone(), Mode::Now));
            let sealed = match sealed {
                Ok(sealed) => sealed,
                Err(e) => {
                    self.say(&format!(
                        "not handed to func-api ({e}); calling the minions directly"
                    ));
                    return self
                        .fallback
                        .call(self.addressed(targets), function, params, ends)
                        .await;
                }
            };
            let mut answered = std::collections::HashSet::new();
            let handed = self
                .client
                .hand(&sealed, &hosts, |host, value| {
                    answered.insert(host.clone());
                    let _ = ends.send((host, value));
                })
                .await;
            let why = match handed {
                Ok(()) => super::RelayError::Unreachable {
                    relay: "func-api".into(),
                    detail: "it ended without answering for this host".into(),
                },
                Err(Handoff::NotTaken(e)) => {
                    self.say(&format!(
                        "func-api did not take the call ({e}); calling the minions directly"
                    ));
                    return self
                        .fallback
                        .call(self.addressed(targets), function, params, ends)
                        .await;
                }
                Err(Handoff::Broken(e)) => e,
            };
            // A job's starts carry its signed request identity: a minion
            // that started it refuses it again (already ran here), so the
            // hosts not answered are started directly, each at most once.
            // One that refuses had been started by func-api before it broke
            // off: its answer is the job it names, followed as if func-api
            // had answered it (its result is collected, not a failure).
            if self.job_request.is_some() {
                self.say(&format!(
                    "func-api broke off ({why}); starting the hosts it did not answer directly"
                ));
                let rest = targets
                    .into_iter()
                    .filter(|t| !answered.contains(&t.name))
                    .collect();
                let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
                let forward = async {
                    while let Some((host, value)) = rx.recv().await {
                        let value = started_before(&value).map_or(value, common::Value::String);
                        let _ = ends.send((host, value));
                    }
                };
                let calling = self.fallback.call(self.addressed(rest), function, params, tx);
                tokio::join!(calling, forward);
                return;
            }
            // Taken: a host not answered is unreachable, never called twice.
            let value = super::unreachable(&why);
            for host in hosts.into_iter().filter(|h| !answered.contains(h)) {
                let _ = ends.send((host, value.clone()));
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::started_before;
    use common::xmlrpc::remote_error;

    #[test]
    fn a_start_refused_as_already_run_names_its_job_and_nothing_else_does() {
        let refused = |kind: &str, job: &str| {
            remote_error(
                kind,
                &format!("this signed request already ran here as job {job}: not run again"),
                "",
            )
        };
        let kind = common::rpc::client::ALREADY_RAN;
        assert_eq!(
            started_before(&refused(kind, "1795850104.571375-minion")).as_deref(),
            Some("1795850104.571375-minion")
        );
        // Another kind of error, or something not a minion job id, is left as it is.
        assert_eq!(started_before(&refused("func.minion.Other", "17-minion")), None);
        for bad in ["../x-minion", "relay:r1:17", "17", "1.2.3-minion", ""] {
            assert_eq!(started_before(&refused(kind, bad)), None, "{bad:?}");
        }
        assert_eq!(started_before(&common::Value::String("17-minion".into())), None);
    }
}
