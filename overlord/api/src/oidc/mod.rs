//! Single sign-on with an OpenID Connect provider (`[oidc]`, `[roles]` in
//! overlord.conf, DESIGN §14): `GET /api/v1/login/oidc` sends the browser
//! to the provider; `GET /api/v1/login/oidc/callback` ends the sign-in and
//! starts the same session cookie a token login starts, for
//! `oidc:<preferred_username>` with the rights of its groups, judged again
//! at every request, until the ID token expires. `GET
//! /api/v1/login/options` tells the login page what it may offer.

pub mod flow;
pub mod settings;

use std::sync::Arc;

use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};

use super::reply::{ApiError, ErrorBody};
use super::sessions::Holder;
use super::state::{Api, Peer};
use flow::Refused;

pub use flow::CALLBACK;
/// The cookie binding a sign-in to the browser that began it (SameSite=Lax:
/// it must come along on the provider's redirect back).
pub const BINDING: &str = "func_oidc";

/// What the login page may offer.
#[derive(Serialize, utoipa::ToSchema)]
pub struct LoginOptions {
    /// A token (always).
    pub token: bool,
    /// Single sign-on (`[oidc]` set): `GET /api/v1/login/oidc`.
    pub oidc: bool,
}

/// `GET /api/v1/login/options`.
#[utoipa::path(get, path = "/api/v1/login/options", tag = "session", operation_id = "loginOptions", security(),
    summary = "How one may log in", responses((status = 200, body = LoginOptions)))]
pub async fn options(State(api): State<Arc<Api>>) -> axum::Json<LoginOptions> {
    axum::Json(LoginOptions {
        token: true,
        oidc: api.sso.is_some(),
    })
}

/// `GET /api/v1/login/oidc`.
#[utoipa::path(get, path = "/api/v1/login/oidc", tag = "session", operation_id = "loginOidc", security(),
    summary = "Sends the browser to the OpenID provider (authorization code flow, PKCE S256, state, nonce)",
    responses((status = 302, description = "to the provider; Set-Cookie: func_oidc (the sign-in's binding)"),
        (status = 400, description = "the Host header is not a name of this service, or a malformed request", body = ErrorBody),
        (status = 404, description = "single sign-on is not set up ([oidc])", body = ErrorBody),
        (status = 502, description = "the provider could not be reached", body = ErrorBody)))]
pub async fn begin(
    State(api): State<Arc<Api>>,
    peer: Option<axum::Extension<Peer>>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let from = peer.map(|p| p.0.addr.ip().to_canonical());
    let sso = api
        .sso
        .as_ref()
        .ok_or_else(|| ApiError::not_found("single sign-on is not set up ([oidc] in overlord.conf)"))?;
    let host = headers.get(header::HOST).and_then(|v| v.to_str().ok());
    let redirect = sso.redirect_url(host).ok_or_else(|| {
        ApiError::bad(
            "the Host header is not a name of this service: set [api] public_url or [oidc] redirect_url",
        )
    })?;
    let (url, binding) = sso.begin(redirect, from).await.map_err(|e| match e {
        Refused::Request(why) => ApiError::bad(why),
        e => {
            tracing::warn!(error = %e, "single sign-on could not begin");
            ApiError::new(StatusCode::BAD_GATEWAY, e.to_string())
        }
    })?;
    let cookie =
        format!("{BINDING}={binding}; Path=/api/v1/login/oidc; HttpOnly; Secure; SameSite=Lax; Max-Age=600");
    Ok((
        StatusCode::FOUND,
        [(header::LOCATION, url), (header::SET_COOKIE, cookie)],
    )
        .into_response())
}

/// What the provider sends back.
#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct Back {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
    /// The provider's own words: never shown (they are the sender's text).
    #[allow(dead_code)]
    error_description: Option<String>,
    /// Sent by some providers; not used.
    #[allow(dead_code)]
    session_state: Option<String>,
    #[allow(dead_code)]
    iss: Option<String>,
    #[allow(dead_code)]
    scope: Option<String>,
}

/// `GET /api/v1/login/oidc/callback`.
#[utoipa::path(get, path = "/api/v1/login/oidc/callback", tag = "session", operation_id = "loginOidcCallback", security(),
    summary = "Ends a sign-in: the code exchanged, the ID token verified, a session started",
    params(Back),
    responses((status = 200, description = "signed in (a page that goes on to the web UI); Set-Cookie: func_session", content_type = "text/html", body = String),
        (status = 400, description = "not a sign-in this browser began, or the ID token was refused (a page that says why); a malformed request (JSON)",
            content((String = "text/html"), (ErrorBody = "application/json"))),
        (status = 403, description = "signed in, but in no group [roles] maps (a page that says why)", content_type = "text/html", body = String),
        (status = 404, description = "single sign-on is not set up", content_type = "text/html", body = String),
        (status = 429, description = "too many refused sign-ins from this address (a page); too many requests (JSON)",
            content((String = "text/html"), (ErrorBody = "application/json"))),
        (status = 502, description = "the provider could not be reached or answered wrongly", content_type = "text/html", body = String)))]
pub async fn callback(
    State(api): State<Arc<Api>>,
    peer: Option<axum::Extension<Peer>>,
    headers: HeaderMap,
    Query(back): Query<Back>,
) -> Response {
    let from = peer.map(|p| p.0.addr.ip().to_canonical());
    let Some(sso) = api.sso.as_ref() else {
        return page(
            StatusCode::NOT_FOUND,
            "Single sign-on is not set up",
            "[oidc] is not set in overlord.conf.",
            &[],
        );
    };
    let clear = format!("{BINDING}=; Path=/api/v1/login/oidc; HttpOnly; Secure; SameSite=Lax; Max-Age=0");
    // Refusals are failures of the address: past its limit it gets 429
    // and no more audit lines (nobody fills the trail from outside).
    if from.is_some_and(|a| api.failures.blocked(a)) {
        return page(
            StatusCode::TOO_MANY_REQUESTS,
            "Too many refused sign-ins",
            "Try again in a minute.",
            &[],
        );
    }
    let refused = |status: StatusCode, why: String| {
        if from.is_none_or(|a| api.failures.note(a)) {
            api.audit.line(
                "?",
                from,
                &format!("login oidc: {}", one_line(&why)),
                &[],
                status.as_u16(),
            );
        }
        page(
            status,
            "Sign-in refused",
            &why,
            &[(header::SET_COOKIE, clear.clone())],
        )
    };
    if let Some(error) = back.error {
        // Only the error's code, a word: its description is the sender's text.
        let code: String = error
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
            .take(64)
            .collect();
        return refused(StatusCode::BAD_REQUEST, format!("the provider answered {code}"));
    }
    let (Some(code), Some(state)) = (back.code, back.state) else {
        return refused(
            StatusCode::BAD_REQUEST,
            "the provider's answer has no code or no state".into(),
        );
    };
    let binding = super::auth::cookie(&headers, BINDING);
    let (person, rights) = match sso.end(&state, &code, binding).await {
        Ok(done) => done,
        Err(e @ Refused::Provider(_)) => return refused(StatusCode::BAD_GATEWAY, e.to_string()),
        Err(e) => return refused(StatusCode::BAD_REQUEST, e.to_string()),
    };
    match rights {
        Some(_) => signed_in(&api, person, from, clear),
        None => no_role(&api, &person, from, clear),
    }
}

/// Signed in, but in no group `[roles]` maps: no session, a page saying
/// which groups the person has.
fn no_role(api: &Api, person: &flow::Person, from: Option<std::net::IpAddr>, clear: String) -> Response {
    let groups = match person.groups.is_empty() {
        true => "none".to_string(),
        false => person.groups.join(", "),
    };
    let why = format!(
        "{} signed in, but none of its groups ({groups}) is given rights here ([roles] in overlord.conf): ask an administrator",
        person.user
    );
    api.audit.line(&person.user, from, "login oidc", &[], 403);
    page(
        StatusCode::FORBIDDEN,
        "No role for you here",
        &why,
        &[(header::SET_COOKIE, clear)],
    )
}

/// A person's session started: its cookie, and a page of ours that goes on
/// to the UI (the redirect chain began at the provider, so a
/// SameSite=Strict cookie would not go along on a 302).
fn signed_in(api: &Api, person: flow::Person, from: Option<std::net::IpAddr>, clear: String) -> Response {
    let id = match super::tokens::random(32) {
        Ok(id) => id,
        Err(e) => {
            return page(
                StatusCode::INTERNAL_SERVER_ERROR,
                "Sign-in failed",
                &e.to_string(),
                &[],
            )
        }
    };
    api.sessions.lock().unwrap_or_else(|p| p.into_inner()).insert(
        id.clone(),
        Holder::Person {
            user: person.user.clone(),
            groups: person.groups.clone(),
        },
        person.expires,
        api.settings.sessions,
    );
    api.audit.line(&person.user, from, "login oidc", &[], 200);
    let max_age = (person.expires - overlord::store::now()).max(0.0) as u64;
    let session = format!(
        "{}={id}; Path=/; HttpOnly; Secure; SameSite=Strict; Max-Age={max_age}",
        super::auth::COOKIE
    );
    let body = format!(
        "<!doctype html><meta charset=utf-8><meta http-equiv=refresh content=\"0;url=/\"><title>Signed in</title>\
         <p>Signed in as {}. <a href=\"/\">Go on</a>.</p>",
        escape(&person.user)
    );
    let mut answer = (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        body,
    )
        .into_response();
    let h = answer.headers_mut();
    for cookie in [session, clear] {
        if let Ok(v) = header::HeaderValue::from_str(&cookie) {
            h.append(header::SET_COOKIE, v);
        }
    }
    guarded(&mut answer);
    answer
}

/// A small page saying what happened (all text escaped: it may quote the provider).
fn page(status: StatusCode, title: &str, why: &str, headers: &[(header::HeaderName, String)]) -> Response {
    let body = format!(
        "<!doctype html><meta charset=utf-8><title>{t}</title><h1>{t}</h1><p id=why>{w}</p><p><a href=\"/\">Back to the login page</a></p>",
        t = escape(title),
        w = escape(why)
    );
    let mut answer = (status, [(header::CONTENT_TYPE, "text/html; charset=utf-8")], body).into_response();
    guarded(&mut answer);
    for (k, v) in headers {
        if let Ok(v) = header::HeaderValue::from_str(v) {
            answer.headers_mut().append(k.clone(), v);
        }
    }
    answer
}

/// A page of ours: nothing it may load or run, never framed, never kept.
fn guarded(answer: &mut Response) {
    let h = answer.headers_mut();
    for (k, v) in [
        (
            "content-security-policy",
            "default-src 'none'; frame-ancestors 'none'",
        ),
        ("x-frame-options", "DENY"),
        ("referrer-policy", "no-referrer"),
        ("cache-control", "no-store"),
    ] {
        h.insert(
            header::HeaderName::from_static(k),
            header::HeaderValue::from_static(v),
        );
    }
}

fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// Text for one audit line: no control characters, bounded.
fn one_line(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(200)
        .collect()
}

/// This group's endpoints, each with its OpenAPI operation.
pub fn routes() -> utoipa_axum::router::OpenApiRouter<Arc<Api>> {
    use utoipa_axum::{router::OpenApiRouter, routes};
    OpenApiRouter::new()
        .routes(routes!(options))
        .routes(routes!(begin))
        .routes(routes!(callback))
}
