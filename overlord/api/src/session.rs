//! Browser sessions: `POST /api/v1/login {"token"}` sets an HttpOnly,
//! Secure, SameSite=Strict cookie that lasts as long as the token; `POST
//! /api/v1/logout` ends it. The sessions themselves: `sessions.rs`.

use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};

use super::auth::COOKIE;
use super::reply::{ApiError, Body, ErrorBody};
use super::state::{Api, Peer};
use super::tokens;

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Login {
    token: String,
}

/// Who the session is.
#[derive(Serialize, utoipa::ToSchema)]
pub struct LoggedIn {
    pub name: String,
    pub admin: bool,
    /// When the token (and so the session) expires (epoch seconds).
    pub expires: f64,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct LoggedOut {
    pub ok: bool,
}

/// A login from our own page, or from a program: it carries the
/// `X-Func-CSRF` header (which no other site can make a browser send
/// without a CORS preflight we never allow) or an `Origin` that is this
/// service's own. Else another site could log a visitor's browser in
/// with the site's token (login CSRF). Judged from the head, before the
/// body is read.
pub struct SameOrigin;

impl axum::extract::FromRequestParts<Arc<Api>> for SameOrigin {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        _: &Arc<Api>,
    ) -> Result<Self, Self::Rejection> {
        let headers = &parts.headers;
        if headers.contains_key(super::auth::CSRF_HEADER) {
            return Ok(SameOrigin);
        }
        let origin = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok());
        let host = headers.get(header::HOST).and_then(|v| v.to_str().ok());
        match (origin, host) {
            (Some(o), Some(h)) if o.eq_ignore_ascii_case(&format!("https://{h}")) => Ok(SameOrigin),
            _ => Err(ApiError::forbidden(format!(
                "a login needs the {} header or this service's own Origin",
                super::auth::CSRF_HEADER
            ))),
        }
    }
}

/// `POST /api/v1/login`.
#[utoipa::path(post, path = "/api/v1/login", tag = "session", operation_id = "login", security(),
    summary = "A session cookie for a token (browsers)",
    description = "Needs the X-Func-CSRF header or this service's own Origin (no login CSRF); the body (at most 4 KiB) must arrive within 5 s.",
    params(("X-Func-CSRF" = Option<String>, Header, description = "any value")),
    request_body = Login,
    responses((status = 200, description = "logged in; Set-Cookie: func_session (HttpOnly, Secure, SameSite=Strict)", body = LoggedIn),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody),
        (status = 408, body = ErrorBody), (status = 413, body = ErrorBody), (status = 415, body = ErrorBody),
        (status = 429, body = ErrorBody), (status = 503, body = ErrorBody)))]
pub async fn login(
    State(api): State<Arc<Api>>,
    peer: Option<axum::Extension<Peer>>,
    _: SameOrigin,
    Body(body): Body<Login>,
) -> Result<Response, ApiError> {
    let from = peer.map(|p| p.0.addr.ip().to_canonical());
    let hash = tokens::hash(body.token.trim());
    let token = api.tokens.lock().unwrap_or_else(|p| p.into_inner()).find(&hash);
    let Some(token) = token else {
        // Failing again and again from one address: 429 for a while (a
        // valid token from it is still let in).
        if from.is_some_and(|a| api.failures.blocked(a)) {
            return Err(super::auth::too_many_failures());
        }
        if from.is_none_or(|a| api.failures.note(a)) {
            api.audit.line("?", from, "login", &[], 401);
        }
        return Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            "unknown, expired or revoked token",
        ));
    };
    let id = tokens::random(32).map_err(ApiError::internal)?;
    api.sessions.lock().unwrap_or_else(|p| p.into_inner()).insert(
        id.clone(),
        super::sessions::Holder::Token(hash),
        token.expires,
        api.settings.sessions,
    );
    let max_age = (token.expires - overlord::store::now()).max(0.0) as u64;
    let cookie = format!("{COOKIE}={id}; Path=/; HttpOnly; Secure; SameSite=Strict; Max-Age={max_age}");
    api.audit
        .line(&format!("api:{}", token.name), from, "login", &[], 200);
    let body = LoggedIn {
        name: token.name,
        admin: token.admin,
        expires: token.expires,
    };
    Ok(([(header::SET_COOKIE, cookie)], axum::Json(body)).into_response())
}

/// `POST /api/v1/logout`: ends the session of the cookie (if any).
#[utoipa::path(post, path = "/api/v1/logout", tag = "session", operation_id = "logout", security(),
    summary = "Ends the session", responses((status = 200, body = LoggedOut)))]
pub async fn logout(State(api): State<Arc<Api>>, headers: HeaderMap) -> Response {
    let id = super::auth::cookie(&headers, COOKIE).map(str::to_string);
    if let Some(id) = id {
        api.sessions.lock().unwrap_or_else(|p| p.into_inner()).remove(&id);
    }
    let cookie = format!("{COOKIE}=; Path=/; HttpOnly; Secure; SameSite=Strict; Max-Age=0");
    ([(header::SET_COOKIE, cookie)], axum::Json(LoggedOut { ok: true })).into_response()
}

/// This group's endpoints, each with its OpenAPI operation.
pub fn routes() -> utoipa_axum::router::OpenApiRouter<Arc<Api>> {
    use utoipa_axum::{router::OpenApiRouter, routes};
    OpenApiRouter::new()
        .routes(routes!(login))
        .routes(routes!(logout))
}
