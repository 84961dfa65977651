//! One way to reach minions (DESIGN §13). [`Direct`] is how hosts are
//! called directly: the worker fleet ([`Workers`]: `func`'s forked workers,
//! DESIGN §6) or the warm pool ([`Pooled`]: func-api and a relay). Around
//! it, delegation is written once, for every caller: [`split`] puts each
//! host the map routes through a relay behind that relay, [`call`] calls a
//! function now (relayed hosts in one signed request per relay, the others
//! through the [`Direct`] given), and [`start_relayed`] starts the relayed
//! hosts' part of a job. Every host's end arrives on one channel as it
//! comes, whichever way it went; a relay answers only for the hosts sent
//! to it (`relay::fanout` checks), so no host is answered twice.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use common::paths::Root;
use common::Value;

use crate::dispatch::Dispatch;
use crate::relay::{Order, Routes};
use crate::store::HostUpdate;
use crate::targets::Target;

/// Where each host's end goes, as it comes.
pub type Ends = tokio::sync::mpsc::UnboundedSender<(String, Value)>;

/// A call in flight.
pub type Calling<'a> = Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

/// How hosts are called directly.
pub trait Direct: Send + Sync {
    /// Calls `function(params)` on `targets`; each host's end on `ends`.
    fn call<'a>(
        &'a self,
        targets: Vec<Target>,
        function: &'a str,
        params: &'a [Value],
        ends: Ends,
    ) -> Calling<'a>;
}

/// The worker fleet: `--forks N` processes of this executable, each
/// calling its bucket of hosts (`dispatch.rs`); a call that cannot start
/// them ends every host with why.
#[derive(Clone)]
pub struct Workers {
    pub credentials: common::tls::Credentials,
    pub how: Dispatch,
    /// The signed job request the calls belong to, if any (its identity:
    /// each minion runs it at most once).
    pub request: Option<String>,
}

impl Direct for Workers {
    fn call<'a>(
        &'a self,
        targets: Vec<Target>,
        function: &'a str,
        params: &'a [Value],
        ends: Ends,
    ) -> Calling<'a> {
        Box::pin(async move {
            if targets.is_empty() {
                return;
            }
            let (creds, how) = (self.credentials.clone(), self.how.clone());
            let action = crate::job::Action::call(function, params.to_vec()).map(|mut action| {
                if let crate::job::Action::Call { request, .. } = &mut action {
                    request.clone_from(&self.request);
                }
                action
            });
            let names: Vec<String> = targets.iter().map(|t| t.name.clone()).collect();
            let fail = |ends: &Ends, why: String| {
                let value = common::xmlrpc::remote_error("func.overlord.CallError", &why, "");
                for host in &names {
                    let _ = ends.send((host.clone(), value.clone()));
                }
            };
            let action = match action {
                Ok(action) => action,
                Err(e) => return fail(&ends, format!("cannot encode the call: {e}")),
            };
            let sent = ends.clone();
            let called = tokio::task::spawn_blocking(move || {
                crate::dispatch::call_workers(&creds, &targets, &action, &how, |h, v| {
                    let _ = sent.send((h.to_string(), v.clone()));
                })
            })
            .await;
            match called {
                Ok(Ok(_)) => {}
                Ok(Err(e)) => fail(&ends, e.to_string()),
                Err(e) => fail(&ends, format!("the workers' thread ended: {e}")),
            }
        })
    }
}

/// The warm pool of a long-lived process (func-api, a relay): kept
/// connections, `limit` per call, calls made as `user`, as part of signed
/// request `request` when one is given (its identity: each minion runs it
/// at most once).
pub struct Pooled<'p> {
    pub pool: &'p Arc<crate::pool::Pool>,
    pub limit: Duration,
    pub user: Option<String>,
    pub request: Option<String>,
}

impl Direct for Pooled<'_> {
    fn call<'a>(
        &'a self,
        targets: Vec<Target>,
        function: &'a str,
        params: &'a [Value],
        ends: Ends,
    ) -> Calling<'a> {
        Box::pin(async move {
            let who = crate::caller::OnBehalf {
                user: self.user.as_deref(),
                request: self.request.as_deref(),
            };
            self.pool
                .call_all(&targets, function, params, self.limit, who, |h, v| {
                    let _ = ends.send((h.to_string(), v.clone()));
                })
                .await;
        })
    }
}

/// The one split: the hosts to call directly, and per relay (the first
/// hop of each host's route) the hosts handed to it. No routes: all direct.
pub fn split(routes: Option<&Routes>, targets: Vec<Target>) -> (Vec<Target>, BTreeMap<String, Vec<String>>) {
    let Some(routes) = routes else {
        return (targets, BTreeMap::new());
    };
    let (direct, relayed) = routes.split(targets.iter().map(|t| t.name.clone()));
    let direct: std::collections::HashSet<String> = direct.into_iter().collect();
    let targets = targets.into_iter().filter(|t| direct.contains(&t.name)).collect();
    (targets, relayed)
}

/// Calls `order` now on `targets`: the hosts `routes` put behind a relay go
/// through it, the others through `direct`; each host's end on `ends`.
pub async fn call(
    direct: &dyn Direct,
    root: &Root,
    routes: Option<&Routes>,
    order: &Order,
    targets: Vec<Target>,
    ends: Ends,
) {
    let (targets, relayed) = split(routes, targets);
    call_split(direct, root, routes, order, (targets, relayed), ends).await;
}

/// Every host's value of the call `calling` makes (each host's end on the
/// channel it is given; the first for a host counts).
pub fn collected<'a, F: Future<Output = ()> + Send + 'a>(
    calling: impl FnOnce(Ends) -> F,
) -> impl Future<Output = BTreeMap<String, Value>> + Send + 'a {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let calling = calling(tx);
    async move {
        let collect = async {
            let mut results = BTreeMap::new();
            while let Some((host, value)) = rx.recv().await {
                results.entry(host).or_insert(value);
            }
            results
        };
        tokio::join!(calling, collect).1
    }
}

/// [`call`] over hosts already split (a relay splits a request by the
/// routes it was sent, not by its own map alone).
pub async fn call_split(
    direct: &dyn Direct,
    root: &Root,
    routes: Option<&Routes>,
    order: &Order,
    (targets, relayed): (Vec<Target>, BTreeMap<String, Vec<String>>),
    ends: Ends,
) {
    let handed_on = async {
        if let (Some(routes), false) = (routes, relayed.is_empty()) {
            crate::relay::call_now(root, routes, order, relayed, ends.clone()).await;
        }
    };
    tokio::join!(
        direct.call(targets, &order.function, &order.params, ends.clone()),
        handed_on
    );
}

/// Starts the relayed hosts' part of job `order`: each host dispatched as
/// its relay's job, or finished with why it was not.
pub async fn start_relayed(
    root: &Root,
    routes: &Routes,
    order: &Order,
    relayed: BTreeMap<String, Vec<String>>,
) -> Vec<(String, HostUpdate)> {
    if relayed.is_empty() {
        return Vec::new();
    }
    let started = crate::relay::start_all(root, routes, order, relayed).await;
    started
        .into_iter()
        .map(|(host, job)| match job {
            Ok(minion_job) => (host, HostUpdate::Dispatched { minion_job }),
            Err(v) => {
                let result_xml = crate::jobs::encode_result(v);
                (host, HostUpdate::Finished { result_xml })
            }
        })
        .collect()
}

/// Runs `work` to its end from a blocking thread: on the runtime of the
/// door this thread serves (a long-lived door's kept connections belong to
/// it), else on a runtime of its own.
pub fn on_door<T: Send>(work: impl Future<Output = T> + Send) -> T {
    match tokio::runtime::Handle::try_current() {
        Ok(door) => door.block_on(work),
        Err(_) => crate::relay::block_on(work),
    }
}

/// Runs `task` to its end from a blocking thread as a task of the door's
/// runtime (its threads read the kept connections; this thread waits once
/// for the end), else on a runtime of its own. A panic in it is resumed
/// here, as if it had run here.
pub fn on_door_task<T: Send + 'static, E: From<crate::error::EngineError> + Send + 'static>(
    task: impl Future<Output = Result<T, E>> + Send + 'static,
) -> Result<T, E> {
    let Ok(door) = tokio::runtime::Handle::try_current() else {
        return crate::relay::block_on(task);
    };
    match door.block_on(door.spawn(task)) {
        Ok(done) => done,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(_) => Err(crate::error::EngineError::Setup(
            "the service is stopping: the call was not finished".into(),
        )
        .into()),
    }
}

/// Calls `order` now on `targets` from a synchronous caller (the engine
/// for every door): `direct` for the direct hosts, relays for the others
/// ([`call`]); `on_each` sees every host as it ends, on this thread.
/// Every host's value.
pub fn call_blocking(
    direct: &dyn Direct,
    root: &Root,
    routes: Option<&Routes>,
    order: &Order,
    targets: Vec<Target>,
    on_each: impl FnMut(&str, &Value),
) -> BTreeMap<String, Value> {
    collect_blocking(|ends| call(direct, root, routes, order, targets, ends), on_each)
}

/// Runs the call `calling` makes (each host's end on the channel it is
/// given) from a synchronous caller: on a long-lived door's blocking
/// thread, together with the reading of its ends on the door's runtime (no
/// thread of our own); elsewhere on a runtime of its own. `on_each` sees
/// every host as it ends, on this thread; every host's value (the first).
pub fn collect_blocking<'a, F>(
    calling: impl FnOnce(Ends) -> F,
    mut on_each: impl FnMut(&str, &Value),
) -> BTreeMap<String, Value>
where
    F: Future<Output = ()> + Send + 'a,
{
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let mut results = BTreeMap::new();
    let calling = calling(tx);
    if let Ok(door) = tokio::runtime::Handle::try_current() {
        let collect = async {
            while let Some((host, value)) = rx.recv().await {
                on_each(&host, &value);
                results.entry(host).or_insert(value);
            }
        };
        door.block_on(async { tokio::join!(calling, collect) });
        return results;
    }
    std::thread::scope(|s| {
        s.spawn(|| crate::relay::block_on(calling));
        while let Some((host, value)) = rx.blocking_recv() {
            on_each(&host, &value);
            results.entry(host).or_insert(value);
        }
    });
    results
}
