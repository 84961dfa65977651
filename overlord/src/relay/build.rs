//! Building the map (Func's `func-build-map`, and a relay's answer to
//! `GET /api/v1/relay/map`): every minion this overlord knows, `{}` each
//! (with `only_alive`, those that answer `test.ping`), and each relay of
//! `[relays]` with the map it builds the same way, recursively. A relay
//! that cannot be reached is left out and said.

use std::sync::Arc;
use std::time::Duration;

use common::paths::Root;

use super::client::RelayClient;
use super::error::RelayError;
use super::map::{configured, Map};
use crate::pool::Pool;
use crate::targets::Target;

/// The map of this overlord, and the relays that could not be asked (with why).
pub async fn build(
    root: &Root,
    pool: &Arc<Pool>,
    only_alive: bool,
) -> Result<(Map, Vec<String>), RelayError> {
    let relays = configured(root)?;
    // Blocking (files, the shared store's own runtime): off this runtime.
    let list_root = root.clone();
    let mut names = tokio::task::spawn_blocking(move || crate::targets::all_minions(&list_root))
        .await
        .map_err(|e| RelayError::Config(e.to_string()))?;
    if only_alive && !names.is_empty() {
        let targets: Vec<Target> = names.iter().map(|n| Target::enrolled(root, n)).collect();
        let limit = Duration::from_secs_f64(crate::settings::DEFAULT_TIMEOUT);
        let answers = pool
            .call_all(&targets, "test.ping", &[], limit, Default::default(), |_, _| {})
            .await;
        names.retain(|n| {
            answers
                .get(n)
                .is_some_and(|v| common::outcome::ok("test.ping", v))
        });
    }
    let mut map = Map(names.into_iter().map(|n| (n, Map::default())).collect());
    let mut failed = Vec::new();
    let mut tasks = tokio::task::JoinSet::new();
    for (name, addr) in relays {
        let client = RelayClient::new(root, addr);
        tasks.spawn(async move {
            let sub = match client {
                Ok(c) => c.map(only_alive).await,
                Err(e) => Err(e),
            };
            (name, sub)
        });
    }
    while let Some(done) = tasks.join_next().await {
        match done {
            Ok((name, Ok(_))) if map.0.contains_key(&name) => {
                failed.push(format!(
                    "relay {name} has the name of a minion of this overlord: left out"
                ));
            }
            Ok((name, Ok(sub))) => {
                map.0.insert(name, sub);
            }
            Ok((_, Err(e))) => failed.push(e.to_string()),
            Err(e) => failed.push(e.to_string()),
        }
    }
    failed.extend(map.refuse_double_claims());
    Ok((map, failed))
}
