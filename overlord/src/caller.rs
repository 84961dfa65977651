//! One call to one minion, the same for every caller: the CLI's forked
//! workers (a new connection each), the poller of the CLI and the drivers,
//! and func-api's pool (kept connections). A kept connection that broke
//! before the minion read the request (hyper's HTTP error) is replaced once
//! and the call made again — a request the minion may have read is never
//! sent twice, so an `async.M.m` dispatch cannot run twice. The reply is
//! typed (`jobs::follow::Reply`), beside the host's value as `func` shows
//! it; [`connect`] and [`call_error`] are how every caller connects and
//! turns a client-side failure into that value.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use common::rpc::client::{CallError, MinionClient};
use common::xmlrpc::remote_error;
use common::Value;

use crate::jobs::follow::{why, Reply};
use crate::targets::Target;

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

/// What a connection to a minion needs: the TLS configuration (CA, CRL,
/// the overlord's certificate) and the largest response accepted.
pub struct Link {
    pub tls: Arc<rustls::ClientConfig>,
    pub max_response: usize,
}

/// Resolves and connects to `target`; a failure is the host's error value.
pub async fn connect(target: &Target, tls: Arc<Link>, limit: Duration) -> Result<MinionClient, Value> {
    let addr: SocketAddr = match tokio::net::lookup_host(&target.addr).await.map(|mut a| a.next()) {
        Ok(Some(a)) => a,
        _ => {
            return Err(remote_error(
                "socket.gaierror",
                &format!("cannot resolve {}", target.addr),
                "",
            ))
        }
    };
    MinionClient::connect(addr, &target.name, Arc::clone(&tls.tls), limit)
        .await
        .map(|c| c.with_max_response(tls.max_response))
        .map_err(call_error)
}

/// A client-side failure as Func reported it: a `REMOTE_ERROR` value.
pub fn call_error(e: CallError) -> Value {
    let kind = match &e {
        CallError::Fault { .. } => "xmlrpclib.Fault",
        CallError::Timeout(_) => "socket.timeout",
        CallError::Connect { .. } => "socket.error",
        CallError::Tls { .. } => "ssl.SSLError",
        _ => "func.overlord.CallError",
    };
    remote_error(kind, &e.to_string(), "")
}
