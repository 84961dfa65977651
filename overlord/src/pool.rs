//! Warm connections to minions for a front end that lives long (func-api):
//! a call takes a kept connection to its host if one is open, else opens
//! one, and gives it back afterwards, so a request to many hosts costs no
//! TLS handshake once the connections are warm.
//!
//! Bounds: at most [`PER_HOST`] idle connections per host and
//! [`MAX_IDLE`] in all (`[api] max_idle_connections`; more are closed); an idle connection older than
//! [`IDLE_FOR`] is closed before the minion's own idle deadline (30 s by
//! default) would end it under us; one the minion closed is dropped, never
//! used. The CRL is checked as `func` checks it: the TLS configuration is
//! rebuilt from the credentials (CA, CRL, the overlord's certificate) when
//! the CRL file changes, and every kept connection (verified against the
//! old list) is closed then.
//!
//! [`Pool::wait_end`] follows a minion job to its end (`jobs::follow`, as
//! every caller does), over the same connections, for watchers of async jobs.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::rpc::client::MinionClient;
use common::xmlrpc::remote_error;
use common::Value;

use crate::caller::{Link, LinkError, LiveLink};
use crate::jobs::follow::{Follow, Reply, Step};
use crate::settings::Calling;
use crate::targets::Target;

/// Idle connections kept per host.
pub const PER_HOST: usize = 4;
/// Idle connections kept in all.
pub const MAX_IDLE: usize = 8192;
/// An idle connection older than this is closed.
pub const IDLE_FOR: Duration = Duration::from_secs(20);
/// Hosts one request calls at once.
pub const CONCURRENCY: usize = 256;

struct Kept {
    client: MinionClient,
    addr: String,
    since: Instant,
}

/// The idle connections, and how many (counted, not summed at each call:
/// a relay keeps tens of thousands).
#[derive(Default)]
struct Idle {
    by_host: HashMap<String, Vec<Kept>>,
    count: usize,
    /// When the full list was last pruned (at most once a second: a full
    /// pool gets connections given back for every host past it).
    pruned: Option<Instant>,
}

impl Idle {
    /// Drops the connections idle longer than `idle_for` or closed; recounts.
    fn prune(&mut self, idle_for: Duration) {
        if self.pruned.is_some_and(|t| t.elapsed() < Duration::from_secs(1)) {
            return;
        }
        self.pruned = Some(Instant::now());
        self.by_host.retain(|_, kept| {
            kept.retain_mut(|k| k.since.elapsed() < idle_for && !k.client.is_closed());
            !kept.is_empty()
        });
        self.count = self.by_host.values().map(Vec::len).sum();
    }
}

/// Warm connections to minions (see the module doc).
pub struct Pool {
    live: LiveLink,
    idle: Mutex<Idle>,
    /// Idle connections kept in all.
    max_idle: usize,
    /// How long an idle connection is kept.
    idle_for: Duration,
    /// When each host last answered a call (epoch seconds).
    seen: Mutex<HashMap<String, f64>>,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool").finish_non_exhaustive()
    }
}

impl Pool {
    pub fn new(calling: Calling) -> Result<Self, LinkError> {
        Ok(Self {
            live: LiveLink::new(calling)?,
            idle: Mutex::new(Idle::default()),
            max_idle: MAX_IDLE,
            idle_for: IDLE_FOR,
            seen: Mutex::new(HashMap::new()),
        })
    }

    /// Keeps at most `n` idle connections in all (a relay keeps one per minion of its segment).
    pub fn with_max_idle(mut self, n: usize) -> Self {
        self.max_idle = n.max(1);
        self
    }

    /// Keeps an idle connection at most `d` (below the minions' own idle
    /// deadline, so none is used as the minion closes it).
    pub fn with_idle_for(mut self, d: Duration) -> Self {
        self.idle_for = d;
        self
    }

    /// The TLS setup; the kept connections are closed when it was rebuilt
    /// for a changed CRL.
    fn link(&self) -> Arc<Link> {
        let (link, reloaded) = self.live.current();
        if reloaded {
            *self.idle.lock().unwrap_or_else(|p| p.into_inner()) = Idle::default();
        }
        link
    }

    /// A kept connection to `target`, and the address it was kept under
    /// (given back with it: see [`Self::give_back`]).
    fn take(&self, target: &Target) -> Option<(MinionClient, String)> {
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        let idle = &mut *idle;
        let kept = idle.by_host.get_mut(&target.name)?;
        let mut found = None;
        while let Some(mut k) = kept.pop() {
            idle.count -= 1;
            if k.addr == target.addr && !k.client.is_closed() && k.since.elapsed() < self.idle_for {
                found = Some((k.client, k.addr));
                break;
            }
        }
        // An emptied host's entry stays (its connection is given back
        // after the call): re-made at every call, the entries of a relay's
        // whole segment would land among the call's short-lived buffers and
        // keep their pages from going back. Pruning drops the empty ones.
        found
    }

    /// Keeps `client` for `target`, under the address string it was taken
    /// with if any: what a kept connection holds is allocated once, not
    /// re-made at every call among the call's short-lived buffers (where it
    /// would keep their pages from going back to the system).
    fn give_back(&self, target: &Target, mut client: MinionClient, addr: Option<String>) {
        if client.is_closed() {
            return;
        }
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        if idle.count >= self.max_idle {
            idle.prune(self.idle_for);
            if idle.count >= self.max_idle {
                return;
            }
        }
        let idle = &mut *idle;
        if !idle.by_host.contains_key(&target.name) {
            idle.by_host.insert(target.name.clone(), Vec::with_capacity(1));
        }
        let Some(kept) = idle.by_host.get_mut(&target.name) else {
            return;
        };
        let before = kept.len();
        kept.retain(|k| k.since.elapsed() < self.idle_for);
        idle.count -= before - kept.len();
        if kept.len() < PER_HOST {
            kept.push(Kept {
                client,
                addr: addr
                    .filter(|a| *a == target.addr)
                    .unwrap_or_else(|| target.addr.clone()),
                since: Instant::now(),
            });
            idle.count += 1;
        }
    }

    fn answered(&self, host: &str) {
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        let now = crate::store::now();
        if let Some(at) = seen.get_mut(host) {
            *at = now;
        } else if seen.len() < 1_000_000 {
            seen.insert(host.to_string(), now);
        }
    }

    /// When `host` last answered a call made through this pool.
    pub fn last_seen(&self, host: &str) -> Option<f64> {
        self.seen
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(host)
            .copied()
    }

    /// Calls `method` on `target` within `limit`, for `user`; any failure is
    /// the host's `REMOTE_ERROR` value, as from the worker processes. A kept
    /// connection that fails before answering is replaced once (the minion
    /// may have closed it as it was taken).
    pub async fn call(
        &self,
        target: &Target,
        method: &str,
        params: Vec<Value>,
        limit: Duration,
        user: Option<&str>,
    ) -> Value {
        let who = crate::caller::OnBehalf { user, request: None };
        self.ask(target, method, params, limit, who).await.1
    }

    /// [`Pool::call`], and what kind of reply it was (typed: the method's
    /// answer, a fault, or no answer).
    async fn ask(
        &self,
        target: &Target,
        method: &str,
        params: Vec<Value>,
        limit: Duration,
        who: crate::caller::OnBehalf<'_>,
    ) -> (Reply, Value) {
        // Looked at before a kept connection is taken: a changed CRL closes
        // them all, so a revoked minion is not called over an old one.
        let link = self.link();
        let (kept, addr) = self.take(target).unzip();
        let call = crate::caller::call_once(kept, target, method, params, link, limit, who);
        match tokio::time::timeout(limit, call).await {
            Ok(done) => {
                if let Some(client) = done.client {
                    self.give_back(target, client, addr);
                    self.answered(&target.name);
                }
                (done.reply, done.value)
            }
            Err(_) => {
                let why = format!("no answer from {} within {:?}", target.addr, limit);
                (
                    Reply::Unreachable(why.clone()),
                    remote_error("socket.timeout", &why, ""),
                )
            }
        }
    }

    /// Calls `method(params)` on every target, [`CONCURRENCY`] at a time;
    /// `on_each` sees each host as it ends. Returns every host's value.
    ///
    /// A host's task is spawned when a slot is free, not all up front: a
    /// relay's call to its whole segment then holds [`CONCURRENCY`] calls'
    /// state at a time, reused, instead of tens of thousands of tasks
    /// allocated at once among the connections it keeps (and memory that
    /// cannot go back to the system after the call).
    pub async fn call_all(
        self: &Arc<Self>,
        targets: &[Target],
        method: &str,
        params: &[Value],
        limit: Duration,
        who: crate::caller::OnBehalf<'_>,
        mut on_each: impl FnMut(&str, &Value),
    ) -> BTreeMap<String, Value> {
        let (method, params): (Arc<str>, Arc<[Value]>) = (method.into(), params.into());
        let (user, request): (Option<Arc<str>>, Option<Arc<str>>) =
            (who.user.map(Into::into), who.request.map(Into::into));
        let mut tasks = tokio::task::JoinSet::new();
        let mut out = BTreeMap::new();
        let mut end = |joined: Option<Result<(String, Value), tokio::task::JoinError>>| {
            if let Some(Ok((host, value))) = joined {
                on_each(&host, &value);
                out.insert(host, value);
            }
        };
        for target in targets {
            if tasks.len() >= CONCURRENCY {
                end(tasks.join_next().await);
            }
            let (pool, target) = (Arc::clone(self), target.clone());
            let (method, params) = (Arc::clone(&method), Arc::clone(&params));
            let (user, request) = (user.clone(), request.clone());
            tasks.spawn(async move {
                let who = crate::caller::OnBehalf {
                    user: user.as_deref(),
                    request: request.as_deref(),
                };
                let value = pool.ask(&target, &method, params.to_vec(), limit, who).await.1;
                (target.name, value)
            });
        }
        while let Some(joined) = tasks.join_next().await {
            end(Some(joined));
        }
        out
    }

    /// Waits until minion job `job` on `target` ends and returns its final
    /// result, following it as every caller does (`jobs::follow`); whoever
    /// awaits this decides when to give up on a silent host.
    pub async fn wait_end(&self, target: &Target, job: &str) -> Value {
        let limit = Duration::from_secs_f64(crate::settings::DEFAULT_TIMEOUT);
        let mut follow = Follow::new(job);
        loop {
            let (method, params, patience) = follow.ask(limit);
            let asked = std::time::Instant::now();
            let (reply, _) = self
                .ask(target, method, params, patience, Default::default())
                .await;
            match follow.step(&target.name, reply, asked.elapsed()) {
                Step::Ended(result) => return result,
                Step::Again(Some(pause)) => tokio::time::sleep(pause).await,
                Step::Again(None) => {}
            }
        }
    }
}
