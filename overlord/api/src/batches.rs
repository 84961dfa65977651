//! `GET /api/v1/batches/{id}`: the `batch status --json` document.
//! `POST /api/v1/batches/{id}/stop {"kill"}`: stores a drain (or kill)
//! request its driver applies at its next step; answers the batch as it
//! is now (follow it with events or the status). `POST
//! /api/v1/batches/{id}/recover`: a batch whose driver died gets a new one
//! (never two). Limited tokens: as for jobs.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::reply::Path;
use axum::extract::State;
use axum::Json;
use serde::{Deserialize, Serialize};

use super::auth::Caller;
use super::reply::{ApiError, Body, ErrorBody, JobIdParam};
use super::state::Api;
use overlord::batch::control::{self, BatchDoc, Recovered};
use overlord::batch::record::BatchRecord;
use overlord::engine::{Answer, Request};
use overlord::store::JobMeta;

fn unknown(id: &str) -> ApiError {
    ApiError::not_found(format!(
        "no batch {} (unknown, or expired)",
        common::paths::shorten(id)
    ))
}

/// Asks the engine, as `caller`.
fn ask(api: &Api, caller: &Caller, request: Request) -> Result<Answer, ApiError> {
    Ok(caller.ask(api, request)?)
}

/// The batch as it is now, if the caller may see it (the engine decides;
/// else as unknown).
fn load_visible(api: &Api, caller: &Caller, id: &str) -> Result<(JobMeta, BatchRecord), ApiError> {
    // The id is read as every door reads one.
    overlord::gate::JobRef::parse(id)?;
    match ask(api, caller, Request::BatchStatus { id: id.to_string() })? {
        Answer::BatchStatus {
            found: Some(found), ..
        } => Ok(found),
        _ => Err(unknown(id)),
    }
}

/// `GET /api/v1/batches/{id}`.
#[utoipa::path(get, path = "/api/v1/batches/{id}", tag = "batches", operation_id = "getBatch",
    summary = "A batch's status (batch status --json)", params(JobIdParam),
    responses((status = 200, body = BatchDoc), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 503, body = ErrorBody)))]
pub async fn status(
    caller: Caller,
    State(api): State<Arc<Api>>,
    Path(id): Path<String>,
) -> Result<Json<BatchDoc>, ApiError> {
    tokio::task::spawn_blocking(move || {
        let (meta, rec) = load_visible(&api, &caller, &id)?;
        Ok(Json(control::status_doc(&meta, &rec)))
    })
    .await
    .map_err(ApiError::internal)?
}

#[derive(Deserialize, Default, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StopRequest {
    /// Also kill the hosts in flight (else they finish; none is started).
    #[serde(default)]
    kill: bool,
}

/// The batch as a stop request left it (its driver applies the request
/// at its next step).
#[derive(Serialize, utoipa::ToSchema)]
pub struct StopRequested {
    pub job_id: String,
    /// `stop` or `kill`.
    pub requested: &'static str,
    pub state: String,
    pub complete: bool,
    pub driver_alive: bool,
    pub counts: BTreeMap<&'static str, usize>,
}

/// What a recover did.
#[derive(Serialize, utoipa::ToSchema)]
pub struct RecoverOutcome {
    pub job_id: String,
    /// `resumed` or `nothing to recover`.
    pub outcome: &'static str,
    pub state: String,
    /// The driver that still holds it (when nothing was recovered for that).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub driver_pid: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub driver_host: Option<String>,
    /// Seconds its lease has left.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lease_left: Option<f64>,
}

/// `POST /api/v1/batches/{id}/stop`.
#[utoipa::path(post, path = "/api/v1/batches/{id}/stop", tag = "batches", operation_id = "stopBatch",
    summary = "Drains a batch (kill: also kills in-flight hosts)", params(JobIdParam),
    request_body(content = Option<StopRequest>),
    responses((status = 200, body = StopRequested), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 408, body = ErrorBody), (status = 413, body = ErrorBody),
        (status = 415, body = ErrorBody), (status = 503, body = ErrorBody)))]
pub async fn stop(
    caller: Caller,
    State(api): State<Arc<Api>>,
    Path(id): Path<String>,
    Body(req): Body<StopRequest>,
) -> Result<Json<StopRequested>, ApiError> {
    tokio::task::spawn_blocking(move || {
        let (_, before) = load_visible(&api, &caller, &id)?;
        let hosts: Vec<String> = before
            .state
            .pending
            .iter()
            .chain(before.state.active.keys())
            .cloned()
            .collect();
        let request = Request::BatchStop {
            id: id.clone(),
            kill: req.kill,
            wait: false,
        };
        let Answer::BatchStop {
            found: Some((meta, rec)),
            ..
        } = ask(&api, &caller, request)?
        else {
            return Err(unknown(&id));
        };
        let what = if req.kill { "kill" } else { "stop" };
        api.audit.line(
            &caller.user(),
            caller.from,
            &format!("batch {what} {id}"),
            &hosts,
            200,
        );
        Ok(Json(StopRequested {
            job_id: meta.id,
            requested: what,
            state: control::state_word(&rec),
            complete: rec.complete,
            driver_alive: !rec.orphaned() && !rec.complete,
            counts: rec.state.counts(),
        }))
    })
    .await
    .map_err(ApiError::internal)?
}

/// `POST /api/v1/batches/{id}/recover`.
#[utoipa::path(post, path = "/api/v1/batches/{id}/recover", tag = "batches", operation_id = "recoverBatch",
    summary = "Resumes a batch whose driver died", params(JobIdParam),
    responses((status = 200, body = RecoverOutcome), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 503, body = ErrorBody)))]
pub async fn recover(
    caller: Caller,
    State(api): State<Arc<Api>>,
    Path(id): Path<String>,
) -> Result<Json<RecoverOutcome>, ApiError> {
    tokio::task::spawn_blocking(move || {
        let (meta, rec) = load_visible(&api, &caller, &id)?;
        let hosts: Vec<String> = rec
            .state
            .pending
            .iter()
            .chain(rec.state.active.keys())
            .cloned()
            .collect();
        let request = Request::BatchRecover { id: Some(id.clone()) };
        let Answer::Recovered(mut done) = ask(&api, &caller, request)? else {
            return Err(unknown(&id));
        };
        let outcome = done.pop().map_or(Recovered::Missing, |(_, outcome, _)| outcome);
        let answer = |outcome, state| RecoverOutcome {
            job_id: meta.id.clone(),
            outcome,
            state,
            driver_pid: None,
            driver_host: None,
            lease_left: None,
        };
        let outcome = match outcome {
            Recovered::Missing => return Err(unknown(&id)),
            Recovered::Ended(word) => answer("nothing to recover", word),
            Recovered::Held {
                pid,
                host,
                lease_left,
            } => RecoverOutcome {
                driver_pid: Some(pid),
                driver_host: host,
                lease_left,
                ..answer("nothing to recover", "running".into())
            },
            Recovered::Resumed => answer("resumed", "running".into()),
        };
        api.audit.line(
            &caller.user(),
            caller.from,
            &format!("batch recover {id}"),
            &hosts,
            200,
        );
        Ok(Json(outcome))
    })
    .await
    .map_err(ApiError::internal)?
}

/// This group's endpoints, each with its OpenAPI operation.
pub fn routes() -> utoipa_axum::router::OpenApiRouter<Arc<Api>> {
    use utoipa_axum::{router::OpenApiRouter, routes};
    OpenApiRouter::new()
        .routes(routes!(status))
        .routes(routes!(stop))
        .routes(routes!(recover))
}
