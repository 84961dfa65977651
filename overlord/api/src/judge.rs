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
/// `user`). A verdict tells about a host's facts, so a limited caller must
/// be allowed `fact.items` on every host it has judged: else a filter would
/// read, a bit at a time, facts it may not read.
pub async fn judge(
    api: &Arc<Api>,
    rights: &overlord::gate::rights::Rights,
    targets: Vec<Target>,
    filter: &Filter,
    limit: Duration,
    user: &str,
) -> Result<Judged, ApiError> {
    if !rights.admin {
        let names: Vec<String> = targets.iter().map(|t| t.name.clone()).collect();
        let groups = overlord::groups::Groups::load(&api.root.groups_file());
        if !rights.allows_all(&names, "fact.items", &groups) {
            return Err(ApiError::from(overlord::gate::GateError::Forbidden(
                "this token may not read the facts (fact.items) of every host the SPEC names, so it may not filter by them"
                    .into(),
            )));
        }
    }
    let pooled = overlord::reach::Pooled {
        pool: &api.pool,
        limit,
        user: Some(user.to_string()),
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
