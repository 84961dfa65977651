//! One call to one minion, the same for every caller: the CLI's forked
//! workers (a new connection each), the poller of the CLI and the drivers,
//! and func-api's pool (kept connections). A kept connection that broke
//! before the minion began to answer (an HTTP error, not a fault: most
//! often the minion's idle deadline closing it as it was taken) is replaced
//! once and the call made again; one that broke mid-answer is not (the
//! minion read the call), and a dispatch that carries its signed request's
//! identity still runs at most once (the minion refuses it again). The reply is
//! typed (`jobs::follow::Reply`), beside the host's value as `func` shows
//! it; [`connect`] and [`call_error`] are how every caller connects and
//! turns a client-side failure into that value.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use common::rpc::client::{CallError, MinionClient};
use common::xmlrpc::remote_error;
use common::Value;

use crate::jobs::follow::{why, Reply};
use crate::settings::Calling;
use crate::targets::Target;

/// What one call gave: the typed reply, the host's value (a `REMOTE_ERROR`
/// for any failure), and the connection when it may be kept.
pub struct Outcome {
    pub reply: Reply,
    pub value: Value,
    pub client: Option<MinionClient>,
}

/// For whom a call is made: a user's name (func-api's callers), and the
/// signed request it belongs to (its identity, `seal::request_id`).
#[derive(Debug, Clone, Copy, Default)]
pub struct OnBehalf<'a> {
    pub user: Option<&'a str>,
    pub request: Option<&'a str>,
}

/// Calls `method(params)` on `target` over `kept` (or a new connection),
/// each step within `limit`, as `who` says.
pub async fn call_once(
    kept: Option<MinionClient>,
    target: &Target,
    method: &str,
    params: Vec<Value>,
    link: Arc<Link>,
    limit: Duration,
    who: OnBehalf<'_>,
) -> Outcome {
    let OnBehalf { user, request } = who;
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
    client.set_request(request);
    let mut outcome = client.call(method, params.clone()).await;
    if reused && matches!(&outcome, Err(CallError::Http(_))) {
        client = match connect(target, link, limit).await {
            Ok(c) => c,
            Err(e) => return unreachable(e),
        };
        client.set_timeout(limit);
        client.set_user(user);
        client.set_request(request);
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

/// The TLS setup of a caller that may live long (func-api's pool, a
/// batch driver's poller): rebuilt from the credentials (CA, CRL, the
/// overlord's certificate) when the CRL file changes, looked at at most
/// once a second, so a minion revoked meanwhile is refused at its next
/// connection. Whoever keeps connections closes them on a reload (they
/// were verified against the old list).
pub struct LiveLink {
    calling: Calling,
    state: Mutex<LinkState>,
}

struct LinkState {
    link: Arc<Link>,
    /// The CRL file's (modified time, length) when `link` was built.
    crl: Option<CrlStamp>,
    checked: Instant,
}

/// When the CRL in use was written, and its size: a change means a reload.
type CrlStamp = (SystemTime, u64);

/// The overlord's credentials cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("the overlord's credentials: {0}")]
pub struct LinkError(String);

impl LiveLink {
    pub fn new(calling: Calling) -> Result<Self, LinkError> {
        let (link, crl) = build(&calling)?;
        Ok(Self {
            calling,
            state: Mutex::new(LinkState {
                link,
                crl,
                checked: Instant::now(),
            }),
        })
    }

    /// The TLS setup to connect with now, and whether it was just rebuilt
    /// (kept connections are then to be closed). A CRL that cannot be
    /// read keeps the old list rather than calling with none, and says so.
    pub fn current(&self) -> (Arc<Link>, bool) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let mut reloaded = false;
        if state.checked.elapsed() >= Duration::from_secs(1) {
            state.checked = Instant::now();
            if crl_stamp(&self.calling) != state.crl {
                match build(&self.calling) {
                    Ok((link, crl)) => {
                        state.link = link;
                        state.crl = crl;
                        reloaded = true;
                    }
                    Err(e) => crate::log::line(&format!("CRL not reloaded: {e}")),
                }
            }
        }
        (Arc::clone(&state.link), reloaded)
    }
}

fn crl_stamp(calling: &Calling) -> Option<CrlStamp> {
    let meta = std::fs::metadata(calling.credentials.crl.as_ref()?).ok()?;
    Some((meta.modified().ok()?, meta.len()))
}

fn build(calling: &Calling) -> Result<(Arc<Link>, Option<CrlStamp>), LinkError> {
    let crl = crl_stamp(calling);
    let tls = common::tls::client_config(&calling.credentials).map_err(|e| LinkError(e.to_string()))?;
    Ok((
        Arc::new(Link {
            tls: Arc::new(tls),
            max_response: calling.max_response,
        }),
        crl,
    ))
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
