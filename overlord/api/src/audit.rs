//! `GET /api/v1/audit[?limit=&before=&user=&action=]`: the audit trail —
//! func-api's, `func`'s and the scheduler's lines (who, from where, what,
//! on which hosts, the status) — newest first, a page at a time (`next` is
//! the `before` of the next page), filtered by globs over who and the
//! action. Administrators, or a token whose rule grants `@audit.read`.
//! Its text is data: the web UI shows it as text, never markup.

use std::sync::Arc;

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};

use super::auth::Caller;
use super::reply::{ApiError, ErrorBody, Query};
use super::state::Api;
use overlord::gate::rights::ops;

const DEFAULT_LIMIT: usize = 100;
const MAX_LIMIT: usize = 1000;

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AuditQuery {
    /// Lines on the page (1 to 1000, 100 when absent).
    #[param(minimum = 1, maximum = 1000)]
    limit: Option<usize>,
    /// The `next` of the previous page.
    before: Option<u64>,
    /// A glob over who (`api:NAME` is a token's, `cli:USER` the command
    /// line's, `cert:CN` a certificate's).
    user: Option<String>,
    /// A glob over the action (`call *`, `keys *`, `schedule *`).
    action: Option<String>,
}

/// A page of the audit trail, newest first.
#[derive(Serialize, utoipa::ToSchema)]
pub struct AuditPage {
    /// Each line as written (`time`, `who`, `from`, `action`, `hosts`,
    /// `host_count`, `status` and `status_kind`: `http` for func-api's and
    /// the scheduler's, `exit` for the command line's, whose lines also have
    /// `spec`), with `id`.
    #[schema(value_type = Vec<Object>)]
    pub lines: Vec<serde_json::Value>,
    /// The `before` of the next page (null: this is the last).
    pub next: Option<u64>,
}

/// `GET /api/v1/audit`.
#[utoipa::path(get, path = "/api/v1/audit", tag = "audit", operation_id = "listAudit",
    summary = "The audit trail of func-api and func, newest first", params(AuditQuery),
    responses((status = 200, body = AuditPage,
            headers(("Link" = String, description = "<…>; rel=\"next\" when there is a next page"))),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody),
        (status = 503, body = ErrorBody)))]
pub async fn list(
    caller: Caller,
    State(api): State<Arc<Api>>,
    Query(q): Query<AuditQuery>,
) -> Result<Response, ApiError> {
    if !caller.rights.may_operate(ops::AUDIT_READ, None) {
        return Err(ApiError::forbidden("this caller may not read the audit trail"));
    }
    let limit = q.limit.unwrap_or(DEFAULT_LIMIT);
    if !(1..=MAX_LIMIT).contains(&limit) {
        return Err(ApiError::bad(format!("limit: 1 to {MAX_LIMIT}")));
    }
    let glob = |what: &str, text: &Option<String>| -> Result<Option<glob::Pattern>, ApiError> {
        text.as_deref()
            .filter(|t| !t.is_empty())
            .map(|t| overlord::gate::jobs::glob(what, t).map_err(ApiError::from))
            .transpose()
    };
    let (who, action) = (glob("user", &q.user)?, glob("action", &q.action)?);
    let before = q.before;
    let root = api.root.clone();
    let page = tokio::task::spawn_blocking(move || {
        let matches = |p: &Option<glob::Pattern>, v: &serde_json::Value| {
            p.as_ref()
                .is_none_or(|p| v.as_str().is_some_and(|s| p.matches(s)))
        };
        let keep = |l: &serde_json::Value| matches(&who, &l["who"]) && matches(&action, &l["action"]);
        overlord::audit::page(&root, limit, before, &keep)
    })
    .await
    .map_err(ApiError::internal)?
    .map_err(|e| ApiError::internal(format!("reading the audit log: {e}")))?;
    let mut answer = Json(AuditPage {
        next: page.next,
        lines: page.lines,
    })
    .into_response();
    if let Some(next) = page.next {
        let mut link = format!("/api/v1/audit?limit={limit}&before={next}");
        for (k, v) in [("user", &q.user), ("action", &q.action)] {
            if let Some(v) = v.as_deref().filter(|v| !v.is_empty()) {
                link.push_str(&format!("&{k}={}", overlord::values::url_segment(v)));
            }
        }
        if let Ok(v) = axum::http::HeaderValue::from_str(&format!("<{link}>; rel=\"next\"")) {
            answer.headers_mut().insert(axum::http::header::LINK, v);
        }
    }
    Ok(answer)
}
