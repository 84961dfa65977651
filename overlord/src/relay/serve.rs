//! A relay's part of a signed request (DESIGN §17), carried out by the
//! engine for the relay's door (func-api's `POST /api/v1/relay`, which
//! verified it): the hosts the request's audience gives this relay are
//! called over its kept connections, those behind its own relays are
//! handed on (the very same request), and those it cannot reach end with
//! why. Mode `now`: each host's end as it comes. Mode `async`: a job of this
//! relay's store, signed by this relay (the store is data here too),
//! dispatched from this process in the background; if the process dies
//! while dispatching, the hosts not reached end as such when the job is
//! next looked at (its driver is gone), never silently.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use common::Value;

use super::{Order, RelayError, RelayRequest, Routes};
use crate::plan::{Plan, PlanError, Warm};
use crate::store::{HostUpdate, JobStore, Store};
use crate::targets::Target;

/// A verified request for this relay, named `me` in its audience.
#[derive(Debug)]
pub struct Relayed {
    pub request: RelayRequest,
    pub order: Order,
    pub me: String,
}

/// Where a relay sends the hosts of a request: those it calls itself,
/// those it hands on to each of its relays, and those it cannot reach
/// (with why).
struct Split {
    direct: Vec<Target>,
    relayed: BTreeMap<String, Vec<String>>,
    lost: Vec<(String, Value)>,
}

/// The hosts of `request` as this relay (`me`) sends them ([`Split`]).
fn split(root: &common::paths::Root, request: &RelayRequest, routes: &Routes, me: &str) -> Split {
    let mine: BTreeSet<&String> = request.routes.get(me).into_iter().flatten().collect();
    let (direct, others): (Vec<String>, Vec<String>) =
        request.hosts.iter().cloned().partition(|h| mine.contains(h));
    let (lost, relayed) = routes.split(others);
    let why = |h: &String| {
        let e = RelayError::Config(format!("{h} is not behind relay {me}"));
        (h.clone(), super::unreachable(&e))
    };
    Split {
        direct: direct.iter().map(|n| Target::enrolled(root, n)).collect(),
        relayed,
        lost: lost.iter().map(why).collect(),
    }
}

fn warm(plan: &Plan) -> Result<&Warm, PlanError> {
    plan.warm
        .as_ref()
        .ok_or_else(|| PlanError::Config("a relay's request is served by a relay's func-api only".into()))
}

/// The routes to the hosts of `relayed` that are not this relay's own: none
/// to load when every host is (a warm func's call to the root's minions),
/// so the relay map (tens of thousands of lines at a top) is not read for it.
fn routes(plan: &Plan, relayed: &Relayed) -> Result<Routes, PlanError> {
    let mine: BTreeSet<&String> = relayed
        .request
        .routes
        .get(&relayed.me)
        .into_iter()
        .flatten()
        .collect();
    if relayed.request.hosts.iter().all(|h| mine.contains(h)) {
        return Ok(Routes::default());
    }
    let loaded = Routes::load(&plan.root, None).map_err(|e| PlanError::Config(e.to_string()))?;
    Ok(loaded.unwrap_or_default())
}

/// Mode `now`: every host's end, each given to `on_each` as it comes.
pub fn now(
    plan: &Plan,
    relayed: Relayed,
    mut on_each: impl FnMut(&str, &Value),
) -> Result<BTreeMap<String, Value>, PlanError> {
    let warm = warm(plan)?;
    let routes = routes(plan, &relayed)?;
    let Relayed { request, order, me } = relayed;
    let Split {
        direct,
        relayed,
        lost,
    } = split(&plan.root, &request, &routes, &me);
    let mut results = BTreeMap::new();
    for (host, value) in lost {
        on_each(&host, &value);
        results.insert(host, value);
    }
    let mut pooled = warm.direct(Duration::from_secs_f64(request.timeout));
    pooled.request = request.job_request.clone();
    let root = &plan.root;
    let called = crate::reach::collect_blocking(
        |ends| crate::reach::call_split(&pooled, root, Some(&routes), &order, (direct, relayed), ends),
        &mut on_each,
    );
    for (host, value) in called {
        results.entry(host).or_insert(value);
    }
    Ok(results)
}

/// Mode `async`: records the request as a job of this relay's store and
/// dispatches it in the background on the door's runtime; the job's id.
pub fn start(plan: &Plan, relayed: Relayed) -> Result<String, PlanError> {
    let warm = warm(plan)?.clone();
    // What the dispatch needs, before the job exists (else it would wait
    // on a driver that never dispatches).
    let routes = routes(plan, &relayed)?;
    let door = tokio::runtime::Handle::try_current()
        .map_err(|_| PlanError::Config("a relay job is dispatched on its door's runtime".into()))?;
    let request = &relayed.request;
    let typed = serde_json::to_string(&request.params).unwrap_or_else(|_| "[]".into());
    let mut meta = crate::store::JobMeta::new_call(
        &request.spec,
        &request.function,
        vec![typed.clone()],
        Some(typed),
        request.hosts.len(),
        (request.timeout, plan.dispatch.forks),
        false,
    );
    meta.user = request.user.clone();
    meta.rights = request.rights.clone();
    meta.delegate = true;
    let signer = crate::seal::Signer::load(&plan.root).map_err(|e| PlanError::Config(e.to_string()))?;
    let store = plan.store();
    let id = store.create_sealed(meta, &request.hosts, &|m, h| signer.seal(m, h))?;
    let pid = std::process::id();
    store.set_driver(&id, pid, common::process::start_time(pid).unwrap_or(0))?;
    let root = plan.root.clone();
    door.spawn(dispatch(warm, store, root, id.clone(), relayed, routes));
    Ok(id)
}

/// Hosts recorded at once while dispatching.
const FLUSH_EVERY: usize = 1000;

/// Sends relay job `id` to its hosts (see [`start`]) and records each
/// host's dispatch; the last write ends the dispatch.
async fn dispatch(
    warm: Warm,
    store: Store,
    root: common::paths::Root,
    id: String,
    relayed: Relayed,
    routes: Routes,
) {
    let Relayed { request, order, me } = relayed;
    let Split {
        direct,
        relayed,
        lost,
    } = split(&root, &request, &routes, &me);
    let mut changes: Vec<(String, HostUpdate)> = lost
        .into_iter()
        .map(|(host, v)| {
            let result_xml = crate::jobs::encode_result(v);
            (host, HostUpdate::Finished { result_xml })
        })
        .collect();
    changes.extend(crate::reach::start_relayed(&root, &routes, &order, relayed).await);
    let method = format!("async.{}", order.function);
    let pooled = warm.direct(Duration::from_secs_f64(request.timeout));
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    // The sender is the call's: the channel closes when every call is done.
    let calls = crate::reach::Direct::call(&pooled, direct, &method, &order.params, tx);
    let record = async {
        while let Some((host, value)) = rx.recv().await {
            changes.push((host, crate::jobs::driver::dispatched(&value)));
            if changes.len() >= FLUSH_EVERY {
                write(&store, &id, std::mem::take(&mut changes), false).await;
            }
        }
        write(&store, &id, std::mem::take(&mut changes), true).await;
    };
    tokio::join!(calls, record);
}

/// Records `changes` of relay job `id` (kept and retried while the store is away).
async fn write(store: &Store, id: &str, changes: Vec<(String, HostUpdate)>, done: bool) {
    let (store, id) = (store.clone(), id.to_string());
    let _ = tokio::task::spawn_blocking(move || {
        let what = format!("relay job {id}");
        if let Err(e) = crate::store::api::retrying(&what, || store.update(&id, &changes, done)) {
            tracing::warn!(error = %e, "{what}: cannot record its dispatch");
        }
    })
    .await;
}
