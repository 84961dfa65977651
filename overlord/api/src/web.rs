//! The web UI (DESIGN §14), served from the binary: one HTML shell for
//! every page address (`/`, `/minions/<name>`, `/run`, `/jobs`,
//! `/jobs/<id>`, `/batches/<id>`) and its script and style sheet, built
//! into the executable (no CDN, no build step). The pages call the API with
//! the session cookie; every answer carries a strict Content-Security-Policy
//! (only this origin's script, style and connections; no inline script, no
//! frames), so even a result that slipped past escaping could run nothing.

use axum::http::header;
use axum::response::{IntoResponse, Response};

const INDEX: &str = include_str!("web/index.html");
const SCRIPT: &str = include_str!("web/app.js");
const STYLE: &str = include_str!("web/app.css");

/// The Content-Security-Policy of every page and asset.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; \
    img-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

fn asset(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CONTENT_SECURITY_POLICY, CSP),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (header::X_FRAME_OPTIONS, "DENY"),
            (header::REFERRER_POLICY, "no-referrer"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        body,
    )
        .into_response()
}

/// Any page address: the shell, which routes by its path.
pub async fn page() -> Response {
    asset("text/html; charset=utf-8", INDEX)
}

/// An address that is no page and no endpoint, outside the API: the shell
/// with a 404 (its script says "no such page", with a way back), not JSON.
pub async fn missing_page() -> Response {
    let mut r = page().await;
    *r.status_mut() = axum::http::StatusCode::NOT_FOUND;
    r
}

/// `/ui/app.js`.
pub async fn script() -> Response {
    asset("text/javascript; charset=utf-8", SCRIPT)
}

/// `/ui/app.css`.
pub async fn style() -> Response {
    asset("text/css; charset=utf-8", STYLE)
}
