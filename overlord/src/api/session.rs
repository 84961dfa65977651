//! Browser sessions: `POST /api/v1/login {"token"}` sets an HttpOnly,
//! Secure, SameSite=Strict cookie that lasts as long as the token; `POST
//! /api/v1/logout` ends it. The sessions themselves: `sessions.rs`.

use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::json;

use super::auth::COOKIE;
use super::reply::{ApiError, Body};
use super::state::{Api, Peer};
use super::tokens;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Login {
    token: String,
}

/// `POST /api/v1/login`.
pub async fn login(
    State(api): State<Arc<Api>>,
    peer: Option<axum::Extension<Peer>>,
    Body(body): Body<Login>,
) -> Result<Response, ApiError> {
    let from = peer.map(|p| p.0.addr.ip().to_canonical());
    if from.is_some_and(|a| api.failures.blocked(a)) {
        return Err(super::auth::too_many_failures());
    }
    let hash = tokens::hash(body.token.trim());
    let token = api.tokens.lock().unwrap_or_else(|p| p.into_inner()).find(&hash);
    let Some(token) = token else {
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
        hash,
        token.expires,
        api.settings.sessions,
    );
    let max_age = (token.expires - crate::store::now()).max(0.0) as u64;
    let cookie = format!("{COOKIE}={id}; Path=/; HttpOnly; Secure; SameSite=Strict; Max-Age={max_age}");
    api.audit.line(&token.name, from, "login", &[], 200);
    let body = json!({"name": token.name, "admin": token.admin, "expires": token.expires});
    Ok(([(header::SET_COOKIE, cookie)], axum::Json(body)).into_response())
}

/// `POST /api/v1/logout`: ends the session of the cookie (if any).
pub async fn logout(State(api): State<Arc<Api>>, headers: HeaderMap) -> Response {
    let id = super::auth::cookie(&headers, COOKIE).map(str::to_string);
    if let Some(id) = id {
        api.sessions.lock().unwrap_or_else(|p| p.into_inner()).remove(&id);
    }
    let cookie = format!("{COOKIE}=; Path=/; HttpOnly; Secure; SameSite=Strict; Max-Age=0");
    ([(header::SET_COOKIE, cookie)], axum::Json(json!({"ok": true}))).into_response()
}
