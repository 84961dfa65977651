//! `POST /api/v1/calls {"spec", "module", "method", "args", "async",
//! "batch", "batch_wait", "failhard", "timeout", "exclude"}`. The request
//! is checked by the gate (`gate::Call`, as every door's call) and judged — targets resolved, the caller's
//! rights checked on every host and the method (403, nothing sent), its
//! share of calls in progress taken (429) — before anything is sent.
//! Synchronous: 200 and `{host: result}` (the document of `func … --json`),
//! called over the warm pool. Async or batch: 202 `{"job_id"}`, run by the
//! same detached drivers as `func`'s.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;

use super::auth::Caller;
use super::reply::{ApiError, Body, ErrorBody};
use super::state::Api;
use overlord::engine::Answer;
use overlord::gate::{self, CallFields, GateError, Run};

impl From<GateError> for ApiError {
    /// The gate's one mapping from error kind to HTTP status.
    fn from(e: GateError) -> Self {
        let status = StatusCode::from_u16(e.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        match status {
            StatusCode::SERVICE_UNAVAILABLE => ApiError::store(e),
            StatusCode::INTERNAL_SERVER_ERROR => ApiError::internal(e),
            _ => ApiError::new(status, e.to_string()),
        }
    }
}

/// A job started (async or batch): follow it by its id.
#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct JobId {
    pub job_id: String,
    /// Hosts the SPEC named that could not judge the call's fact filter:
    /// not in the job, never called, each with its error (absent when none).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    #[schema(value_type = Object)]
    pub not_called: BTreeMap<String, serde_json::Value>,
}

/// `POST /api/v1/calls`.
#[utoipa::path(post, path = "/api/v1/calls", tag = "calls", operation_id = "runCall",
    summary = "Runs a method: synchronously (200), async or as a batch (202)",
    request_body = CallFields,
    responses(
        (status = 200, description = "{host: result}: the document of func --json", body = Object),
        (status = 202, description = "started", body = JobId,
            headers(("Location" = String, description = "the job (or batch) to follow"))),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody),
        (status = 404, description = "the SPEC names no minion", body = ErrorBody), (status = 408, body = ErrorBody),
        (status = 413, body = ErrorBody), (status = 415, body = ErrorBody), (status = 429, body = ErrorBody),
        (status = 503, body = ErrorBody)))]
pub async fn call(
    caller: Caller,
    State(api): State<Arc<Api>>,
    Body(fields): Body<CallFields>,
) -> Result<Response, ApiError> {
    let mut call = gate::Call::new(fields)?;
    // A service never drives a batch itself: every batch has its own
    // driver, and the answer is its id (202), as for an async call.
    if let Run::Batch { detached, .. } = &mut call.run {
        *detached = true;
    }
    let run = call.run.clone();
    let function = call.function();
    let action = format!("call {function}");
    // One hop to a blocking thread: the gate judges the call (targets
    // resolved, the caller's rights on every host and the method), then
    // the engine makes it: now over the kept connections, or as a job
    // (`force_async` too); a fact filter judged by the hosts first.
    let (api2, caller2) = (Arc::clone(&api), caller.clone());
    let done = tokio::task::spawn_blocking(move || {
        let resolved =
            gate::rights::authorize_call(&api2.root, &caller2.rights, &call).map_err(Judged::Refused)?;
        let named: Vec<String> = resolved.iter().map(|t| t.name.clone()).collect();
        // Held until the call is made (below), as the caller's share.
        let slot = take_slot(&api2, &caller2).map_err(Judged::Busy)?;
        api2.metrics
            .calls
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok((caller2.call(&api2, call, Some(resolved)), named, slot))
    })
    .await
    .map_err(ApiError::internal)?;
    let (done, named, _slot) = match done {
        Ok(made) => made,
        Err(Judged::Refused(e)) => {
            if matches!(e, GateError::Forbidden(_)) {
                api.audit.line(&caller.user(), caller.from, &action, &[], 403);
            }
            return Err(e.into());
        }
        Err(Judged::Busy(e)) => return Err(e),
    };
    // A call now is made here, on the service's runtime.
    let done = match done {
        Ok((ready, unjudged)) => ready
            .finish()
            .await
            .map(|a| (a, unjudged))
            .map_err(GateError::from),
        Err(e) => Err(e),
    };
    let (answer, hosts) = match done {
        Ok((Answer::Results { results, .. }, _)) => {
            let hosts = results.keys().cloned().collect();
            (Ok(results_doc(&results)), hosts)
        }
        Ok((Answer::Started { id, hosts, .. }, unjudged)) => {
            api.metrics
                .jobs
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let batch = matches!(run, Run::Batch { .. });
            (Ok(started(id, batch, &unjudged)), hosts)
        }
        Ok(_) => (
            Err(ApiError::internal(
                "the engine answered a call with something else",
            )),
            named,
        ),
        Err(e) => (Err(ApiError::from(e)), named),
    };
    let status = answer.as_ref().map_or_else(|e| e.status, |r| r.status());
    api.audit
        .line(&caller.user(), caller.from, &action, &hosts, status.as_u16());
    if super::trim::due(hosts.len()) {
        tokio::task::spawn_blocking(super::trim::release);
    }
    answer
}

/// Why a call was not made: the gate refused it, or the caller has no
/// slot left for calls in progress.
enum Judged {
    Refused(GateError),
    Busy(ApiError),
}

/// One of the caller's slots for calls in progress, or 429.
pub fn take_slot(api: &Api, caller: &Caller) -> Result<tokio::sync::OwnedSemaphorePermit, ApiError> {
    let slots = {
        let mut busy = api.busy.lock().unwrap_or_else(|p| p.into_inner());
        if busy.len() > 10_000 {
            busy.retain(|_, s| s.available_permits() < api.settings.calls_per_token);
        }
        Arc::clone(
            busy.entry(caller.name.clone())
                .or_insert_with(|| Arc::new(tokio::sync::Semaphore::new(api.settings.calls_per_token))),
        )
    };
    slots.try_acquire_owned().map_err(|_| {
        ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            format!(
                "{} calls of this caller are in progress ([api] calls_per_token)",
                api.settings.calls_per_token
            ),
        )
    })
}

/// `{host: result}`: the document of `func … --json`.
fn results_doc(results: &BTreeMap<String, common::Value>) -> Response {
    let doc: serde_json::Map<String, serde_json::Value> = results
        .iter()
        .map(|(h, v)| (h.clone(), overlord::values::to_json(v)))
        .collect();
    (StatusCode::OK, Json(serde_json::Value::Object(doc))).into_response()
}

/// 202 `{"job_id", "not_called"}` with where to follow it.
fn started(id: String, batch: bool, unjudged: &BTreeMap<String, common::Value>) -> Response {
    // Where to follow it: the batch's page for a batch, else the job's.
    let kind = if batch { "batches" } else { "jobs" };
    let location = format!("/api/v1/{kind}/{}", overlord::values::url_segment(&id));
    let mut answer = (
        StatusCode::ACCEPTED,
        Json(JobId {
            job_id: id,
            not_called: unjudged
                .iter()
                .map(|(h, v)| (h.clone(), overlord::values::to_json(v)))
                .collect(),
        }),
    )
        .into_response();
    if let Ok(v) = axum::http::HeaderValue::from_str(&location) {
        answer.headers_mut().insert(axum::http::header::LOCATION, v);
    }
    answer
}
