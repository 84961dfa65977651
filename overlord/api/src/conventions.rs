//! HTTP conventions every endpoint keeps (DESIGN §14), in one middleware:
//! unknown query parameters are a 400 (an AWX-style `?page=2` must not
//! silently give page 1); a request body that is not JSON is a 415; 429 and
//! 503 answers carry `Retry-After`; browsers on the origins named in `[api]
//! cors_origins` (default none) may call the API (a preflight is answered
//! here); and every answer is counted for `GET /metrics`.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::reply::ApiError;
use super::state::Api;

/// The middleware.
pub async fn conventions(State(api): State<Arc<Api>>, req: Request, next: Next) -> Response {
    let origin = req
        .headers()
        .get(header::ORIGIN)
        .and_then(|v| v.to_str().ok())
        .filter(|o| api.settings.cors_origins.iter().any(|allowed| allowed == o))
        .map(str::to_string);
    let mut answer = match check(&req) {
        Err(refused) => refused.into_response(),
        Ok(()) if req.method() == Method::OPTIONS && origin.is_some() => preflight(),
        Ok(()) => next.run(req).await,
    };
    let status = answer.status();
    if matches!(
        status,
        StatusCode::TOO_MANY_REQUESTS | StatusCode::SERVICE_UNAVAILABLE
    ) && !answer.headers().contains_key(header::RETRY_AFTER)
    {
        let after = if status == StatusCode::TOO_MANY_REQUESTS {
            "1"
        } else {
            "5"
        };
        answer
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static(after));
    }
    if let Some(origin) = origin.and_then(|o| HeaderValue::from_str(&o).ok()) {
        let h = answer.headers_mut();
        h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
        h.insert(header::VARY, HeaderValue::from_static("Origin"));
        h.insert(
            header::ACCESS_CONTROL_EXPOSE_HEADERS,
            HeaderValue::from_static("Location, Link, Retry-After"),
        );
    }
    api.metrics.answered(status.as_u16());
    answer
}

/// Unknown query parameters, and bodies that are not JSON.
fn check(req: &Request) -> Result<(), ApiError> {
    // The parameters each path takes are those its OpenAPI operations declare.
    let allowed = req
        .uri()
        .path()
        .starts_with("/api/v1/")
        .then(|| super::openapi::query_parameters(req.uri().path()));
    if let (Some(allowed), Some(query)) = (allowed, req.uri().query()) {
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let name = pair.split_once('=').map_or(pair, |(n, _)| n);
            if !allowed.iter().any(|a| a == name) {
                let takes = match allowed.is_empty() {
                    true => "no query parameters".to_string(),
                    false => format!("only {}", allowed.join(", ")),
                };
                return Err(ApiError::bad(format!(
                    "unknown query parameter {:?}: this endpoint takes {takes}",
                    common::paths::shorten(name)
                )));
            }
        }
    }
    let has_body = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim() != "0")
        || req.headers().contains_key(header::TRANSFER_ENCODING);
    let json = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.split(';').next().unwrap_or("").trim().to_ascii_lowercase())
        .is_none_or(|t| t == "application/json" || t.ends_with("+json"));
    if has_body && !json && req.uri().path().starts_with("/api/") {
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "request bodies are JSON (Content-Type: application/json)",
        ));
    }
    Ok(())
}

/// The answer to a CORS preflight from an allowed origin.
fn preflight() -> Response {
    let mut r = StatusCode::NO_CONTENT.into_response();
    let h = r.headers_mut();
    h.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static("GET, POST, PATCH, DELETE"),
    );
    h.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        HeaderValue::from_static("Authorization, Content-Type, Last-Event-ID"),
    );
    h.insert(header::ACCESS_CONTROL_MAX_AGE, HeaderValue::from_static("600"));
    r
}
