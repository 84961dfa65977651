//! `GET /metrics` (admin only): Prometheus' text format — answers by
//! status, calls made, jobs and batches started, events published, event
//! streams open, and server errors — for the monitoring people already run.

use std::fmt::Write as _;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};

use super::auth::Caller;
use super::reply::ApiError;
use super::state::Api;

/// `GET /metrics`.
#[utoipa::path(get, path = "/metrics", tag = "meta", operation_id = "getMetrics",
    summary = "Counters in Prometheus' text format (administrators)",
    responses((status = 200, description = "metrics", content_type = "text/plain", body = String),
        (status = 401, body = super::reply::ErrorBody), (status = 403, body = super::reply::ErrorBody)))]
pub async fn metrics(caller: Caller, State(api): State<Arc<Api>>) -> Result<Response, ApiError> {
    if !caller.rights.admin {
        return Err(ApiError::forbidden("metrics are for administrators"));
    }
    let m = &api.metrics;
    let by_status = m.by_status();
    let streams: usize = api
        .streams
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .values()
        .sum();
    let mut out = String::new();
    out.push_str("# HELP func_api_requests_total Answers given, by HTTP status.\n# TYPE func_api_requests_total counter\n");
    for (status, n) in &by_status {
        let _ = writeln!(out, "func_api_requests_total{{status=\"{status}\"}} {n}");
    }
    let errors: u64 = by_status.iter().filter(|(s, _)| **s >= 500).map(|(_, n)| n).sum();
    let lines = [
        (
            "func_api_calls_total",
            "counter",
            "Calls accepted (POST /api/v1/calls).",
            m.calls.load(Ordering::Relaxed),
        ),
        (
            "func_api_jobs_started_total",
            "counter",
            "Async jobs and batches started.",
            m.jobs.load(Ordering::Relaxed),
        ),
        (
            "func_api_events_total",
            "counter",
            "Events published on the stream.",
            api.bus.published(),
        ),
        (
            "func_api_event_streams",
            "gauge",
            "Event streams open now.",
            streams as u64,
        ),
        (
            "func_api_errors_total",
            "counter",
            "Answers with a 5xx status.",
            errors,
        ),
    ];
    for (name, kind, help, value) in lines {
        let _ = write!(
            out,
            "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}\n"
        );
    }
    Ok(([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], out).into_response())
}
