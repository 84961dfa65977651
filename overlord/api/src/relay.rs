//! func-api as a relay (DESIGN §17): an overlord of its segment that runs
//! what a top overlord of the same CA signed, and nothing else. It is a
//! relay when its own overlord certificate has the relay mark
//! (`certmaster-ca --relay NAME`); NAME is its name in requests and maps.
//!
//! - `POST /api/v1/relay`: a signed request (`relay::SealedRequest`), from a
//!   top overlord, or from a `func` of this root handing its call to this
//!   service (a warm func, `relay::local`: audience `@local`). Only
//!   a caller presenting an overlord certificate of our CA may send one,
//!   and it runs only if its signature verifies (a top overlord's key of
//!   our CA, not revoked, no relay's), it is fresh, names this relay in its
//!   audience, and its nonce was never seen here. This relay calls the
//!   hosts the request gives it and hands the very same request on to its
//!   relays for the others: the engine carries it out
//!   (`engine::Request::Relay`, `relay::serve`), this door only verifies it
//!   and writes the answer. Mode `now`: each host's result is streamed back
//!   as an NDJSON line `{"host", "result"}` (or `"result_xml"` when JSON
//!   cannot hold it exactly) the moment it ends, then `{"done":true}`.
//!   Mode `async`: a job of this relay's store, 202 `{"job_id"}`.
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
use overlord::engine::{Answer, Request};
use overlord::jobs::start::Caller as Who;
use overlord::relay::client::{HostLine, Results};
use overlord::relay::serve::Relayed;
use overlord::relay::{Mode, RelayError, SealedRequest};
use overlord::store::{HostState, JobStore as _};

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
        // A warm func of this root hands its calls here: the audience is
        // `@local` alone (`relay::local`), whether or not this is a relay.
        // (`open` took it only if this root's own key signed it.)
        if overlord::relay::local::is_local(&request.routes) {
            return Ok::<_, RelayError>((request, overlord::relay::local::AUDIENCE.to_string()));
        }
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
    // The relay's own calls are made for the request's user, with its rights.
    let who = overlord::jobs::start::Caller {
        user: request.user.clone(),
        rights: request.rights.clone(),
        schedule: None,
    };
    let mode = request.mode;
    let relayed = Box::new(Relayed { request, order, me });
    match mode {
        Mode::Now => now(api, caller, who, relayed).await,
        Mode::Async => start(api, who, relayed).await,
    }
}

/// What the engine's thread hands the response stream.
enum Sent {
    /// One host's end, an NDJSON line.
    Host(String, common::Value),
    /// Every host has its line; `trim`: a large call's memory is to go back
    /// to the system first ([`super::trim`]).
    Done { trim: bool },
}

/// Each host's end as an NDJSON line, as it comes; the hosts answered.
struct Lines {
    tx: tokio::sync::mpsc::UnboundedSender<Sent>,
    sent: BTreeSet<String>,
}

impl overlord::engine::Watch for Lines {
    fn host(&mut self, host: &str, value: &common::Value) {
        if self.sent.insert(host.to_string()) {
            let _ = self.tx.send(Sent::Host(host.to_string(), value.clone()));
        }
    }
}

/// Mode `now`: the engine calls the hosts (`relay::serve::now`), each
/// host's line streamed the moment it ends, then `{"done":true}`. If the
/// engine could not carry it out, every host not answered gets why: never
/// a silent gap.
async fn now(api: Arc<Api>, caller: Caller, who: Who, relayed: Box<Relayed>) -> Result<Response, ApiError> {
    let slot = super::calls::take_slot(&api, &caller)?;
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<Sent>();
    tokio::task::spawn_blocking(move || {
        let _slot = slot;
        let (tx, answered) = {
            let hosts = relayed.request.hosts.clone();
            let mut lines = Lines {
                tx,
                sent: BTreeSet::new(),
            };
            let asked = super::auth::plan_for(&api, "", (None, None), &who)
                .and_then(|plan| super::auth::serve_as(&plan, who, Request::Relay(relayed), &mut lines));
            if let Err(e) = asked {
                let why = overlord::relay::unreachable(&RelayError::Config(e.to_string()));
                for host in hosts {
                    overlord::engine::Watch::host(&mut lines, &host, &why);
                }
            }
            (lines.tx, lines.sent.len())
        };
        // Done only here: a stream that ends without it (this thread
        // panicked) tells the overlord its hosts were not all answered.
        let _ = tx.send(Sent::Done {
            trim: super::trim::due(answered),
        });
    });
    let lines = futures_util::stream::unfold(Some(rx), |rx| async move {
        let mut rx = rx?;
        match rx.recv().await {
            Some(Sent::Host(host, value)) => {
                let line = HostLine::new(host, value);
                let mut text = serde_json::to_vec(&line).unwrap_or_default();
                text.push(b'\n');
                Some((Ok::<_, Infallible>(Bytes::from(text)), Some(rx)))
            }
            Some(Sent::Done { trim }) => {
                // Every line has been taken from the channel and the call's
                // results are dropped: what is freed now goes back before
                // the caller reads done.
                drop(rx);
                if trim {
                    let _ = tokio::task::spawn_blocking(super::trim::release).await;
                }
                Some((Ok(Bytes::from_static(b"{\"done\":true}\n")), None))
            }
            None => None,
        }
    });
    let mut resp = axum::body::Body::from_stream(lines).into_response();
    resp.headers_mut().insert(
        axum::http::header::CONTENT_TYPE,
        axum::http::HeaderValue::from_static("application/x-ndjson"),
    );
    Ok(resp)
}

/// Mode `async`: a job of this relay's store, dispatched by the engine
/// (`relay::serve::start`); 202 `{"job_id"}`.
async fn start(api: Arc<Api>, who: Who, relayed: Box<Relayed>) -> Result<Response, ApiError> {
    let started = tokio::task::spawn_blocking(move || {
        let plan = super::auth::plan_for(&api, "", (None, None), &who)?;
        super::auth::serve_as(
            &plan,
            who,
            Request::Relay(relayed),
            &mut overlord::engine::Unwatched,
        )
    })
    .await
    .map_err(ApiError::internal)??;
    match started {
        Answer::Started { id, .. } => {
            Ok((StatusCode::ACCEPTED, Json(RelayJob { job_id: id })).into_response())
        }
        _ => Err(ApiError::internal(
            "the engine answered a relay job with something else",
        )),
    }
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
