//! `GET /api/v1/batches/{id}`: the `batch status --json` document.
//! `POST /api/v1/batches/{id}/stop {"kill"}`: stores a drain (or kill)
//! request its driver applies at its next step; answers the batch as it
//! is now (follow it with events or the status). `POST
//! /api/v1/batches/{id}/recover`: a batch whose driver died gets a new one
//! (never two). Limited tokens: as for jobs.

use std::sync::Arc;

use super::reply::Path;
use axum::extract::State;
use axum::Json;
use serde::Deserialize;
use serde_json::json;

use super::auth::Caller;
use super::reply::{ApiError, Body};
use super::state::Api;
use crate::batch::control::{self, Recovered};
use crate::batch::record::BatchRecord;
use crate::store::JobMeta;

fn unknown(id: &str) -> ApiError {
    ApiError::not_found(format!(
        "no batch {} (unknown, or expired)",
        common::paths::shorten(id)
    ))
}

/// The batch, if the caller may see it (else as unknown).
fn load_visible(api: &Api, caller: &Caller, id: &str) -> Result<(JobMeta, BatchRecord), ApiError> {
    // The id is read as every door reads one.
    crate::gate::JobRef::parse(id)?;
    let found = crate::batch::driver::load(&api.store, id).map_err(engine)?;
    let (meta, rec) = found.ok_or_else(|| unknown(id))?;
    if caller
        .rights
        .forbidden(&api.root, &meta.function, rec.state.hosts())
        .is_some()
    {
        return Err(unknown(id));
    }
    Ok((meta, rec))
}

fn engine(e: crate::error::EngineError) -> ApiError {
    match e {
        crate::error::EngineError::Store(s) => ApiError::store(s),
        other => ApiError::internal(other),
    }
}

/// `GET /api/v1/batches/{id}`.
pub async fn status(
    caller: Caller,
    State(api): State<Arc<Api>>,
    Path(id): Path<String>,
) -> Result<Json<serde_json::Value>, ApiError> {
    tokio::task::spawn_blocking(move || {
        let (meta, mut rec) = load_visible(&api, &caller, &id)?;
        control::with_recorded_ends(&api.store, &mut rec, &meta.id);
        Ok(Json(control::status_doc(&meta, &rec)))
    })
    .await
    .map_err(ApiError::internal)?
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct StopRequest {
    #[serde(default)]
    kill: bool,
}

/// `POST /api/v1/batches/{id}/stop`.
pub async fn stop(
    caller: Caller,
    State(api): State<Arc<Api>>,
    Path(id): Path<String>,
    Body(req): Body<StopRequest>,
) -> Result<Json<serde_json::Value>, ApiError> {
    tokio::task::spawn_blocking(move || {
        let (_, before) = load_visible(&api, &caller, &id)?;
        let hosts: Vec<String> = before
            .state
            .pending
            .iter()
            .chain(before.state.active.keys())
            .cloned()
            .collect();
        let (meta, rec) = control::request_stop(&api.store, &id, req.kill)
            .map_err(engine)?
            .ok_or_else(|| unknown(&id))?;
        let what = if req.kill { "kill" } else { "stop" };
        api.audit.line(
            &caller.name,
            caller.from,
            &format!("batch {what} {id}"),
            &hosts,
            200,
        );
        Ok(Json(json!({
            "job_id": meta.id,
            "requested": what,
            "state": control::state_word(&rec),
            "complete": rec.complete,
            "driver_alive": !rec.orphaned() && !rec.complete,
            "counts": rec.state.counts(),
        })))
    })
    .await
    .map_err(ApiError::internal)?
}

/// `POST /api/v1/batches/{id}/recover`.
pub async fn recover(
    caller: Caller,
    State(api): State<Arc<Api>>,
    Path(id): Path<String>,
) -> Result<Json<serde_json::Value>, ApiError> {
    tokio::task::spawn_blocking(move || {
        let (meta, rec) = load_visible(&api, &caller, &id)?;
        let hosts: Vec<String> = rec
            .state
            .pending
            .iter()
            .chain(rec.state.active.keys())
            .cloned()
            .collect();
        let (outcome, driver) = control::recover(&api.store, &api.root, &api.exe, &id).map_err(engine)?;
        if let Some(child) = driver {
            super::state::reap(child);
        }
        let outcome = match outcome {
            Recovered::Missing => return Err(unknown(&id)),
            Recovered::Ended(word) => {
                json!({"job_id": meta.id, "outcome": "nothing to recover", "state": word})
            }
            Recovered::Held {
                pid,
                host,
                lease_left,
            } => json!({"job_id": meta.id, "outcome": "nothing to recover",
                "state": "running", "driver_pid": pid, "driver_host": host, "lease_left": lease_left}),
            Recovered::Resumed => json!({"job_id": meta.id, "outcome": "resumed", "state": "running"}),
        };
        api.audit.line(
            &caller.name,
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
