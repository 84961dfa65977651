//! func-api as a relay (DESIGN §17): an overlord of its segment that runs
//! what a top overlord of the same CA signed, and nothing else. It is a
//! relay when its own overlord certificate has the relay mark
//! (`certmaster-ca --relay NAME`); NAME is its name in requests and maps.
//!
//! - `POST /api/v1/relay`: a signed request (`relay::SealedRequest`). Only
//!   a caller presenting an overlord certificate of our CA may send one,
//!   and it runs only if its signature verifies (a top overlord's key of
//!   our CA, not revoked, no relay's), it is fresh, names this relay in its
//!   audience, and its nonce was never seen here. This relay calls the
//!   hosts the request gives it and hands the very same request on to its
//!   relays for the others. Mode `now`: each host's result is
//!   streamed back as an NDJSON line `{"host", "result"}` (or `"result_xml"`
//!   when JSON cannot hold it exactly) the moment it ends, then
//!   `{"done":true}`; hosts are called over the pool's kept
//!   connections, and those behind this relay's own relays are handed on.
//!   Mode `async`: a job of this relay's store (its driver delegates
//!   further), 202 `{"job_id"}`.
//! - `POST /api/v1/relay/jobs/{id}/results {"hosts", "wait"}`: the results
//!   of those of `hosts` that are finished, waiting up to `wait` seconds
//!   (at most 60) for one to finish: how an overlord collapses a relay job.
//! - `GET /api/v1/relay/map[?onlyalive=true]`: this relay's map.

use std::collections::{BTreeMap, BTreeSet};
use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use bytes::Bytes;

use super::auth::{Caller, Proof};
use super::reply::{ApiError, Body, ErrorBody, Path, Query};
use super::state::Api;
use overlord::relay::client::{HostLine, Results};
use overlord::relay::{Mode, RelayError, SealedRequest};
use overlord::store::{HostState, HostUpdate, JobStore as _};
use overlord::targets::Target;

/// Largest request an overlord may hand a relay (a million host names).
pub const RELAY_BODY: usize = 64 << 20;
/// Longest wait of one results request.
const MAX_WAIT: f64 = 60.0;
/// How long a results request gathers further ends after the first.
const LINGER: Duration = Duration::from_millis(500);

/// Only an overlord certificate of our CA speaks to a relay.
fn overlord_only(caller: &Caller) -> Result<(), ApiError> {
    match (&caller.proof, caller.rights.admin) {
        (Proof::Certificate, true) => Ok(()),
        _ => Err(ApiError::forbidden(
            "only an overlord certificate of this CA may use a relay",
        )),
    }
}

impl From<RelayError> for ApiError {
    fn from(e: RelayError) -> Self {
        match e {
            RelayError::Untrusted(_) => ApiError::forbidden(e.to_string()),
            RelayError::Request(_) => ApiError::bad(e.to_string()),
            other => ApiError::new(StatusCode::BAD_GATEWAY, other.to_string()),
        }
    }
}

/// The job id a relay answers.
#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct RelayJob {
    pub job_id: String,
}

/// `POST /api/v1/relay`.
#[utoipa::path(post, path = "/api/v1/relay", tag = "relay", operation_id = "relayRequest",
    summary = "Run a request an overlord signed (now: NDJSON host lines; async: a job of this relay)",
    request_body = SealedRequest,
    responses((status = 200, description = "NDJSON: {\"host\", \"result\" or \"result_xml\"} per host, then {\"done\": true}", content_type = "application/x-ndjson"),
        (status = 202, body = RelayJob), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 413, body = ErrorBody), (status = 503, body = ErrorBody)))]
pub async fn relay(
    caller: Caller,
    State(api): State<Arc<Api>>,
    Body(sealed): Body<SealedRequest>,
) -> Result<Response, ApiError> {
    overlord_only(&caller)?;
    let (root, sealed2) = (api.root.clone(), sealed.clone());
    let opened = tokio::task::spawn_blocking(move || {
        let request = sealed2.open(&root)?;
        let me = overlord::seal::relay_name(&root).ok_or_else(|| {
            RelayError::Untrusted(
                "this func-api is no relay: its overlord certificate has no relay mark (certmaster-ca --relay NAME)"
                    .into(),
            )
        })?;
        Ok::<_, RelayError>((request, me))
    })
    .await
    .map_err(ApiError::internal)?;
    let refused = |e: RelayError| {
        api.audit.line(
            &caller.user(),
            caller.from,
            &format!("relay refused: {e}"),
            &[],
            403,
        );
        e
    };
    let (request, me) = opened.map_err(refused)?;
    if !request.routes.contains_key(&me) {
        let listed: Vec<&str> = request.routes.keys().map(String::as_str).collect();
        return Err(refused(RelayError::Untrusted(format!(
            "the request is for relays {}, not for this one ({me})",
            common::paths::shorten(&listed.join(", "))
        )))
        .into());
    }
    if let Err(why) = api.nonces.admit(&request.nonce, request.issued) {
        return Err(refused(RelayError::Untrusted(why)).into());
    }
    let action = format!(
        "relay {} {} ({:?}) for {}",
        request.id, request.function, request.mode, request.user
    );
    api.audit
        .line(&caller.user(), caller.from, &action, &request.hosts, 200);
    let order = overlord::relay::Order::of(&request, sealed);
    match request.mode {
        Mode::Now => now(api, caller, request, order, &me).await,
        Mode::Async => start(api, request, order, me).await,
    }
}

/// Where a relay sends the hosts of a request: those it calls itself,
/// those it hands on to each of its relays, and those it cannot reach
/// (with why).
struct Split {
    direct: Vec<String>,
    relayed: BTreeMap<String, Vec<String>>,
    lost: Vec<(String, common::Value)>,
}

/// The hosts of `request` as this relay (`me`) sends them ([`Split`]).
fn split(request: &overlord::relay::RelayRequest, routes: &overlord::relay::Routes, me: &str) -> Split {
    let mine: BTreeSet<&String> = request.routes.get(me).into_iter().flatten().collect();
    let (direct, others): (Vec<String>, Vec<String>) =
        request.hosts.iter().cloned().partition(|h| mine.contains(h));
    let (lost, relayed) = routes.split(others);
    let why = |h: &String| {
        let e = RelayError::Config(format!("{h} is not behind relay {me}"));
        (h.clone(), overlord::relay::unreachable(&e))
    };
    Split {
        direct,
        relayed,
        lost: lost.iter().map(why).collect(),
    }
}

async fn now(
    api: Arc<Api>,
    caller: Caller,
    request: overlord::relay::RelayRequest,
    order: overlord::relay::Order,
    me: &str,
) -> Result<Response, ApiError> {
    let slot = super::calls::take_slot(&api, &caller)?;
    let root = api.root.clone();
    let routes = tokio::task::spawn_blocking(move || overlord::relay::Routes::load(&root, None))
        .await
        .map_err(ApiError::internal)??
        .unwrap_or_default();
    let Split {
        direct,
        relayed,
        lost,
    } = split(&request, &routes, me);
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<(String, common::Value)>();
    for (host, value) in lost {
        let _ = tx.send((host, value));
    }
    let limit = Duration::from_secs_f64(request.timeout);
    let api2 = Arc::clone(&api);
    tokio::spawn(async move {
        let _slot = slot;
        let targets: Vec<Target> = direct.iter().map(|n| Target::enrolled(&api2.root, n)).collect();
        let pooled = overlord::reach::Pooled {
            pool: &api2.pool,
            limit,
            user: Some(order.user.clone()),
        };
        let split = (targets, relayed);
        overlord::reach::call_split(&pooled, &api2.root, Some(&routes), &order, split, tx).await;
    });
    let lines = futures_util::stream::unfold(Some(rx), |rx| async move {
        let mut rx = rx?;
        match rx.recv().await {
            Some((host, value)) => {
                let line = HostLine::new(host, value);
                let mut text = serde_json::to_vec(&line).unwrap_or_default();
                text.push(b'\n');
                Some((Ok::<_, Infallible>(Bytes::from(text)), Some(rx)))
            }
            None => Some((Ok(Bytes::from_static(b"{\"done\":true}\n")), None)),
        }
    });
    let mut resp = axum::body::Body::from_stream(lines).into_response();
    resp.headers_mut().insert(
        axum::http::header::CONTENT_TYPE,
        axum::http::HeaderValue::from_static("application/x-ndjson"),
    );
    Ok(resp)
}

/// Mode async: the request becomes a job of this relay's store, signed by
/// this relay (the store is data here too), and is dispatched from this
/// process over the pool's kept connections (hosts behind this relay's own
/// relays are handed on); its watcher follows the minions' jobs. If this
/// process dies while dispatching, the hosts not reached end as such when
/// the job is next looked at (its driver is gone), never silently.
async fn start(
    api: Arc<Api>,
    request: overlord::relay::RelayRequest,
    order: overlord::relay::Order,
    me: String,
) -> Result<Response, ApiError> {
    let typed = serde_json::to_string(&request.params).unwrap_or_else(|_| "[]".into());
    let mut meta = overlord::store::JobMeta::new_call(
        &request.spec,
        &request.function,
        vec![typed.clone()],
        Some(typed),
        request.hosts.len(),
        (request.timeout, api.dispatch.forks),
        false,
    );
    meta.user = request.user.clone();
    meta.rights = request.rights.clone();
    meta.delegate = true;
    let api2 = Arc::clone(&api);
    let hosts = request.hosts.clone();
    let (id, routes) = tokio::task::spawn_blocking(move || -> Result<_, ApiError> {
        let signer = overlord::seal::Signer::load(&api2.root).map_err(ApiError::internal)?;
        let id = api2
            .store
            .create_sealed(meta, &hosts, &|m, h| signer.seal(m, h))
            .map_err(ApiError::store)?;
        let me = std::process::id();
        api2.store
            .set_driver(&id, me, common::process::start_time(me).unwrap_or(0))
            .map_err(ApiError::store)?;
        let routes = overlord::relay::Routes::load(&api2.root, None)?.unwrap_or_default();
        Ok((id, routes))
    })
    .await
    .map_err(ApiError::internal)??;
    tokio::spawn(dispatch(
        Arc::clone(&api),
        id.clone(),
        request,
        order,
        (routes, me),
    ));
    Ok((StatusCode::ACCEPTED, Json(RelayJob { job_id: id })).into_response())
}

/// Hosts recorded at once while dispatching.
const FLUSH_EVERY: usize = 1000;

/// Sends relay job `id` to its hosts (see [`start`]) and records each
/// host's dispatch; the last write ends the dispatch.
async fn dispatch(
    api: Arc<Api>,
    id: String,
    request: overlord::relay::RelayRequest,
    order: overlord::relay::Order,
    (routes, me): (overlord::relay::Routes, String),
) {
    let Split {
        direct,
        relayed,
        lost,
    } = split(&request, &routes, &me);
    let mut changes: Vec<(String, HostUpdate)> = lost
        .into_iter()
        .map(|(host, v)| {
            let result_xml = overlord::jobs::encode_result(v);
            (host, HostUpdate::Finished { result_xml })
        })
        .collect();
    changes.extend(overlord::reach::start_relayed(&api.root, &routes, &order, relayed).await);
    let targets: Vec<Target> = direct.iter().map(|n| Target::enrolled(&api.root, n)).collect();
    let method = format!("async.{}", order.function);
    let pooled = overlord::reach::Pooled {
        pool: &api.pool,
        limit: Duration::from_secs_f64(request.timeout),
        user: Some(order.user.clone()),
    };
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    // The sender is the call's: the channel closes when every call is done.
    let calls = overlord::reach::Direct::call(&pooled, targets, &method, &order.params, tx);
    let record = async {
        while let Some((host, value)) = rx.recv().await {
            changes.push((host, overlord::jobs::driver::dispatched(&value)));
            if changes.len() >= FLUSH_EVERY {
                write(&api, &id, std::mem::take(&mut changes), false).await;
            }
        }
        write(&api, &id, std::mem::take(&mut changes), true).await;
    };
    tokio::join!(calls, record);
}

/// Records `changes` of relay job `id` (kept and retried while the store is away).
async fn write(api: &Arc<Api>, id: &str, changes: Vec<(String, HostUpdate)>, done: bool) {
    let (api, id) = (Arc::clone(api), id.to_string());
    let _ = tokio::task::spawn_blocking(move || {
        let what = format!("relay job {id}");
        if let Err(e) = overlord::store::api::retrying(&what, || api.store.update(&id, &changes, done)) {
            tracing::warn!(error = %e, "{what}: cannot record its dispatch");
        }
    })
    .await;
}

/// What a results request asks.
#[derive(serde::Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ResultsAsk {
    /// The hosts whose results are wanted (default: all).
    #[serde(default)]
    pub hosts: Option<Vec<String>>,
    /// Seconds to wait for one of them to finish (at most 60).
    #[serde(default)]
    pub wait: f64,
}

/// `POST /api/v1/relay/jobs/{id}/results`.
#[utoipa::path(post, path = "/api/v1/relay/jobs/{id}/results", tag = "relay", operation_id = "relayResults",
    summary = "The finished hosts of a relay job, waiting a while for one",
    params(super::reply::JobIdParam), request_body = ResultsAsk,
    responses((status = 200, body = Results), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 404, body = ErrorBody), (status = 503, body = ErrorBody)))]
pub async fn results(
    caller: Caller,
    State(api): State<Arc<Api>>,
    Path(id): Path<String>,
    Body(ask): Body<ResultsAsk>,
) -> Result<Json<Results>, ApiError> {
    overlord_only(&caller)?;
    let wanted: Option<BTreeSet<String>> = ask.hosts.map(|h| h.into_iter().collect());
    let wait = if ask.wait.is_finite() {
        ask.wait.clamp(0.0, MAX_WAIT)
    } else {
        0.0
    };
    let deadline = Instant::now() + Duration::from_secs_f64(wait);
    // Once a host is found finished, others that end within LINGER come
    // along in the same answer (fewer, larger exchanges at scale).
    let mut linger: Option<Instant> = None;
    loop {
        let (api2, id2) = (Arc::clone(&api), id.clone());
        let record = tokio::task::spawn_blocking(move || api2.store.load(&id2))
            .await
            .map_err(ApiError::internal)?
            .map_err(ApiError::store)?
            .ok_or_else(|| ApiError::not_found(format!("no job {} here", common::paths::shorten(&id))))?;
        let mut results = BTreeMap::new();
        let mut open = 0usize;
        for (host, entry) in &record.hosts {
            if wanted.as_ref().is_some_and(|w| !w.contains(host)) {
                continue;
            }
            match (&entry.state, &entry.result_xml) {
                (HostState::Finished, Some(xml)) => {
                    results.insert(host.clone(), xml.clone());
                }
                _ => open += 1,
            }
        }
        let ended = open == 0;
        let now = Instant::now();
        if !results.is_empty() && linger.is_none() {
            linger = Some((now + LINGER).min(deadline));
        }
        if ended || now >= deadline || linger.is_some_and(|l| now >= l) {
            return Ok(Json(Results { results, ended }));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `?onlyalive=`.
#[derive(serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct MapQuery {
    /// Only minions that answer `test.ping` (Func's `--onlyalive`).
    #[serde(default)]
    pub onlyalive: bool,
}

/// This relay's map.
#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct MapAnswer {
    #[schema(value_type = Object)]
    pub map: overlord::relay::Map,
    /// Relays below this one that could not be asked.
    pub unreached: Vec<String>,
    /// This relay's name (its overlord certificate's): the name the map
    /// and requests must call it by. `null`: this func-api is no relay.
    pub name: Option<String>,
}

/// `GET /api/v1/relay/map`.
#[utoipa::path(get, path = "/api/v1/relay/map", tag = "relay", operation_id = "relayMap",
    summary = "This relay's map: its minions, and its relays' maps",
    params(MapQuery),
    responses((status = 200, body = MapAnswer), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 502, body = ErrorBody)))]
pub async fn map(
    caller: Caller,
    State(api): State<Arc<Api>>,
    Query(q): Query<MapQuery>,
) -> Result<Json<MapAnswer>, ApiError> {
    overlord_only(&caller)?;
    let (map, unreached) = overlord::relay::build::build(&api.root, &api.pool, q.onlyalive).await?;
    let name = overlord::seal::relay_name(&api.root);
    Ok(Json(MapAnswer { map, unreached, name }))
}

/// This group's endpoints, each with its OpenAPI operation.
pub fn routes() -> utoipa_axum::router::OpenApiRouter<Arc<Api>> {
    use utoipa_axum::{router::OpenApiRouter, routes};
    // The relay's requests carry whole batches of results: a limit of their own.
    let relay_body = axum::extract::DefaultBodyLimit::max(RELAY_BODY);
    let relayed = OpenApiRouter::new()
        .routes(routes!(relay))
        .routes(routes!(results))
        .layer(relay_body);
    OpenApiRouter::new().merge(relayed).routes(routes!(map))
}
