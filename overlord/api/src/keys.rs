//! The certmaster's keys from the API (DESIGN §14; salt-api's `/keys`):
//! `GET /api/v1/keys` lists pending requests (with the fingerprint an
//! administrator compares with the one the minion printed, and where the
//! request came from), signed and revoked certificates; `POST
//! /api/v1/keys/{name}/sign {"fingerprint"}` signs only the request whose
//! key has that fingerprint (409 otherwise: a request replaced after it was
//! compared is never signed); `POST /api/v1/keys/{name}/revoke` does what
//! `certmaster-ca --clean` does (the certificate revoked, the CRL
//! published, the request removed) and shares the change with the store.
//!
//! They work on the CA below func-api's root (the certmaster's files, under
//! the same lock as `certmaster-ca`). Administrators only, unless a token's
//! rule grants `@keys.list`, `@keys.sign` or `@keys.revoke` on names its
//! SPEC's globs match (`web*=@keys.*`). Every change is audited.

use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde::{Deserialize, Serialize};

use super::auth::Caller;
use super::reply::{ApiError, Body, ErrorBody, Path, Query};
use super::state::Api;
use overlord::gate::rights::ops;

/// Longest fingerprint accepted (`SHA256:` and 32 bytes in hex with `:`).
const MAX_FINGERPRINT: usize = 200;
/// Keys of each kind listed at most.
const MAX_LISTED: usize = 100_000;

/// A pending request.
#[derive(Serialize, utoipa::ToSchema)]
pub struct PendingKey {
    pub name: String,
    /// The request's public key, as `certmaster-ca --list` shows it.
    pub fingerprint: String,
    /// The address the request came from.
    pub address: Option<String>,
    /// Where the minion says it can be reached (`host:port`).
    pub advertised: Option<String>,
}

/// A signed certificate.
#[derive(Serialize, utoipa::ToSchema)]
pub struct SignedKey {
    pub name: String,
    pub fingerprint: Option<String>,
    /// Where the minion said it can be reached.
    pub address: Option<String>,
}

/// A revoked certificate.
#[derive(Serialize, utoipa::ToSchema)]
pub struct RevokedKey {
    pub name: String,
    /// Its serial number, hex.
    pub serial: String,
    /// When it was revoked, epoch seconds.
    pub revoked: i64,
}

/// Every key the caller may see.
#[derive(Serialize, utoipa::ToSchema)]
pub struct Keys {
    pub pending: Vec<PendingKey>,
    pub signed: Vec<SignedKey>,
    pub revoked: Vec<RevokedKey>,
}

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct KeysQuery {
    /// A glob over the names (all when absent).
    name: Option<String>,
}

/// What a sign must name.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SignRequest {
    /// The fingerprint the administrator compared (case, `:` and a
    /// `SHA256:` prefix do not matter).
    pub fingerprint: String,
}

/// What a sign or revoke did.
#[derive(Serialize, utoipa::ToSchema)]
pub struct KeyChange {
    pub name: String,
    /// `signed`, `revoked` (a certificate) or `rejected` (a request never signed).
    pub outcome: &'static str,
    /// The signed certificate's fingerprint (sign).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
}

/// A key's name in a path.
#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Path)]
pub struct KeyName {
    /// A minion's name.
    #[param(min_length = 1, max_length = 253)]
    #[allow(dead_code)]
    name: String,
}

fn certs_store(api: &Api) -> certmaster_server::store::Store {
    certmaster_server::store::Store::new(api.root.clone())
}

/// The CA below the root, to sign or revoke with.
fn authority(api: &Api) -> Result<certs::Authority, ApiError> {
    let missing = || {
        ApiError::new(
            StatusCode::CONFLICT,
            "no CA below this func-api's root: keys are managed where the certmaster runs",
        )
    };
    let cert = certs::files::read_text(&api.root.ca_cert()).map_err(|_| missing())?;
    let key = certs::files::read_text(&api.root.ca_key()).map_err(|_| missing())?;
    certs::Authority::load(&cert, &key).map_err(|e| ApiError::internal(format!("loading the CA: {e}")))
}

/// The name of a path, checked, and the caller's right to do `op` on it
/// (403 before anything is looked at).
fn judged(api: &Api, caller: &Caller, op: &str, name: &str) -> Result<(), ApiError> {
    if !common::identity::is_valid_host_name(name) {
        return Err(ApiError::bad("not a minion name"));
    }
    if !caller.rights.may_operate(op, Some(name)) {
        api.audit.line(
            &caller.user(),
            caller.from,
            &op.trim_start_matches('@').replace('.', " "),
            &[name.to_string()],
            403,
        );
        return Err(ApiError::forbidden(format!(
            "this caller may not {} keys of that name",
            op.trim_start_matches("@keys.")
        )));
    }
    Ok(())
}

/// `GET /api/v1/keys`.
#[utoipa::path(get, path = "/api/v1/keys", tag = "keys", operation_id = "listKeys",
    summary = "Pending requests (with fingerprints), signed and revoked certificates", params(KeysQuery),
    responses((status = 200, body = Keys), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody)))]
pub async fn list(
    caller: Caller,
    State(api): State<Arc<Api>>,
    Query(q): Query<KeysQuery>,
) -> Result<Json<Keys>, ApiError> {
    if !caller.rights.may_operate_somewhere(ops::KEYS_LIST) {
        return Err(ApiError::forbidden("this caller may not list keys"));
    }
    let pattern = match q.name.as_deref().filter(|n| !n.is_empty()) {
        Some(text) => Some(overlord::gate::jobs::glob("name", text)?),
        None => None,
    };
    tokio::task::spawn_blocking(move || {
        let store = certs_store(&api);
        let shown = |name: &str| {
            pattern.as_ref().is_none_or(|p| p.matches(name))
                && caller.rights.may_operate(ops::KEYS_LIST, Some(name))
        };
        let natural = |mut names: Vec<String>| {
            names.sort_by(|a, b| overlord::values::natural_cmp(a, b));
            names
        };
        let pending = natural(store.pending())
            .into_iter()
            .filter(|n| shown(n))
            .take(MAX_LISTED)
            .map(|name| {
                let (address, advertised) = store.pending_origin(&name);
                PendingKey {
                    fingerprint: store
                        .pending_fingerprint(&name)
                        .unwrap_or_else(|| "(unreadable request)".into()),
                    address,
                    advertised,
                    name,
                }
            })
            .collect();
        let signed = natural(store.signed())
            .into_iter()
            .filter(|n| shown(n))
            .take(MAX_LISTED)
            .map(|name| SignedKey {
                fingerprint: store.signed_fingerprint(&name),
                address: store.address(&name),
                name,
            })
            .collect();
        let mut revoked: Vec<RevokedKey> = store
            .revoked()
            .into_iter()
            .filter(|(n, _, _)| shown(n))
            .map(|(name, serial, revoked)| RevokedKey {
                name,
                serial,
                revoked,
            })
            .collect();
        // The newest revocations are the ones looked for.
        revoked.reverse();
        revoked.truncate(MAX_LISTED);
        Ok(Json(Keys {
            pending,
            signed,
            revoked,
        }))
    })
    .await
    .map_err(ApiError::internal)?
}

/// `POST /api/v1/keys/{name}/sign`.
#[utoipa::path(post, path = "/api/v1/keys/{name}/sign", tag = "keys", operation_id = "signKey",
    summary = "Signs the pending request of NAME if its key has the given fingerprint", params(KeyName),
    request_body = SignRequest,
    responses((status = 200, body = KeyChange), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 404, description = "no pending request of that name", body = ErrorBody),
        (status = 408, body = ErrorBody), (status = 409, description = "another fingerprint, or already signed", body = ErrorBody),
        (status = 413, body = ErrorBody), (status = 415, body = ErrorBody)))]
pub async fn sign(
    caller: Caller,
    State(api): State<Arc<Api>>,
    Path(name): Path<String>,
    request: axum::extract::Request,
) -> Result<Json<KeyChange>, ApiError> {
    // The right is the path's alone: judged before the body is read.
    judged(&api, &caller, ops::KEYS_SIGN, &name)?;
    let Body(req) = <Body<SignRequest> as axum::extract::FromRequest<()>>::from_request(request, &()).await?;
    let fingerprint = req.fingerprint.trim().to_string();
    if fingerprint.is_empty() || fingerprint.len() > MAX_FINGERPRINT {
        return Err(ApiError::bad(format!(
            "fingerprint: 1 to {MAX_FINGERPRINT} characters (certmaster-ca --list shows it)"
        )));
    }
    let api2 = Arc::clone(&api);
    let name2 = name.clone();
    let answer = tokio::task::spawn_blocking(move || {
        let store = certs_store(&api2);
        if !store.is_pending(&name2) {
            return Err(match store.cert(&name2) {
                Some(_) => ApiError::new(StatusCode::CONFLICT, format!("{name2} is already signed")),
                None => ApiError::not_found(format!("no pending request of {name2}")),
            });
        }
        let ca = authority(&api2)?;
        match store.sign_pending_checked(&ca, &name2, Some(&fingerprint)) {
            Ok(_) => {}
            // The request's own fingerprint is not said: the one to give
            // is the one the minion printed, never one copied from here.
            Err(certs::CertError::FingerprintMismatch { .. }) => {
                return Err(ApiError::new(
                    StatusCode::CONFLICT,
                    format!(
                        "the pending request of {name2} has another key than the fingerprint given: nothing signed (give the one funcd printed on {name2})"
                    ),
                ))
            }
            Err(e) => return Err(ApiError::internal(format!("signing {name2}: {e}"))),
        }
        store.share();
        Ok(Json(KeyChange {
            fingerprint: store.signed_fingerprint(&name2),
            name: name2,
            outcome: "signed",
        }))
    })
    .await
    .map_err(ApiError::internal)?;
    let status = answer.as_ref().map_or_else(|e| e.status, |_| StatusCode::OK);
    api.audit
        .line(&caller.user(), caller.from, "keys sign", &[name], status.as_u16());
    answer
}

/// `POST /api/v1/keys/{name}/revoke`.
#[utoipa::path(post, path = "/api/v1/keys/{name}/revoke", tag = "keys", operation_id = "revokeKey",
    summary = "Revokes NAME's certificate (and removes its request) as certmaster-ca --clean", params(KeyName),
    responses((status = 200, body = KeyChange), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 404, description = "no request or certificate of that name", body = ErrorBody),
        (status = 409, body = ErrorBody)))]
pub async fn revoke(
    caller: Caller,
    State(api): State<Arc<Api>>,
    Path(name): Path<String>,
) -> Result<Json<KeyChange>, ApiError> {
    judged(&api, &caller, ops::KEYS_REVOKE, &name)?;
    let api2 = Arc::clone(&api);
    let name2 = name.clone();
    let answer = tokio::task::spawn_blocking(move || {
        let store = certs_store(&api2);
        if !store.is_pending(&name2) && store.cert(&name2).is_none() {
            return Err(ApiError::not_found(format!(
                "no request or certificate of {name2}"
            )));
        }
        // A request never signed is rejected (nothing to revoke); a
        // certificate is revoked (its serial in the CRL).
        let outcome = match store.cert(&name2) {
            Some(_) => "revoked",
            None => "rejected",
        };
        let ca = authority(&api2)?;
        store
            .clean(&ca, &name2)
            .map_err(|e| ApiError::internal(format!("revoking {name2}: {e}")))?;
        store.share();
        Ok(Json(KeyChange {
            name: name2,
            outcome,
            fingerprint: None,
        }))
    })
    .await
    .map_err(ApiError::internal)?;
    let status = answer.as_ref().map_or_else(|e| e.status, |_| StatusCode::OK);
    api.audit.line(
        &caller.user(),
        caller.from,
        "keys revoke",
        &[name],
        status.as_u16(),
    );
    answer
}

/// This group's endpoints, each with its OpenAPI operation.
pub fn routes() -> utoipa_axum::router::OpenApiRouter<Arc<Api>> {
    use utoipa_axum::{router::OpenApiRouter, routes};
    OpenApiRouter::new()
        .routes(routes!(list))
        .routes(routes!(sign))
        .routes(routes!(revoke))
}
