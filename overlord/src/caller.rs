//! One call to one minion over a kept connection or a new one, the same
//! for every caller that keeps connections (func-api's pool, the poller of
//! the CLI and the drivers): a kept connection that broke before the
//! minion read the request (hyper's HTTP error) is replaced once and the
//! call made again — a request the minion may have read is never sent
//! twice, so an `async.M.m` dispatch cannot run twice. The reply is typed
//! (`jobs::follow::Reply`), beside the host's value as `func` shows it.

use std::sync::Arc;
use std::time::Duration;

use common::rpc::client::{CallError, MinionClient};
use common::Value;

use crate::jobs::follow::{why, Reply};
use crate::targets::Target;
use crate::worker::{call_error, connect, Link};

/// What one call gave: the typed reply, the host's value (a `REMOTE_ERROR`
/// for any failure), and the connection when it may be kept.
pub struct Outcome {
    pub reply: Reply,
    pub value: Value,
    pub client: Option<MinionClient>,
}

/// Calls `method(params)` on `target` over `kept` (or a new connection),
/// each step within `limit`, as `user` when given.
pub async fn call_once(
    kept: Option<MinionClient>,
    target: &Target,
    method: &str,
    params: Vec<Value>,
    link: Arc<Link>,
    limit: Duration,
    user: Option<&str>,
) -> Outcome {
    let unreachable = |value: Value| Outcome {
        reply: Reply::Unreachable(why(&value)),
        value,
        client: None,
    };
    let reused = kept.is_some();
    let mut client = match kept {
        Some(c) => c,
        None => match connect(target, Arc::clone(&link), limit).await {
            Ok(c) => c,
            Err(e) => return unreachable(e),
        },
    };
    client.set_timeout(limit);
    client.set_user(user);
    let mut outcome = client.call(method, params.clone()).await;
    if reused && matches!(&outcome, Err(CallError::Http(_))) {
        client = match connect(target, link, limit).await {
            Ok(c) => c,
            Err(e) => return unreachable(e),
        };
        client.set_timeout(limit);
        client.set_user(user);
        outcome = client.call(method, params).await;
    }
    match outcome {
        Ok(value) => Outcome {
            reply: Reply::Value(value.clone()),
            value,
            client: Some(client),
        },
        Err(e @ CallError::Fault { .. }) => {
            let value = call_error(e);
            Outcome {
                reply: Reply::Fault(value.clone()),
                value,
                client: Some(client),
            }
        }
        Err(e) => unreachable(call_error(e)),
    }
}
