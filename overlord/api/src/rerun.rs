//! `POST /api/v1/jobs/{id}/rerun[?failed_only=true]` (AWX's relaunch, DESIGN
//! §14): 202 and a new job from the same signed request — every host, or
//! with `failed_only` those that failed, were unreachable or timed out. A
//! job the caller may not see is unknown (404); the caller needs the rights
//! the original needed on the hosts re-run; nothing failed is a 409. The new
//! job is the caller's (signed with its rights) and names the original
//! (`rerun_of`).

use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};

use super::auth::Caller;
use super::reply::{ApiError, ErrorBody, JobIdParam, Path, Query};
use super::state::Api;
use overlord::gate::GateError;

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RerunQuery {
    /// Only the hosts that failed, were unreachable or timed out.
    failed_only: Option<bool>,
}

/// The re-run that was started.
#[derive(Serialize, utoipa::ToSchema)]
pub struct Rerun {
    pub job_id: String,
    pub rerun_of: String,
    /// Hosts it runs on.
    pub hosts: usize,
}

/// `POST /api/v1/jobs/{id}/rerun`.
#[utoipa::path(post, path = "/api/v1/jobs/{id}/rerun", tag = "jobs", operation_id = "rerunJob",
    summary = "Runs a job again as a new job (all hosts, or those that failed)", params(JobIdParam, RerunQuery),
    responses((status = 202, body = Rerun, headers(("Location" = String, description = "the new job"))),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 409, description = "no host failed", body = ErrorBody),
        (status = 429, body = ErrorBody), (status = 503, body = ErrorBody)))]
pub async fn rerun(
    caller: Caller,
    State(api): State<Arc<Api>>,
    Path(id): Path<String>,
    Query(q): Query<RerunQuery>,
) -> Result<Response, ApiError> {
    let failed_only = q.failed_only.unwrap_or(false);
    overlord::gate::JobRef::parse(&id)?;
    let _slot = super::calls::take_slot(&api, &caller)?;
    let (api2, caller2, id2) = (Arc::clone(&api), caller.clone(), id.clone());
    let started = tokio::task::spawn_blocking(move || -> Result<(String, Vec<String>, String), GateError> {
        let id2 = caller2.job_id(&api2, &id2)?;
        let request = overlord::engine::Request::JobRerun {
            id: id2,
            failed: failed_only,
        };
        match caller2.ask(&api2, request)? {
            overlord::engine::Answer::Rerun { id, of, hosts } => Ok((id, hosts, of)),
            _ => Err(GateError::Engine(overlord::error::EngineError::Setup(
                "the engine answered a re-run with something else".into(),
            ))),
        }
    })
    .await
    .map_err(ApiError::internal)?;
    let action = |id: &str| format!("rerun {id}{}", if failed_only { " failed" } else { "" });
    let (new_id, hosts, original) = match started {
        Ok(s) => s,
        Err(e) => {
            api.audit
                .line(&caller.user(), caller.from, &action(&id), &[], e.http_status());
            return Err(e.into());
        }
    };
    let count = hosts.len();
    api.audit
        .line(&caller.user(), caller.from, &action(&original), &hosts, 202);
    api.metrics
        .jobs
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let location = format!("/api/v1/jobs/{}", overlord::values::url_segment(&new_id));
    let mut answer = (
        StatusCode::ACCEPTED,
        Json(Rerun {
            job_id: new_id,
            rerun_of: original,
            hosts: count,
        }),
    )
        .into_response();
    if let Ok(v) = axum::http::HeaderValue::from_str(&location) {
        answer.headers_mut().insert(axum::http::header::LOCATION, v);
    }
    Ok(answer)
}
