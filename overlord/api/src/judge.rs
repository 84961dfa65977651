//! Targeting by facts in func-api (DESIGN §16): the hosts a call or a
//! listing names judge the filter themselves (`test.ping` with Func's
//! `{"__fact__": QUERY}`, over the warm pool, by the engine's one
//! `facts::judge`), a limited caller must be allowed to read the facts it
//! filters by, and the facts the hosts looked at are kept in the store.

use std::sync::Arc;
use std::time::Duration;

use super::reply::ApiError;
use super::state::Api;
use overlord::facts::Judged;
use overlord::gate::filter::Filter;
use overlord::targets::Target;

/// Where `filter` leaves `targets` (each asked within `limit`, for
/// `user`); a limited caller must be allowed to read the facts it filters
/// by (`gate::rights::may_filter`).
pub async fn judge(
    api: &Arc<Api>,
    rights: &overlord::gate::rights::Rights,
    targets: Vec<Target>,
    filter: &Filter,
    limit: Duration,
    user: &str,
) -> Result<Judged, ApiError> {
    let names: Vec<String> = targets.iter().map(|t| t.name.clone()).collect();
    overlord::gate::rights::may_filter(&api.root, rights, &names)?;
    let pooled = overlord::reach::Pooled {
        pool: &api.pool,
        limit,
        user: Some(user.to_string()),
        request: None,
    };
    // Judged over the pool only (no relays): the SPEC a relay would be told is not needed.
    let asker = overlord::facts::Asker {
        spec: "*".into(),
        user: user.to_string(),
        rights: rights.signed(),
        timeout: limit.as_secs_f64(),
    };
    let judged = overlord::facts::judge(&pooled, &api.root, None, targets, filter, asker).await;
    let api2 = Arc::clone(api);
    let seen = judged.seen.clone();
    // Kept where the store is written from: a blocking thread.
    tokio::task::spawn_blocking(move || overlord::facts::keep(&api2.store, &seen))
        .await
        .map_err(ApiError::internal)?
        .unwrap_or_else(|e| tracing::warn!(error = %e, "the facts seen were not kept"));
    Ok(judged)
}
