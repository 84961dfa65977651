//! Browser sessions: `POST /api/v1/login {"token"}` sets an HttpOnly,
//! Secure, SameSite=Strict cookie that lasts as long as the token; `POST
//! /api/v1/logout` ends it. Sessions live in memory, bounded (the oldest
//! goes first), so logging in again and again cannot exhaust it
//! (salt-api's #60955).

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::json;

use super::auth::COOKIE;
use super::reply::{ApiError, Body};
use super::{tokens, Api};

struct Session {
    hash: String,
    expires: f64,
    created: f64,
}

/// Live sessions: id → the token's hash.
#[derive(Default)]
pub struct Sessions {
    live: HashMap<String, Session>,
}

impl Sessions {
    /// The token hash of live session `id`.
    pub fn get(&self, id: &str) -> Option<String> {
        let s = self.live.get(id)?;
        (crate::store::now() < s.expires).then(|| s.hash.clone())
    }

    fn insert(&mut self, id: String, hash: String, expires: f64, max: usize) {
        let now = crate::store::now();
        self.live.retain(|_, s| s.expires > now);
        while self.live.len() >= max {
            let oldest = self
                .live
                .iter()
                .min_by(|a, b| a.1.created.total_cmp(&b.1.created))
                .map(|(k, _)| k.clone());
            match oldest {
                Some(k) => self.live.remove(&k),
                None => break,
            };
        }
        self.live.insert(id, Session { hash, expires, created: now });
    }

    pub fn len(&self) -> usize {
        self.live.len()
    }

    pub fn is_empty(&self) -> bool {
        self.live.is_empty()
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Login {
    token: String,
}

/// `POST /api/v1/login`.
pub async fn login(State(api): State<Arc<Api>>, Body(body): Body<Login>) -> Result<Response, ApiError> {
    let hash = tokens::hash(body.token.trim());
    let token = api.tokens.lock().unwrap_or_else(|p| p.into_inner()).find(&hash);
    let Some(token) = token else {
        api.audit.line("?", "login", &[], 401);
        return Err(ApiError::new(StatusCode::UNAUTHORIZED, "unknown, expired or revoked token"));
    };
    let id = tokens::random(32).map_err(ApiError::internal)?;
    api.sessions
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(id.clone(), hash, token.expires, api.settings.sessions);
    let max_age = (token.expires - crate::store::now()).max(0.0) as u64;
    let cookie = format!("{COOKIE}={id}; Path=/; HttpOnly; Secure; SameSite=Strict; Max-Age={max_age}");
    api.audit.line(&token.name, "login", &[], 200);
    let body = json!({"name": token.name, "admin": token.admin, "expires": token.expires});
    Ok(([(header::SET_COOKIE, cookie)], axum::Json(body)).into_response())
}

/// `POST /api/v1/logout`: ends the session of the cookie (if any).
pub async fn logout(State(api): State<Arc<Api>>, headers: HeaderMap) -> Response {
    let id = super::auth::cookie(&headers, COOKIE).map(str::to_string);
    if let Some(id) = id {
        api.sessions.lock().unwrap_or_else(|p| p.into_inner()).live.remove(&id);
    }
    let cookie = format!("{COOKIE}=; Path=/; HttpOnly; Secure; SameSite=Strict; Max-Age=0");
    ([(header::SET_COOKIE, cookie)], axum::Json(json!({"ok": true}))).into_response()
}
