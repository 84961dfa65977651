//! `GET /api/v1/minions/{name}/facts`: a minion's facts (DESIGN §16) —
//! asked now (`fact.items`) and kept in the job store with their time, or,
//! when the minion cannot answer, the last ones the store kept (`live:
//! false`, with why). A limited token reads them only from a minion it may
//! call `fact.items` on, and cannot tell such a minion from a missing one.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::Json;
use common::Value;
use serde::Serialize;

use super::auth::Caller;
use super::reply::{ApiError, ErrorBody, Path};
use super::state::Api;
use overlord::store::JobStore as _;
use overlord::targets::Target;

/// A minion's facts, and when they were read.
#[derive(Serialize, utoipa::ToSchema)]
pub struct MinionFacts {
    pub minion: String,
    /// Epoch seconds of the reading.
    pub seen: f64,
    /// Read now (else: the last reading the store kept).
    pub live: bool,
    /// `{tag: value}`, as `fact.items` answers.
    #[schema(value_type = Object)]
    pub facts: serde_json::Map<String, serde_json::Value>,
    /// Why the minion could not be asked now (with `live: false`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// `GET /api/v1/minions/{name}/facts`.
#[utoipa::path(get, path = "/api/v1/minions/{name}/facts", tag = "minions", operation_id = "getMinionFacts",
    summary = "A minion's facts (fact.items), read now or the last kept",
    params(("name" = String, Path, description = "a minion's name")),
    responses((status = 200, body = MinionFacts), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 404, body = ErrorBody), (status = 502, body = ErrorBody),
        (status = 503, body = ErrorBody)))]
pub async fn facts(
    caller: Caller,
    State(api): State<Arc<Api>>,
    Path(name): Path<String>,
) -> Result<Json<MinionFacts>, ApiError> {
    overlord::gate::rights::authorize_minion(&api.root, &caller.rights, &name, Some("fact.items"))?;
    let _slot = super::calls::take_slot(&api, &caller)?;
    let target = Target::enrolled(&api.root, &name);
    let limit = Duration::from_secs_f64(overlord::settings::DEFAULT_TIMEOUT);
    let answer = api
        .pool
        .call(&target, "fact.items", Vec::new(), limit, Some(&caller.user()))
        .await;
    let api2 = Arc::clone(&api);
    let host = name.clone();
    let stored = tokio::task::spawn_blocking(move || match (overlord::values::to_json(&answer), answer) {
        (serde_json::Value::Object(facts), Value::Struct(_)) => {
            let seen = overlord::store::now();
            api2.store
                .save_facts(&[(host.as_str(), &facts)], seen, true)
                .map_err(ApiError::store)?;
            Ok(MinionFacts {
                minion: host,
                seen,
                live: true,
                facts,
                error: None,
            })
        }
        (_, failed) => {
            let why = overlord::values::error_text(&failed);
            match api2.store.last_facts(&host).map_err(ApiError::store)? {
                Some(kept) => Ok(MinionFacts {
                    minion: host,
                    seen: kept.seen,
                    live: false,
                    facts: kept.facts,
                    error: Some(why),
                }),
                None => Err(ApiError::new(
                    axum::http::StatusCode::BAD_GATEWAY,
                    format!("{host}: {why} (and no facts of it are kept)"),
                )),
            }
        }
    })
    .await
    .map_err(ApiError::internal)?;
    stored.map(Json)
}
