//! Calls minions from this process with one kept-alive connection per host
//! across rounds — how their part of a job stands (`jobs.job_status`), or a
//! per-host call such as `jobs.signal_job` — so `--wait` and polling `func`
//! reuse connections instead of a TLS handshake per host per round.
//!
//! It can also *watch* hosts: a background task per host long-polls
//! `jobs.wait_job` (which answers the moment the job ends), so a batch
//! driver frees a slot within a round trip of the end instead of a polling
//! interval. A minion without `wait_job` is polled with `jobs.job_status`.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use common::rpc::client::MinionClient;
use common::Value;
use tokio::sync::{mpsc, Semaphore};

use super::follow::{Follow, Step};
use crate::caller::{Link, LiveLink};
use crate::settings::Calling;
use crate::targets::Target;

/// Hosts asked at once.
const IN_FLIGHT: usize = 64;

/// Hosts asked in one `jobs.wait_job` round, and connections kept between
/// rounds: each costs about 20 KiB, and at 10,000 hosts keeping them all
/// took `func job_status --wait` to 190 MiB. See [`super::window`].
const WAIT_IN_FLIGHT: usize = 1024;

/// Connections opened ahead of their first call ([`Poller::preconnect`]):
/// at most this many at a time, and never more than a quarter of the
/// open-files limit.
const AHEAD: usize = 256;

/// How long [`Poller::ended`] waits for a further end after one.
const LINGER: Duration = Duration::from_millis(2);

/// Polling state: a runtime and the open connections.
pub struct Poller {
    runtime: tokio::runtime::Runtime,
    live: LiveLink,
    clients: HashMap<String, MinionClient>,
    limit: Duration,
    watches: HashMap<String, tokio::task::AbortHandle>,
    ends_tx: mpsc::UnboundedSender<(String, Value)>,
    ends_rx: mpsc::UnboundedReceiver<(String, Value)>,
    /// The last host let into a `wait_job` round without a kept connection.
    rotation: Option<String>,
    /// Where relays are configured: hosts whose job is a relay's are
    /// asked through it (`super::relayed`).
    root: Option<common::paths::Root>,
    /// A job with `--delegate`: its starts go through relays.
    delegation: Option<super::relayed::Delegation>,
    /// The signed request the calls belong to (its identity: each minion
    /// runs it at most once).
    request: Option<String>,
    /// Connections being opened ahead ([`Self::preconnect`]): the hosts,
    /// those tried already (each once), and where each arrives.
    opening: std::collections::HashSet<String>,
    tried: std::collections::HashSet<String>,
    ahead_tx: mpsc::UnboundedSender<Ahead>,
    ahead_rx: mpsc::UnboundedReceiver<Ahead>,
    /// How many connections may be opened ahead.
    ahead: usize,
    /// Counts the TLS setups taken up (a changed CRL): a connection opened
    /// ahead with an older one is not kept.
    epoch: u64,
}

/// A connection opened ahead: the host, the connection (`None`: it could
/// not be opened), and the TLS setup's epoch it was opened with.
type Ahead = (String, Option<MinionClient>, u64);

impl Poller {
    pub fn new(calling: Calling, limit: Duration) -> Result<Self, crate::error::EngineError> {
        use crate::error::EngineError;
        let live = LiveLink::new(calling).map_err(|e| EngineError::Credentials(e.to_string()))?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|source| EngineError::Spawn {
                what: "the poller's runtime",
                source,
            })?;
        let (ends_tx, ends_rx) = mpsc::unbounded_channel();
        let (ahead_tx, ahead_rx) = mpsc::unbounded_channel();
        let nofile = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)
            .map_or(1024, |(soft, _)| soft);
        Ok(Self {
            runtime,
            live,
            clients: HashMap::new(),
            limit,
            watches: HashMap::new(),
            ends_tx,
            ends_rx,
            rotation: None,
            root: None,
            delegation: None,
            request: None,
            opening: Default::default(),
            tried: Default::default(),
            ahead_tx,
            ahead_rx,
            ahead: AHEAD.min(usize::try_from(nofile / 4).unwrap_or(AHEAD)),
            epoch: 0,
        })
    }

    /// Calls from now on belong to signed request `request` (its identity).
    pub fn set_request(&mut self, request: Option<String>) {
        self.request = request;
    }

    /// Hosts whose job is a relay's are followed through the relays of
    /// `root`'s overlord.conf; with `delegation`, starts (`async.M.m`) of
    /// hosts behind a relay go through it.
    pub fn relaying(
        mut self,
        root: common::paths::Root,
        delegation: Option<super::relayed::Delegation>,
    ) -> Self {
        self.root = Some(root);
        self.delegation = delegation;
        self
    }

    /// Opens connections to `hosts` of `root` (the next a batch will start)
    /// in the background, while this poller waits for ends, so starting
    /// them costs no TLS handshake then: a batch's next wave starts the
    /// moment slots free. At most [`AHEAD`] at a time; hosts behind a relay
    /// and hosts connected already are left out; a host is tried once. A
    /// connection that went stale meanwhile is replaced when used
    /// (`caller::call_once`).
    pub fn preconnect<'h>(
        &mut self,
        root: &common::paths::Root,
        hosts: impl IntoIterator<Item = &'h String>,
    ) {
        self.take_ahead();
        let tls = self.link();
        let _guard = self.runtime.enter();
        for host in hosts {
            if self.opening.len() >= self.ahead || self.clients.len() + self.opening.len() >= WAIT_IN_FLIGHT {
                break;
            }
            let relayed = self
                .delegation
                .as_ref()
                .is_some_and(|d| d.routes.relay_of(host).is_some());
            if relayed || self.clients.contains_key(host) || !self.tried.insert(host.clone()) {
                continue;
            }
            self.opening.insert(host.clone());
            let target = Target::enrolled(root, host);
            let (tls, tx, limit, epoch) = (Arc::clone(&tls), self.ahead_tx.clone(), self.limit, self.epoch);
            tokio::spawn(async move {
                let client = crate::caller::connect(&target, tls, limit).await.ok();
                let _ = tx.send((target.name, client, epoch));
            });
        }
    }

    /// Takes the connections opened ahead that have arrived.
    fn take_ahead(&mut self) {
        while let Ok((host, client, epoch)) = self.ahead_rx.try_recv() {
            self.opening.remove(&host);
            let current = epoch == self.epoch;
            if let Some(c) = client.filter(|_| current && self.clients.len() < WAIT_IN_FLIGHT) {
                self.clients.insert(host, c);
            }
        }
    }

    /// Watches `target`'s minion job `job` until it ends; the end (its
    /// final result) comes out of [`Self::ended`]. Takes the host's kept
    /// connection.
    pub fn watch(&mut self, target: Target, job: String) {
        if let (Some(root), Some(_)) = (&self.root, crate::relay::parse_job_ref(&job)) {
            let (root, tx, name) = (root.clone(), self.ends_tx.clone(), target.name.clone());
            let _guard = self.runtime.enter();
            let task = tokio::spawn(super::relayed::watch(root, name.clone(), job, tx));
            if let Some(old) = self.watches.insert(name, task.abort_handle()) {
                old.abort();
            }
            return;
        }
        let tls = self.link();
        let client = self.clients.remove(&target.name);
        let (limit, tx) = (self.limit, self.ends_tx.clone());
        let name = target.name.clone();
        let _guard = self.runtime.enter();
        let task = tokio::spawn(watch_one(client, target, job, tls, limit, tx));
        if let Some(old) = self.watches.insert(name, task.abort_handle()) {
            old.abort();
        }
    }

    /// The TLS setup to connect with (a driver may run for hours: a
    /// changed CRL is taken up, and the kept connections are closed).
    fn link(&mut self) -> Arc<Link> {
        let (link, reloaded) = self.live.current();
        if reloaded {
            self.clients.clear();
            self.epoch += 1;
        }
        link
    }

    /// Stops watching `host` (it ended some other way).
    pub fn unwatch(&mut self, host: &str) {
        if let Some(task) = self.watches.remove(host) {
            task.abort();
        }
    }

    /// Watched hosts whose job ended, with their results: waits up to
    /// `wait` for the first (the watches progress meanwhile), then takes
    /// the ends that follow within [`LINGER`] of each other, so hosts
    /// ending together are handled (and their slots refilled) together.
    pub fn ended(&mut self, wait: Duration) -> Vec<(String, Value)> {
        let rx = &mut self.ends_rx;
        let ends = self.runtime.block_on(async {
            let mut ends = Vec::new();
            let mut patience = wait;
            while let Ok(Some(end)) = tokio::time::timeout(patience, rx.recv()).await {
                ends.push(end);
                patience = LINGER;
            }
            ends
        });
        for (host, _) in &ends {
            self.watches.remove(host);
        }
        ends
    }

    /// Asks each `(target, minion job id)` once; answers in any order. With
    /// `wait`, each host answers when its job ends or after `wait`
    /// (`jobs.wait_job`; a minion without it is asked `jobs.job_status`).
    /// With `wait`, at most [`WAIT_IN_FLIGHT`] hosts are asked per call
    /// (see [`super::window`]); the others are not in the answers.
    pub fn poll(&mut self, asks: Vec<(Target, String)>, wait: Option<Duration>) -> Vec<(String, Answer)> {
        // Hosts behind relays: one exchange per relay job, outside the window.
        let (relayed, asks): (Vec<_>, Vec<_>) = asks
            .into_iter()
            .partition(|(_, job)| self.root.is_some() && crate::relay::parse_job_ref(job).is_some());
        let mut answers = match relayed.is_empty() {
            true => Vec::new(),
            false => self.poll_relayed(relayed, wait),
        };
        if asks.is_empty() {
            return answers;
        }
        let asks = match wait {
            Some(_) => {
                let (chosen, next) = super::window::select(
                    asks,
                    &self.clients,
                    self.rotation.as_deref(),
                    WAIT_IN_FLIGHT,
                    |t| t.name.as_str(),
                );
                self.rotation = next;
                chosen
            }
            None => asks,
        };
        let targets: HashMap<String, Target> =
            asks.iter().map(|(t, _)| (t.name.clone(), t.clone())).collect();
        let ids: HashMap<String, String> = asks
            .iter()
            .map(|(t, job)| (t.name.clone(), job.clone()))
            .collect();
        let calls = asks
            .into_iter()
            .map(|(t, job)| match wait {
                Some(w) => {
                    let params = vec![Value::String(job), Value::Double(w.as_secs_f64())];
                    (t, "jobs.wait_job".to_string(), params)
                }
                None => (t, "jobs.job_status".to_string(), vec![Value::String(job)]),
            })
            .collect();
        let mut again = Vec::new();
        for (host, reply) in self.call_each_within(calls, wait.unwrap_or_default()) {
            let status_pair = matches!(&reply, Reply::Value(Value::Array(a)) if a.len() == 2);
            if wait.is_some() && !status_pair && !matches!(reply, Reply::Unreachable(_)) {
                if let (Some(t), Some(job)) = (targets.get(&host), ids.get(&host)) {
                    again.push((t.clone(), job.clone()));
                    continue;
                }
            }
            let answer = match reply {
                Reply::Value(v) => interpret(&host, ids.get(&host).map_or("", String::as_str), v),
                // A fault will not go away by asking again: it is the host's result.
                Reply::Fault(err) => Answer::Finished(err),
                Reply::Unreachable(why) => Answer::Unreachable(why),
            };
            answers.push((host, answer));
        }
        if !again.is_empty() {
            answers.extend(self.poll(again, None));
        }
        // A finished host is not asked again: its connection goes now.
        for (host, answer) in &answers {
            if matches!(answer, Answer::Finished(_)) {
                self.clients.remove(host);
            }
        }
        answers
    }

    /// Hosts behind relays: one exchange per relay job, outside the window.
    fn poll_relayed(
        &mut self,
        relayed: Vec<(Target, String)>,
        wait: Option<Duration>,
    ) -> Vec<(String, Answer)> {
        let mut answers = Vec::new();
        let ids: HashMap<String, String> = relayed.iter().map(|(t, j)| (t.name.clone(), j.clone())).collect();
        let calls = relayed
            .into_iter()
            .map(|(t, job)| {
                let secs = wait.unwrap_or_default().as_secs_f64();
                (
                    t,
                    "jobs.wait_job".to_string(),
                    vec![Value::String(job), Value::Double(secs)],
                )
            })
            .collect();
        for (host, reply) in self.call_each(calls) {
            let answer = match reply {
                Reply::Value(v) => interpret(&host, ids.get(&host).map_or("", String::as_str), v),
                Reply::Fault(err) => Answer::Finished(err),
                Reply::Unreachable(why) => Answer::Unreachable(why),
            };
            answers.push((host, answer));
        }
        answers
    }

    /// Makes one call per `(target, method, params)`, up to 64 at once, over
    /// the kept connections; replies in any order.
    pub fn call_each(&mut self, calls: Vec<(Target, String, Vec<Value>)>) -> Vec<(String, Reply)> {
        self.call_each_within(calls, Duration::ZERO)
    }

    /// [`Self::call_each`] for calls that may take `extra` longer than the
    /// usual limit (they wait on the minion), up to [`WAIT_IN_FLIGHT`] at once.
    /// At most [`WAIT_IN_FLIGHT`] connections are kept afterwards.
    fn call_each_within(
        &mut self,
        calls: Vec<(Target, String, Vec<Value>)>,
        extra: Duration,
    ) -> Vec<(String, Reply)> {
        self.take_ahead();
        let mut replies = Vec::new();
        let calls = match &self.root {
            Some(root) => {
                let delegation = self.delegation.as_ref();
                let (relayed, direct): (Vec<_>, Vec<_>) = calls
                    .into_iter()
                    .partition(|c| super::relayed::is_relayed(c, delegation));
                if !relayed.is_empty() {
                    replies = self
                        .runtime
                        .block_on(super::relayed::answer(root, delegation, relayed, None));
                }
                direct
            }
            None => calls,
        };
        let slots = Arc::new(Semaphore::new(if extra.is_zero() {
            IN_FLIGHT
        } else {
            calls.len().clamp(1, WAIT_IN_FLIGHT)
        }));
        let tls = self.link();
        let mut tasks = tokio::task::JoinSet::new();
        let _guard = self.runtime.enter();
        for (target, method, params) in calls {
            let client = self.clients.remove(&target.name);
            let (tls, slots, limit) = (Arc::clone(&tls), Arc::clone(&slots), self.limit);
            let request = self.request.clone();
            tasks.spawn(async move {
                let _slot = slots.acquire_owned().await;
                let asked = tokio::time::timeout(
                    limit + extra,
                    ask(client, &target, &method, params, tls, limit, request),
                )
                .await;
                let (reply, client) = asked.unwrap_or_else(|_| {
                    (
                        Reply::Unreachable(format!("no answer from {} within {limit:?}", target.addr)),
                        None,
                    )
                });
                (target.name, reply, client)
            });
        }
        self.runtime.block_on(async {
            while let Some(joined) = tasks.join_next().await {
                if let Ok((host, reply, client)) = joined {
                    // Kept for the next round, up to the window.
                    if let Some(c) = client.filter(|_| self.clients.len() < WAIT_IN_FLIGHT) {
                        self.clients.insert(host.clone(), c);
                    }
                    replies.push((host, reply));
                }
            }
        });
        replies
    }
}

pub use super::follow::{interpret, Answer, Reply};

/// One host: reuse or open a connection, call, read the reply
/// (`crate::caller::call_once`, as every caller does).
async fn ask(
    client: Option<MinionClient>,
    target: &Target,
    method: &str,
    params: Vec<Value>,
    tls: Arc<Link>,
    limit: Duration,
    request: Option<String>,
) -> (Reply, Option<MinionClient>) {
    let who = crate::caller::OnBehalf {
        user: None,
        request: request.as_deref(),
    };
    let done = crate::caller::call_once(client, target, method, params, tls, limit, who).await;
    (done.reply, done.client)
}

/// One watch: the job followed on its host (`super::follow`) until it
/// ends, over a kept connection; the caller's deadlines decide when to
/// give up on a silent host.
async fn watch_one(
    mut client: Option<MinionClient>,
    target: Target,
    job: String,
    tls: Arc<Link>,
    limit: Duration,
    ends: mpsc::UnboundedSender<(String, Value)>,
) {
    let mut follow = Follow::new(&job);
    loop {
        let (method, params, patience) = follow.ask(limit);
        let asked_at = std::time::Instant::now();
        let asked = tokio::time::timeout(
            patience,
            ask(
                client.take(),
                &target,
                method,
                params,
                Arc::clone(&tls),
                limit,
                None,
            ),
        );
        let (reply, kept) = asked
            .await
            .unwrap_or_else(|_| (Reply::Unreachable(format!("no answer within {patience:?}")), None));
        client = kept;
        match follow.step(&target.name, reply, asked_at.elapsed()) {
            Step::Ended(result) => {
                let _ = ends.send((target.name, result));
                return;
            }
            Step::Again(Some(pause)) => tokio::time::sleep(pause).await,
            Step::Again(None) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minion_answers() {
        let arr = |a: Value, b: Value| Value::Array(vec![a, b]);
        assert_eq!(
            interpret("m", "j", arr(Value::Integer(0), Value::Integer(-1))),
            Answer::Running
        );
        assert_eq!(
            interpret("m", "j", arr(Value::Integer(1), Value::Double(2.5))),
            Answer::Finished(Value::Double(2.5))
        );
        for lost_or_bad in [
            arr(Value::Integer(2), Value::Integer(0)),
            arr(Value::Integer(7), Value::Integer(0)),
            Value::String("what".into()),
            Value::Array(vec![]),
        ] {
            let Answer::Finished(v) = interpret("m", "j", lost_or_bad) else {
                panic!("final")
            };
            assert!(common::xmlrpc::is_remote_error(&v));
        }
    }
}
