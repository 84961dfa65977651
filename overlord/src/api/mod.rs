//! `func-api` (DESIGN §14): the overlord's engine over HTTPS, for programs,
//! dashboards and the web UI. A front end like `func`: it imports the
//! engine (targets, the warm connection pool, jobs, batches, the store),
//! never a `func` command or display module.
//!
//! - [`serve`]: the accept loop (per-address cap, TLS with an optional
//!   client certificate, idle close) over an axum router.
//! - [`auth`]: who is asking (bearer token, session cookie, the overlord's
//!   certificate) and [`tokens`]: tokens and their rights.
//! - One file per group of endpoints: [`minions`], [`calls`], [`jobs`],
//!   [`batches`], [`session`], [`events`] (Server-Sent Events from the
//!   [`bus`], fed by the [`watch`]er of every unfinished job and batch).
//! - [`reply`]: JSON bodies in and out, errors as `{"error"}`.

pub mod audit;
pub mod auth;
pub mod batches;
pub mod bus;
pub mod calls;
pub mod config;
pub mod events;
pub mod jobs;
pub mod minions;
pub mod reply;
pub mod session;
pub mod tls;
pub mod tokens;
pub mod watch;

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use axum::routing::{get, post};
use axum::Router;
use common::paths::Root;
use hyper::server::conn::http1;
use hyper_util::rt::TokioTimer;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tower::Service as _;

use crate::pool::Pool;
use crate::store::Store;

/// Connections served at once, and from one address.
const MAX_CONNECTIONS: usize = 1024;
const PER_ADDRESS: usize = 256;
/// TLS handshake deadline, and how long a connection may stay idle.
const HANDSHAKE: std::time::Duration = std::time::Duration::from_secs(10);
const IDLE: std::time::Duration = std::time::Duration::from_secs(60);

/// Everything the handlers share.
pub struct Api {
    pub root: Root,
    pub settings: config::ApiSettings,
    pub store: Store,
    pub pool: Arc<Pool>,
    pub tokens: Mutex<tokens::Tokens>,
    pub sessions: Mutex<session::Sessions>,
    pub bus: Arc<bus::Bus>,
    /// Calls in progress per caller (a semaphore each).
    pub busy: Mutex<HashMap<String, Arc<Semaphore>>>,
    /// Event streams open per caller.
    pub streams: Mutex<HashMap<String, usize>>,
    /// Our own executable: the drivers of async jobs and batches.
    pub exe: PathBuf,
    pub audit: audit::Audit,
}

impl Api {
    /// The service's state below `root`.
    pub fn new(root: Root, settings: config::ApiSettings) -> anyhow::Result<Self> {
        use anyhow::Context as _;
        let calling = crate::settings::Calling::of_root(&root);
        let pool = Pool::new(calling).context("the overlord's certificate (is the certmaster set up below this root?)")?;
        Ok(Api {
            store: crate::settings::store(&root),
            pool: Arc::new(pool),
            tokens: Mutex::new(tokens::Tokens::new(&root)),
            sessions: Mutex::new(session::Sessions::default()),
            bus: Arc::new(bus::Bus::new(settings.event_backlog)),
            busy: Mutex::new(HashMap::new()),
            streams: Mutex::new(HashMap::new()),
            exe: std::env::current_exe().context("finding func-api's own executable")?,
            audit: audit::Audit::new(&root),
            settings,
            root,
        })
    }
}

/// The routes.
pub fn router(api: Arc<Api>) -> Router {
    Router::new()
        .route("/api/v1/login", post(session::login))
        .route("/api/v1/logout", post(session::logout))
        .route("/api/v1/minions", get(minions::list))
        .route("/api/v1/minions/{name}/methods", get(minions::methods))
        .route("/api/v1/calls", post(calls::call))
        .route("/api/v1/jobs", get(jobs::list))
        .route("/api/v1/jobs/{id}", get(jobs::one))
        .route("/api/v1/jobs/{id}/kill", post(jobs::kill))
        .route("/api/v1/batches/{id}", get(batches::status))
        .route("/api/v1/batches/{id}/stop", post(batches::stop))
        .route("/api/v1/batches/{id}/recover", post(batches::recover))
        .route("/api/v1/events", get(events::stream))
        .route("/api/v1/openapi.json", get(reply::openapi))
        .fallback(reply::not_found)
        .layer(axum::extract::DefaultBodyLimit::max(api.settings.max_body))
        .with_state(api)
}

/// What the connection tells a request: the peer, and whether it showed
/// the overlord's certificate.
#[derive(Debug, Clone)]
pub struct Peer {
    pub addr: SocketAddr,
    /// The CN of a client certificate with the overlord mark.
    pub overlord: Option<String>,
}

/// Serves `listener` until `shutdown` completes; the watcher of jobs and
/// batches runs meanwhile.
pub async fn serve(api: Arc<Api>, listener: TcpListener, shutdown: impl Future<Output = ()>) -> anyhow::Result<()> {
    let tls = Arc::new(tls::server_config(&api.root, &api.settings)?);
    let watcher = watch::start(Arc::clone(&api));
    let app = router(Arc::clone(&api));
    common::rpc::accept::accept_loop(listener, MAX_CONNECTIONS, PER_ADDRESS, shutdown, |tcp, addr, slot| {
        let (tls, app) = (Arc::clone(&tls), app.clone());
        tokio::spawn(async move {
            connection(tls, app, tcp, addr, &slot).await;
            drop(slot);
        });
    })
    .await;
    watcher.stop();
    Ok(())
}

async fn connection(
    tls: Arc<rustls::ServerConfig>,
    app: Router,
    tcp: TcpStream,
    addr: SocketAddr,
    slot: &common::rpc::accept::Slot,
) {
    let _ = tcp.set_nodelay(true);
    let acceptor = tokio_rustls::TlsAcceptor::from(tls);
    let accepted = tokio::select! {
        a = tokio::time::timeout(HANDSHAKE, acceptor.accept(tcp)) => a,
        _ = slot.evicted() => return,
    };
    let Ok(Ok(stream)) = accepted else { return };
    slot.established();
    let overlord = stream
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|certs| certs.first())
        .and_then(|der| common::identity::PeerIdentity::from_der(der).ok())
        .filter(|id| id.overlord)
        .map(|id| id.cn);
    let peer = Peer { addr, overlord };
    let service = hyper::service::service_fn(move |mut req: http::Request<hyper::body::Incoming>| {
        req.extensions_mut().insert(peer.clone());
        let mut app = app.clone();
        async move { Ok::<_, Infallible>(app.call(req.map(axum::body::Body::new)).await.unwrap_or_else(|e| match e {})) }
    });
    let mut builder = http1::Builder::new();
    builder.timer(TokioTimer::new());
    let _ = common::rpc::idle::serve(&mut builder, stream, service, IDLE, slot).await;
}
