//! The minion's network side: an accept loop that hands each connection to
//! its own task, a TLS handshake with a deadline (off the accept loop, so a
//! stalled ClientHello blocks nobody), then HTTP/1.1 with keep-alive, a header
//! deadline, a body deadline and a body size limit enforced while reading.
//!
//! Routes: `POST /` and `POST /RPC2` (Python posts to `/RPC2`); other paths
//! 404, other verbs 405. Replies are HTTP 200 even for faults, as Python
//! clients expect.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use common::identity::PeerIdentity;
use common::tls::Credentials;
use http::{header, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_rustls::TlsAcceptor;

use crate::acl::Acl;
use crate::audit::AuditLog;
use crate::config::MinionConfig;
use crate::dispatch;
use crate::modules::Registry;
use crate::quickack::QuickAckStream;

/// A running minion's shared state.
pub struct Minion {
    pub config: MinionConfig,
    pub registry: Registry,
    pub acl: Acl,
    pub audit: AuditLog,
    tls: Arc<rustls::ServerConfig>,
}

/// Why a minion cannot start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(
        "minion {name:?}: no {what} at {path} — enroll with the certmaster first (see README)"
    )]
    MissingCredential {
        name: String,
        what: &'static str,
        path: std::path::PathBuf,
    },
    #[error("minion name {0:?} is not a plain host name")]
    BadName(String),
    #[error(transparent)]
    Tls(#[from] common::tls::TlsError),
}

impl Minion {
    /// Loads ACLs, opens the audit log and reads the minion's TLS credentials.
    pub fn new(config: MinionConfig) -> Result<Self, StartError> {
        if !common::identity::is_valid_host_name(&config.name) {
            return Err(StartError::BadName(common::paths::shorten(&config.name)));
        }
        let root = &config.root;
        let creds = Credentials {
            key: root.minion_key(&config.name),
            cert: root.minion_cert(&config.name),
            ca: root.minion_ca_cert(),
        };
        for (what, path) in [
            ("private key", &creds.key),
            ("certificate", &creds.cert),
            ("CA certificate", &creds.ca),
        ] {
            if !path.exists() {
                return Err(StartError::MissingCredential {
                    name: config.name.clone(),
                    what,
                    path: path.clone(),
                });
            }
        }
        let tls = Arc::new(common::tls::server_config(&creds, Vec::new())?);
        Ok(Self {
            acl: Acl::load(&root.acl_dir()),
            audit: AuditLog::open(&root.audit_log()),
            registry: Registry::standard(),
            config,
            tls,
        })
    }
}

/// Serves `listener` until `shutdown` completes. Connections already open
/// end with the runtime.
pub async fn serve(
    minion: Arc<Minion>,
    listener: TcpListener,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let acceptor = TlsAcceptor::from(Arc::clone(&minion.tls));
    let slots = Arc::new(Semaphore::new(minion.config.max_connections));
    tokio::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            _ = &mut shutdown => break,
            p = Arc::clone(&slots).acquire_owned() => match p { Ok(p) => p, Err(_) => break },
        };
        let (tcp, peer) = tokio::select! {
            _ = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(conn) => conn,
                Err(e) => {
                    // EMFILE and friends: back off instead of spinning.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        tokio::spawn(connection(
            Arc::clone(&minion),
            acceptor.clone(),
            tcp,
            peer,
            permit,
        ));
    }
    Ok(())
}

async fn connection(
    minion: Arc<Minion>,
    acceptor: TlsAcceptor,
    tcp: TcpStream,
    peer: SocketAddr,
    _permit: OwnedSemaphorePermit,
) {
    let _ = tcp.set_nodelay(true);
    let tcp = QuickAckStream::new(tcp);
    let tls =
        match tokio::time::timeout(minion.config.handshake_timeout, acceptor.accept(tcp)).await {
            Ok(Ok(tls)) => tls,
            Ok(Err(e)) => {
                tracing::info!(%peer, error = %e, "TLS handshake refused");
                return;
            }
            Err(_) => {
                tracing::info!(%peer, "TLS handshake timed out");
                return;
            }
        };
    let who = match tls
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|c| c.first())
        .map(|c| PeerIdentity::from_der(c.as_ref()))
    {
        Some(Ok(who)) => who,
        _ => {
            tracing::info!(%peer, "client certificate without a usable identity");
            return;
        }
    };
    let header_timeout = minion.config.header_timeout;
    let service = service_fn(move |req| {
        let minion = Arc::clone(&minion);
        let who = who.clone();
        async move { Ok::<_, Infallible>(handle(minion, peer, who, req).await) }
    });
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(header_timeout)
        .keep_alive(true);
    if let Err(e) = builder.serve_connection(TokioIo::new(tls), service).await {
        tracing::debug!(%peer, error = %e, "connection ended with an error");
    }
}

async fn handle(
    minion: Arc<Minion>,
    peer: SocketAddr,
    who: PeerIdentity,
    req: Request<Incoming>,
) -> Response<Full<Bytes>> {
    if !matches!(req.uri().path(), "/" | "/RPC2") {
        return plain(
            StatusCode::NOT_FOUND,
            "not found: POST XML-RPC to / or /RPC2\n",
        );
    }
    if req.method() != Method::POST {
        let mut resp = plain(StatusCode::METHOD_NOT_ALLOWED, "only POST is supported\n");
        resp.headers_mut()
            .insert(header::ALLOW, header::HeaderValue::from_static("POST"));
        return resp;
    }
    let limits = minion.config.limits;
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|len| len > limits.max_body as u64) {
        return too_large(limits.max_body);
    }
    let body = Limited::new(req.into_body(), limits.max_body);
    let bytes = match tokio::time::timeout(minion.config.body_timeout, body.collect()).await {
        Err(_) => {
            return closing(plain(
                StatusCode::REQUEST_TIMEOUT,
                "request body not received in time\n",
            ))
        }
        Ok(Err(e))
            if e.downcast_ref::<http_body_util::LengthLimitError>()
                .is_some() =>
        {
            return too_large(limits.max_body)
        }
        Ok(Err(_)) => {
            return closing(plain(
                StatusCode::BAD_REQUEST,
                "request body could not be read\n",
            ))
        }
        Ok(Ok(collected)) => collected.to_bytes(),
    };
    let reply = match common::xmlrpc::decode_call(&bytes, &limits) {
        Ok(call) => dispatch::call(minion, peer, who, call.method, call.params).await,
        Err(e) => {
            tracing::info!(%peer, error = %e, "undecodable request");
            let fault = e.fault();
            dispatch::Reply::Fault {
                code: fault.code(),
                message: fault.string().to_string(),
            }
        }
    };
    let xml = reply.encode(limits.max_depth);
    let mut resp = Response::new(Full::new(Bytes::from(xml)));
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/xml"),
    );
    resp
}

fn plain(status: StatusCode, text: &'static str) -> Response<Full<Bytes>> {
    let mut resp = Response::new(Full::new(Bytes::from_static(text.as_bytes())));
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/plain"),
    );
    resp
}

/// Marks a response as the last on its connection.
fn closing(mut resp: Response<Full<Bytes>>) -> Response<Full<Bytes>> {
    resp.headers_mut().insert(
        header::CONNECTION,
        header::HeaderValue::from_static("close"),
    );
    resp
}

fn too_large(limit: usize) -> Response<Full<Bytes>> {
    let mut resp = closing(plain(
        StatusCode::PAYLOAD_TOO_LARGE,
        "request body over the limit\n",
    ));
    if let Ok(v) = header::HeaderValue::from_str(&limit.to_string()) {
        resp.headers_mut().insert("x-max-request-size", v);
    }
    resp
}
