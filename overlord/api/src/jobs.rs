//! `GET /api/v1/jobs[?limit=&before=&function=&target=&schedule=]`: jobs
//! newest first, a page at a time (`next` is the `before` of the next
//! page; rows as `jobs::row` shapes them for every door), filtered by globs
//! over the function, the SPEC and the schedule's name; each page reads only its share of
//! the store's start-time index, so it stays fast at 100,000 jobs.
//! `GET /api/v1/jobs/{id}`: the `job_status --json` document (`last`: the
//! caller's newest job). `POST /api/v1/jobs/{id}/kill {"signal"}`: signals
//! the hosts still running it. `GET /api/v1/jobs/active[?spec=]`: what runs
//! now on the minions (an administrator's). A limited token sees and kills
//! only jobs whose every host its rights allow with the job's function;
//! the engine decides that (`engine::serve`), the handlers only read the
//! request and write the answer.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::reply::{Path, Query};
use axum::extract::State;
use axum::Json;
use serde::{Deserialize, Serialize};

use super::auth::Caller;
use super::reply::{ApiError, Body, ErrorBody, JobIdParam};
use super::state::Api;
use overlord::engine::{Answer, Request};
use overlord::jobs::row::JobPage;

/// Page size by default and at most; jobs looked at per request at most.
const DEFAULT_LIMIT: usize = 50;
const MAX_LIMIT: usize = 500;
const MAX_SCAN: usize = 20_000;
/// Jobs a limited caller's request looks at most (each must be judged
/// against its rights); `next` lets it go on below.
const MAX_SCAN_LIMITED: usize = 2_000;

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// Jobs on the page (1 to 500, 50 when absent).
    #[param(minimum = 1, maximum = 500)]
    limit: Option<usize>,
    /// The `next` of the previous page.
    before: Option<String>,
    /// A glob over `module.method`.
    function: Option<String>,
    /// A glob over the SPEC.
    target: Option<String>,
    /// A glob over the name of the schedule whose run it is (a job that is
    /// no schedule's run never matches).
    schedule: Option<String>,
}

/// A job's status, and who started it, when and with what.
#[derive(Serialize, utoipa::ToSchema)]
pub struct JobDoc {
    #[serde(flatten)]
    pub status: overlord::jobs::StatusDoc,
    pub user: String,
    pub target: String,
    pub started: f64,
    pub ended: Option<f64>,
    /// Its arguments, as sent.
    #[schema(value_type = Vec<serde_json::Value>)]
    pub args: serde_json::Value,
    pub batch: bool,
    /// The schedule whose run it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schedule: Option<String>,
    /// The job it re-runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rerun_of: Option<String>,
}

/// The hosts a kill reached: each one's message, or `{"error"}`.
#[derive(Serialize, utoipa::ToSchema)]
pub struct Killed {
    pub job_id: String,
    #[schema(value_type = Object)]
    pub signalled: BTreeMap<String, serde_json::Value>,
}

fn glob(text: Option<&str>, what: &str) -> Result<Option<glob::Pattern>, ApiError> {
    text.filter(|t| !t.is_empty())
        .map(|t| overlord::gate::jobs::glob(what, t).map_err(ApiError::from))
        .transpose()
}

/// `GET /api/v1/jobs`.
#[utoipa::path(get, path = "/api/v1/jobs", tag = "jobs", operation_id = "listJobs",
    summary = "Jobs, newest first, a page at a time", params(ListQuery),
    responses((status = 200, body = JobPage,
            headers(("Link" = String, description = "<…>; rel=\"next\" when there is a next page"))),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 429, body = ErrorBody), (status = 503, body = ErrorBody)))]
pub async fn list(
    caller: Caller,
    State(api): State<Arc<Api>>,
    Query(q): Query<ListQuery>,
) -> Result<axum::response::Response, ApiError> {
    use axum::response::IntoResponse as _;
    let limit = q.limit.unwrap_or(DEFAULT_LIMIT);
    if !(1..=MAX_LIMIT).contains(&limit) {
        return Err(ApiError::bad(format!("limit: from 1 to {MAX_LIMIT}")));
    }
    let query = overlord::jobs::listing::Query {
        function: glob(q.function.as_deref(), "function")?,
        target: glob(q.target.as_deref(), "target")?,
        schedule: glob(q.schedule.as_deref(), "schedule")?,
        limit: Some(limit),
        before: q.before.clone().filter(|b| !b.is_empty()),
        max_scan: Some(if caller.rights.admin {
            MAX_SCAN
        } else {
            MAX_SCAN_LIMITED
        }),
        ..Default::default()
    };
    // A listing is work done for the caller: it takes one of its slots.
    let slot = super::calls::take_slot(&api, &caller)?;
    let page = tokio::task::spawn_blocking(move || {
        let _slot = slot;
        match caller.ask(&api, Request::JobsList(query))? {
            Answer::Jobs(page) => Ok(page),
            _ => Err(ApiError::internal(
                "the engine answered a listing with something else",
            )),
        }
    })
    .await
    .map_err(ApiError::internal)??;
    let link = page.next.as_ref().map(|next| next_link(&q, limit, next));
    let mut answer = Json(page).into_response();
    if let Some(v) = link.and_then(|l| axum::http::HeaderValue::from_str(&l).ok()) {
        answer.headers_mut().insert(axum::http::header::LINK, v);
    }
    Ok(answer)
}

/// The `Link` header of the page below `next`, with the same filters.
fn next_link(q: &ListQuery, limit: usize, next: &str) -> String {
    let mut query = format!("limit={limit}&before={}", overlord::values::url_segment(next));
    for (key, value) in [
        ("function", &q.function),
        ("target", &q.target),
        ("schedule", &q.schedule),
    ] {
        if let Some(v) = value {
            query.push_str(&format!("&{key}={}", overlord::values::url_segment(v)));
        }
    }
    format!("</api/v1/jobs?{query}>; rel=\"next\"")
}

/// Job `id` is unknown to this caller (or expired).
fn unknown(id: &str) -> ApiError {
    ApiError::not_found(format!(
        "no job {} (unknown, or expired)",
        common::paths::shorten(id)
    ))
}

/// `GET /api/v1/jobs/{id}`.
#[utoipa::path(get, path = "/api/v1/jobs/{id}", tag = "jobs", operation_id = "getJob",
    summary = "A job's status (job_status --json)", params(JobIdParam),
    responses((status = 200, body = JobDoc), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 503, body = ErrorBody)))]
pub async fn one(
    caller: Caller,
    State(api): State<Arc<Api>>,
    Path(id): Path<String>,
) -> Result<Json<JobDoc>, ApiError> {
    tokio::task::spawn_blocking(move || {
        let id = caller.job_id(&api, &id)?;
        let look = overlord::engine::Look::Stored;
        let Answer::Status { id, status } = caller.ask(&api, Request::JobStatus { id, look })? else {
            return Err(ApiError::internal(
                "the engine answered a status with something else",
            ));
        };
        let meta = match &status.record {
            Some(record) => record.meta.clone(),
            None => return Err(unknown(&id)),
        };
        // The job_status document, and who started it, when, with what.
        Ok(Json(JobDoc {
            status: status.doc(&id),
            args: meta.args_json(),
            user: meta.user,
            target: meta.spec,
            started: meta.started,
            ended: meta.ended,
            batch: meta.batch,
            schedule: meta.schedule,
            rerun_of: meta.rerun_of,
        }))
    })
    .await
    .map_err(ApiError::internal)?
}

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ActiveQuery {
    /// The minions to ask (every minion when absent).
    spec: Option<String>,
}

/// `GET /api/v1/jobs/active`: what runs now on the minions, by overlord
/// job (the document of `func jobs active --json`); an administrator's.
#[utoipa::path(get, path = "/api/v1/jobs/active", tag = "jobs", operation_id = "activeJobs",
    summary = "What runs now on the minions, by job (func jobs active)", params(ActiveQuery),
    responses((status = 200, description = "{\"jobs\", \"other\", \"unreachable\"}: the document of func jobs active --json", body = Object),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody),
        (status = 404, description = "the SPEC names no minion", body = ErrorBody), (status = 429, body = ErrorBody),
        (status = 503, body = ErrorBody)))]
pub async fn active(
    caller: Caller,
    State(api): State<Arc<Api>>,
    Query(q): Query<ActiveQuery>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let spec = q.spec.filter(|s| !s.is_empty()).unwrap_or_else(|| "*".into());
    overlord::gate::call::check_spec("spec", &spec)?;
    let slot = super::calls::take_slot(&api, &caller)?;
    tokio::task::spawn_blocking(move || {
        let _slot = slot;
        let answer = caller.ask(&api, Request::JobsActive { spec })?;
        Ok(Json(answer.document()))
    })
    .await
    .map_err(ApiError::internal)?
}

#[derive(Deserialize, Default, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct KillRequest {
    /// A signal's name or number (KILL when absent).
    #[serde(default)]
    #[schema(default = "KILL")]
    signal: Option<String>,
    /// Whom the kill is for, as the minions are told: believed only from a
    /// certificate with the overlord mark (an overlord or relay forwarding
    /// its caller's kill); a token's kill is always its own.
    #[serde(default)]
    user: Option<String>,
}

/// The principal a kill is made for (`KillRequest::user`).
fn killer(caller: &Caller, claimed: Option<String>) -> String {
    let believable = |u: &String| {
        (1..=128).contains(&u.len()) && u.contains(':') && u.bytes().all(|b| b.is_ascii_graphic())
    };
    match (&caller.proof, claimed) {
        (super::auth::Proof::Certificate, Some(user)) if believable(&user) => user,
        _ => caller.user(),
    }
}

/// `POST /api/v1/jobs/{id}/kill`: 200 `{"job_id", "signalled": {host:
/// message | {"error"}}}`; the hosts' ends then come as events and in the
/// job's status.
#[utoipa::path(post, path = "/api/v1/jobs/{id}/kill", tag = "jobs", operation_id = "killJob",
    summary = "Signals the hosts still running the job", params(JobIdParam),
    request_body(content = Option<KillRequest>),
    responses((status = 200, body = Killed), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 408, body = ErrorBody), (status = 413, body = ErrorBody),
        (status = 415, body = ErrorBody), (status = 503, body = ErrorBody)))]
pub async fn kill(
    caller: Caller,
    State(api): State<Arc<Api>>,
    Path(id): Path<String>,
    Body(req): Body<KillRequest>,
) -> Result<Json<Killed>, ApiError> {
    let signal = req.signal.unwrap_or_else(|| "KILL".into());
    overlord::gate::jobs::signal(&signal)?;
    let user = killer(&caller, req.user);
    let (api2, caller2) = (Arc::clone(&api), caller.clone());
    // The hosts' ends come later, as events and in the job's status.
    let answer = tokio::task::spawn_blocking(move || -> Result<Answer, ApiError> {
        let id = caller2.job_id(&api2, &id)?;
        let request = Request::JobKill {
            id,
            signal,
            wait: false,
        };
        Ok(caller2.ask_for(&api2, request, user)?)
    })
    .await
    .map_err(ApiError::internal)??;
    let Answer::Killed {
        id,
        status,
        signalled,
    } = answer
    else {
        return Err(ApiError::internal(
            "the engine answered a kill with something else",
        ));
    };
    let Some(record) = &status.record else {
        return Err(unknown(&id));
    };
    let hosts: Vec<String> = record.hosts.keys().cloned().collect();
    api.audit
        .line(&caller.user(), caller.from, &format!("kill {id}"), &hosts, 200);
    // Already finished: nothing was signalled.
    let signalled = signalled
        .unwrap_or_default()
        .into_iter()
        .map(|(host, took)| (host, took.to_json()))
        .collect();
    Ok(Json(Killed {
        job_id: id,
        signalled,
    }))
}

/// This group's endpoints, each with its OpenAPI operation.
pub fn routes() -> utoipa_axum::router::OpenApiRouter<Arc<Api>> {
    use utoipa_axum::{router::OpenApiRouter, routes};
    OpenApiRouter::new()
        .routes(routes!(list))
        .routes(routes!(active))
        .routes(routes!(one))
        .routes(routes!(kill))
        .routes(routes!(super::rerun::rerun))
}
