//! The service's server: our accept loop (a per-address cap, eviction of
//! slow handshakes), TLS with an optional client certificate (the
//! overlord's is an admin), idle close, and the axum router of every
//! endpoint. [`serve`] takes a bound listener and a shutdown signal.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use axum::routing::get;
use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::TokioTimer;
use tokio::net::{TcpListener, TcpStream};
use tower::Service as _;

use super::state::{Api, Peer};
use super::{conventions, openapi, reply, watch, web};

/// Connections from one address at once (all of them: `[api] max_connections`).
const PER_ADDRESS: usize = 64;
/// How long a stop waits for requests in progress.
const DRAIN: std::time::Duration = std::time::Duration::from_secs(30);
/// TLS handshake deadline (how long a connection may stay idle is `[api]
/// idle_timeout`; an event stream is never idle: it is a request in progress).
const HANDSHAKE: std::time::Duration = std::time::Duration::from_secs(10);
/// A write (an answer, an event) that the peer takes no data of for this
/// long ends the connection: answers nobody reads hold nothing for good.
const WRITE_DEADLINE: std::time::Duration = std::time::Duration::from_secs(30);
/// How long a request body may take to arrive: a caller's, and an
/// anonymous one's (a login: a token, a few bytes).
const BODY_DEADLINE: std::time::Duration = std::time::Duration::from_secs(30);
const ANONYMOUS_BODY_DEADLINE: std::time::Duration = std::time::Duration::from_secs(5);
/// The largest login body.
const LOGIN_BODY: usize = 4096;

/// The routes: the API's, and the web UI's pages.
pub fn router(api: Arc<Api>) -> Router {
    let (api_router, _) = openapi::api_routes().split_for_parts();
    api_router
        .route("/", get(web::page))
        .route("/run", get(web::page))
        .route("/jobs", get(web::page))
        .route("/jobs/{id}", get(web::page))
        .route("/batches/{id}", get(web::page))
        .route("/keys", get(web::page))
        .route("/schedules", get(web::page))
        .route("/audit", get(web::page))
        .route("/minions/{name}", get(web::page))
        .route("/ui/app.js", get(web::script))
        .route("/ui/app.css", get(web::style))
        .fallback(reply::not_found)
        .method_not_allowed_fallback(reply::method_not_allowed)
        .layer(axum::extract::DefaultBodyLimit::max(api.settings.max_body))
        .layer(axum::middleware::from_fn_with_state(Arc::clone(&api), bodies))
        .layer(axum::middleware::from_fn_with_state(Arc::clone(&api), counted))
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(&api),
            conventions::conventions,
        ))
        .with_state(api)
}

/// Serves `listener` until `shutdown` completes; the watcher of jobs and
/// batches runs meanwhile.
pub async fn serve(
    api: Arc<Api>,
    listener: TcpListener,
    shutdown: impl Future<Output = ()>,
) -> anyhow::Result<()> {
    // A long-lived caller: what it reads of the minions' addresses is kept
    // while their files are unchanged.
    overlord::targets::addresses::keep();
    let tls = Arc::clone(&api.tls);
    let watcher = watch::start(Arc::clone(&api));
    let scheduler = super::scheduler::start(Arc::clone(&api));
    let notices = api.notifier.as_ref().and_then(|n| n.take_queue());
    let notifier = notices.map(|queue| tokio::spawn(super::notify::run(Arc::clone(&api), queue)));
    let app = router(Arc::clone(&api));
    let max = api.settings.max_connections;
    common::rpc::accept::accept_loop(
        listener,
        max,
        PER_ADDRESS.min(max),
        shutdown,
        |tcp, addr, slot| {
            let (api, tls, app) = (Arc::clone(&api), Arc::clone(&tls), app.clone());
            tokio::spawn(async move {
                connection(api, tls, app, tcp, addr, &slot).await;
                drop(slot);
            });
        },
    )
    .await;
    // Stopping: no new connections; requests in progress (a sync call to
    // slow minions) get up to DRAIN to finish. Event streams just end.
    let deadline = tokio::time::Instant::now() + DRAIN;
    while api.in_flight.load(Ordering::Relaxed) > 0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    scheduler.abort();
    if let Some(n) = notifier {
        n.abort();
    }
    watcher.stop();
    Ok(())
}

/// Counts a request in progress (an event stream is not: it never ends).
async fn counted(
    axum::extract::State(api): axum::extract::State<Arc<Api>>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    if req.uri().path() == "/api/v1/events" {
        return next.run(req).await;
    }
    let keep_alive = format!("timeout={}", api.settings.idle_timeout);
    struct InFlight(Arc<Api>);
    impl Drop for InFlight {
        fn drop(&mut self) {
            self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
        }
    }
    api.in_flight.fetch_add(1, Ordering::Relaxed);
    let _counted = InFlight(Arc::clone(&api));
    let mut answer = next.run(req).await;
    // How long the connection is kept for the next request (RFC 9112's
    // Keep-Alive hint): clients that keep connections can plan for it.
    if let Ok(v) = axum::http::HeaderValue::from_str(&keep_alive) {
        answer.headers_mut().insert("keep-alive", v);
    }
    answer
}

/// Reads a request's body with a deadline and a bound, after judging the
/// credentials from its head: a caller that is not let in is answered
/// without a byte of its body read. The login (whose credential is its
/// body) gets a few KiB and a few seconds.
async fn bodies(
    axum::extract::State(api): axum::extract::State<Arc<Api>>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::http::header::{CONTENT_LENGTH, TRANSFER_ENCODING};
    use axum::response::IntoResponse as _;
    let length = req
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    let has_body = length.is_some_and(|n| n > 0) || req.headers().contains_key(TRANSFER_ENCODING);
    if !has_body {
        return next.run(req).await;
    }
    let (parts, body) = req.into_parts();
    let (limit, deadline) = if parts.uri.path() == "/api/v1/login" {
        (LOGIN_BODY, ANONYMOUS_BODY_DEADLINE)
    } else {
        match super::auth::authenticate(&api, &parts) {
            Err(refused) => return refused.into_response(),
            // An overlord hands a relay every host of its segment at once
            // (a request, or the hosts whose results it asks for).
            Ok(c)
                if (parts.uri.path() == "/api/v1/relay"
                    || parts.uri.path().starts_with("/api/v1/relay/"))
                    && matches!(c.proof, super::auth::Proof::Certificate) =>
            {
                (api.settings.max_body.max(super::relay::RELAY_BODY), BODY_DEADLINE)
            }
            Ok(_) => (api.settings.max_body, BODY_DEADLINE),
        }
    };
    if length.is_some_and(|n| n > limit as u64) {
        return reply::too_large(limit).into_response();
    }
    match tokio::time::timeout(deadline, axum::body::to_bytes(body, limit)).await {
        Ok(Ok(bytes)) => {
            next.run(axum::extract::Request::from_parts(
                parts,
                axum::body::Body::from(bytes),
            ))
            .await
        }
        Ok(Err(_)) => reply::too_large(limit).into_response(),
        Err(_) => reply::ApiError::new(
            axum::http::StatusCode::REQUEST_TIMEOUT,
            format!("the request body did not arrive within {} s", deadline.as_secs()),
        )
        .into_response(),
    }
}

async fn connection(
    api: Arc<Api>,
    tls: Arc<rustls::ServerConfig>,
    app: Router,
    tcp: TcpStream,
    addr: SocketAddr,
    slot: &common::rpc::accept::Slot,
) {
    let _ = tcp.set_nodelay(true);
    let Some(tcp) = speaks_tls(tcp, slot).await else {
        return;
    };
    let acceptor = tokio_rustls::TlsAcceptor::from(tls);
    let accepted = tokio::select! {
        a = tokio::time::timeout(HANDSHAKE, acceptor.accept(tcp)) => a,
        _ = slot.evicted() => return,
    };
    let Ok(Ok(stream)) = accepted else { return };
    // The slot is kept for good only once a request with credentials
    // arrives: a peer that finishes its handshake and then says nothing,
    // or sends only anonymous requests (a login whose body never ends),
    // can still be evicted when every slot is taken, so such peers cannot
    // lock callers out. Anonymous requests in progress are bounded too.
    let first_request = Arc::new(tokio::sync::Notify::new());
    let overlord = stream
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|certs| certs.first())
        .and_then(|der| common::identity::PeerIdentity::from_der(der).ok())
        .filter(|id| id.overlord)
        .map(|id| id.cn);
    let peer = Peer { addr, overlord };
    let arrived = Arc::clone(&first_request);
    let idle_timeout = api.settings.idle_timeout;
    let service = hyper::service::service_fn(move |mut req: http::Request<hyper::body::Incoming>| {
        let anonymous = if super::auth::credentialed(&api, req.headers(), peer.overlord.is_some()) {
            arrived.notify_one();
            None
        } else {
            Some(api.anonymous.take(peer.addr.ip().to_canonical()))
        };
        req.extensions_mut().insert(peer.clone());
        let mut app = app.clone();
        async move {
            let _place = match anonymous {
                Some(None) => return Ok::<_, Infallible>(reply::busy_anonymous()),
                Some(Some(place)) => Some(place),
                None => None,
            };
            Ok::<_, Infallible>(
                app.call(req.map(axum::body::Body::new))
                    .await
                    .unwrap_or_else(|e| match e {}),
            )
        }
    });
    let mut builder = http1::Builder::new();
    builder.timer(TokioTimer::new());
    let stream = common::rpc::deadline::WriteDeadline::new(stream, WRITE_DEADLINE);
    let idle = std::time::Duration::from_secs(idle_timeout);
    let served = common::rpc::idle::serve(&mut builder, stream, service, idle, slot);
    tokio::pin!(served);
    let mut established = false;
    loop {
        tokio::select! {
            _ = &mut served => break,
            _ = first_request.notified(), if !established => {
                slot.established();
                established = true;
            }
            _ = slot.evicted(), if !established => break,
        }
    }
}

/// The connection back when the peer starts a TLS handshake. Plain HTTP on
/// the HTTPS port (a typo in the URL) gets a clear answer pointing at
/// https, not TLS bytes the client cannot read; a silent or evicted peer is
/// dropped.
async fn speaks_tls(tcp: TcpStream, slot: &common::rpc::accept::Slot) -> Option<TcpStream> {
    let mut first = [0u8; 1];
    let peeked = tokio::select! {
        p = tokio::time::timeout(HANDSHAKE, tcp.peek(&mut first)) => p,
        _ = slot.evicted() => return None,
    };
    match peeked {
        Ok(Ok(1)) if first[0].is_ascii_uppercase() => {
            // Evictable all along, like a connection still in its handshake.
            tokio::select! {
                _ = plain_http(tcp) => {}
                _ = slot.evicted() => {}
            }
            None
        }
        Ok(Ok(1)) => Some(tcp),
        _ => None,
    }
}

/// Answers a plain-HTTP request with a redirect to the same place over
/// https (a 400 if it cannot be read), then closes.
async fn plain_http(mut tcp: TcpStream) {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let mut head = Vec::with_capacity(1024);
    let mut buf = [0u8; 1024];
    let read = tokio::time::timeout(std::time::Duration::from_secs(5), async {
        while head.len() < 8192 && !head.windows(4).any(|w| w == b"\r\n\r\n") {
            match tcp.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => head.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await;
    let text = String::from_utf8_lossy(&head);
    let path = text
        .lines()
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .filter(|p| p.starts_with('/') && p.len() < 2048 && p.bytes().all(|b| b.is_ascii_graphic()));
    let host = text.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim()
            .eq_ignore_ascii_case("host")
            .then(|| v.trim().to_string())
    });
    let host = host.filter(|h| !h.is_empty() && h.len() < 256 && h.bytes().all(|b| b.is_ascii_graphic()));
    let message = "func-api speaks HTTPS only: use https://\n";
    let answer = match (read, host, path) {
        (Ok(()), Some(host), Some(path)) => format!(
            "HTTP/1.1 301 Moved Permanently\r\nLocation: https://{host}{path}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{message}",
            message.len()
        ),
        _ => format!(
            "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{message}",
            message.len()
        ),
    };
    let _ = tokio::time::timeout(
        std::time::Duration::from_secs(5),
        tcp.write_all(answer.as_bytes()),
    )
    .await;
    let _ = tcp.shutdown().await;
}
