//! JSON in and out: request bodies read under the size limit and parsed
//! into typed values (a bad one is 400, too large 413, never echoed), and
//! every error as `{"error": "…"}` with its status.

use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;

/// An error answer.
#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub message: String,
}

impl ApiError {
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        ApiError {
            status,
            message: message.into(),
        }
    }
    pub fn bad(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, message)
    }
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, message)
    }
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, message)
    }
    pub fn internal(message: impl std::fmt::Display) -> Self {
        tracing::warn!(error = %message, "request failed");
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, message.to_string())
    }
    /// The job store failed: 503, the service stays up.
    pub fn store(e: impl std::fmt::Display) -> Self {
        tracing::warn!(error = %e, "job store");
        Self::new(StatusCode::SERVICE_UNAVAILABLE, format!("job store: {e}"))
    }
}

/// A job id in a path (`last`: the caller's newest job).
#[derive(serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Path)]
pub struct JobIdParam {
    /// A job id (or `last`).
    #[param(min_length = 1, max_length = 4560)]
    #[allow(dead_code)]
    id: String,
}

/// The engine failed: the store's 503, else 500.
impl From<overlord::error::EngineError> for ApiError {
    fn from(e: overlord::error::EngineError) -> Self {
        match e {
            overlord::error::EngineError::Store(s) => ApiError::store(s),
            other => ApiError::internal(other),
        }
    }
}

/// A body over `limit` bytes: 413.
pub fn too_large(limit: usize) -> ApiError {
    ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        format!("request body over {limit} bytes"),
    )
}

/// Too many requests without credentials in progress: 503, try again soon.
pub fn busy_anonymous() -> Response {
    let mut r = ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "too many requests without credentials in progress: try again shortly",
    )
    .into_response();
    r.headers_mut().insert(
        axum::http::header::RETRY_AFTER,
        axum::http::HeaderValue::from_static("1"),
    );
    r
}

/// Every error's body.
#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct ErrorBody {
    pub error: String,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ErrorBody { error: self.message };
        let mut r = (self.status, axum::Json(body)).into_response();
        if self.status == StatusCode::UNAUTHORIZED {
            r.headers_mut().insert(
                axum::http::header::WWW_AUTHENTICATE,
                axum::http::HeaderValue::from_static("Bearer realm=\"func-api\""),
            );
        }
        r
    }
}

/// A JSON body of type `T`; a missing or empty body is `{}`.
pub struct Body<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for Body<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = axum::body::Bytes::from_request(req, state).await.map_err(|e| {
            let status = e.status();
            match status {
                StatusCode::PAYLOAD_TOO_LARGE => ApiError::new(status, "request body too large"),
                _ => ApiError::new(status, "cannot read the request body"),
            }
        })?;
        let text: &[u8] = if bytes.iter().all(u8::is_ascii_whitespace) {
            b"{}"
        } else {
            &bytes
        };
        serde_json::from_slice(text).map(Body).map_err(|e| {
            ApiError::bad(format!(
                "bad JSON body: {}",
                common::paths::shorten(&e.to_string())
            ))
        })
    }
}

/// A query string of type `T`; a bad one is 400 with a JSON error.
pub struct Query<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> axum::extract::FromRequestParts<S> for Query<T> {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &S,
    ) -> Result<Self, Self::Rejection> {
        axum::extract::Query::<T>::from_request_parts(parts, state)
            .await
            .map(|q| Query(q.0))
            .map_err(|_| ApiError::bad("bad query string (see /api/v1/openapi.json)"))
    }
}

/// Path parameters of type `T`; bad ones are 400 with a JSON error.
pub struct Path<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + Send> axum::extract::FromRequestParts<S> for Path<T> {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &S,
    ) -> Result<Self, Self::Rejection> {
        axum::extract::Path::<T>::from_request_parts(parts, state)
            .await
            .map(|p| Path(p.0))
            .map_err(|_| ApiError::bad("bad path (an id or name that is not UTF-8?)"))
    }
}

/// A method the path does not take.
pub async fn method_not_allowed() -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method not allowed here (see /api/v1/openapi.json)",
    )
}

/// Any other path: JSON under `/api/`, a page of the web UI elsewhere.
pub async fn not_found(uri: axum::http::Uri) -> Response {
    if uri.path().starts_with("/api/") || uri.path() == "/metrics" {
        return ApiError::not_found("no such endpoint (see /api/v1/openapi.json)").into_response();
    }
    super::web::missing_page().await
}

/// An error with its causes on one line, bounded (for a page, a log or an
/// audit line: the crates' errors name URLs and statuses, never secrets).
pub fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text.chars().take(500).collect()
}
