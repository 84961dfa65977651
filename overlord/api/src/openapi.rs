//! `GET /api/v1/openapi.json`: func-api's OpenAPI document, derived from
//! the Rust types its handlers take and answer (`utoipa`), and from the
//! `#[utoipa::path]` each handler carries beside its code, and the list of
//! endpoints ([`api_routes`], with `utoipa-axum`) the router serves: an
//! endpoint is listed once, so it cannot be served without being
//! documented.

use std::sync::LazyLock;

use axum::response::{IntoResponse, Response};
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::OpenApi;

use super::auth::COOKIE;
use super::state::Api;
use super::{
    audit, batches, calls, events, facts, jobs, keys, metrics, minions, notify, oidc, relay, schedules,
    session,
};
use std::sync::Arc;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

#[derive(OpenApi)]
#[openapi(
    info(
        title = "func-api",
        version = "1",
        description = "Func in Rust: the overlord's REST API and live events (DESIGN §14). Every endpoint but login/logout and this document needs `Authorization: Bearer TOKEN`, the session cookie, or the overlord's client certificate."
    ),
    servers((url = "/")),
    security(("bearer" = []), ("cookie" = [])),
    modifiers(&Schemes),
    tags(
        (name = "session"), (name = "minions"), (name = "calls"), (name = "jobs"),
        (name = "batches"), (name = "events"), (name = "keys"), (name = "schedules"), (name = "audit"), (name = "relay"), (name = "meta")
    )
)]
pub struct Doc;

/// The endpoints of the API, each registered once with its OpenAPI
/// operation (`#[utoipa::path]` on the handler gives the path and method).
pub fn api_routes() -> OpenApiRouter<Arc<Api>> {
    // A group of endpoints registers its own (`jobs::routes`, …): an
    // endpoint added to a group is written in that group's file only.
    OpenApiRouter::with_openapi(Doc::openapi())
        .merge(session::routes())
        .merge(oidc::routes())
        .merge(notify::routes())
        .merge(minions::routes())
        .routes(routes!(facts::facts))
        .routes(routes!(calls::call))
        .merge(jobs::routes())
        .merge(batches::routes())
        .routes(routes!(events::stream))
        .merge(keys::routes())
        .routes(routes!(audit::list))
        .merge(schedules::routes())
        .merge(relay::routes())
        .routes(routes!(document))
        .routes(routes!(metrics::metrics))
}

/// The two ways to present a token: `Authorization: Bearer` and the
/// browser session's cookie.
struct Schemes;

impl utoipa::Modify for Schemes {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        let components = doc.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
        components.add_security_scheme(
            "cookie",
            SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::new(COOKIE))),
        );
    }
}

/// The query parameters each path template declares (every method's).
static QUERY_PARAMETERS: LazyLock<Vec<(Vec<String>, Vec<String>)>> = LazyLock::new(|| {
    let doc: serde_json::Value = serde_json::from_str(&DOCUMENT).unwrap_or_default();
    let mut out = Vec::new();
    for (path, item) in doc["paths"].as_object().into_iter().flatten() {
        let names = item
            .as_object()
            .into_iter()
            .flatten()
            .flat_map(|(_, op)| op["parameters"].as_array().cloned().unwrap_or_default())
            .filter(|p| p["in"] == "query")
            .filter_map(|p| p["name"].as_str().map(str::to_string))
            .collect();
        out.push((path.split('/').map(str::to_string).collect(), names));
    }
    out
});

/// The query parameters the operations at `path` declare (none for a path
/// the document does not have): anything else is refused, so a misspelt
/// parameter is never silently ignored.
pub fn query_parameters(path: &str) -> Vec<String> {
    let segments: Vec<&str> = path.split('/').collect();
    QUERY_PARAMETERS
        .iter()
        .find(|(template, _)| {
            template.len() == segments.len()
                && template
                    .iter()
                    .zip(&segments)
                    .all(|(t, s)| t == s || (t.starts_with('{') && t.ends_with('}')))
        })
        .map(|(_, names)| names.clone())
        .unwrap_or_default()
}

/// The document as served: built once.
static DOCUMENT: LazyLock<String> = LazyLock::new(|| {
    let (_, doc) = api_routes().split_for_parts();
    doc.to_pretty_json().expect("the OpenAPI document serializes")
});

/// `GET /api/v1/openapi.json`.
#[utoipa::path(get, path = "/api/v1/openapi.json", tag = "meta", operation_id = "getOpenApi",
    summary = "This document", security(),
    responses((status = 200, description = "OpenAPI 3", body = Object)))]
pub async fn document() -> Response {
    (
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        DOCUMENT.as_str(),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_operation_has_a_name_a_tag_and_errors_as_error_bodies() {
        let doc: serde_json::Value = serde_json::from_str(&DOCUMENT).unwrap();
        let mut ids = std::collections::BTreeSet::new();
        for (path, item) in doc["paths"].as_object().unwrap() {
            for (method, op) in item.as_object().unwrap() {
                let id = op["operationId"].as_str().unwrap_or_default();
                assert!(
                    !id.is_empty() && ids.insert(id.to_string()),
                    "{method} {path}: {id}"
                );
                assert!(
                    op["tags"].as_array().is_some_and(|t| !t.is_empty()),
                    "{method} {path}"
                );
                for (code, answer) in op["responses"].as_object().unwrap() {
                    // A page for a browser (single sign-on's end) says why as HTML.
                    let page = answer["content"].get("text/html").is_some();
                    if (code.starts_with('4') || code.starts_with('5')) && !page {
                        let schema = &answer["content"]["application/json"]["schema"]["$ref"];
                        assert_eq!(schema, "#/components/schemas/ErrorBody", "{method} {path} {code}");
                    }
                }
            }
        }
        // 18 before the operations (keys 3, re-run, schedules 5, audit),
        // what runs now (jobs active), single sign-on (3) and notifications.
        assert_eq!(ids.len(), 33);
        // The sign-in's end answers a browser with a page, and a malformed
        // request (an unknown query parameter) with JSON, as every endpoint.
        let back = &doc["paths"]["/api/v1/login/oidc/callback"]["get"]["responses"]["400"]["content"];
        assert!(
            back.get("text/html").is_some() && back.get("application/json").is_some(),
            "{back}"
        );
        // The call body is the gate's own type: its fields, unknown ones refused.
        let call = &doc["components"]["schemas"]["Call"];
        assert_eq!(call["additionalProperties"], false, "{call}");
        for field in [
            "spec",
            "module",
            "method",
            "args",
            "async",
            "batch",
            "batch_wait",
            "failhard",
            "timeout",
            "exclude",
        ] {
            assert!(call["properties"].get(field).is_some(), "{field}: {call}");
        }
        assert!(call["properties"].get("words").is_none());
        // The query parameters the middleware allows come from here.
        assert_eq!(
            query_parameters("/api/v1/jobs"),
            ["limit", "before", "function", "target", "schedule"]
        );
        assert_eq!(
            query_parameters("/api/v1/audit"),
            ["limit", "before", "user", "action"]
        );
        assert_eq!(query_parameters("/api/v1/jobs/x/rerun"), ["failed_only"]);
        assert_eq!(
            query_parameters("/api/v1/minions"),
            ["spec", "filter", "filteror", "grain"]
        );
        assert_eq!(query_parameters("/api/v1/events"), ["tag"]);
        assert!(query_parameters("/api/v1/jobs/some-id").is_empty());
        // A job id in a path is bounded as the gate bounds it.
        let id = &doc["paths"]["/api/v1/jobs/{id}"]["get"]["parameters"][0];
        assert_eq!(id["schema"]["maxLength"], overlord::gate::job::MAX_JOB_ID, "{id}");
    }
}
