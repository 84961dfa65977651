//! The minion's network side: an accept loop that hands each connection to
//! its own task, a TLS handshake with a deadline (off the accept loop, so a
//! stalled ClientHello blocks nobody), then HTTP/1.1 with keep-alive, a header
//! deadline, a body deadline and a body size limit enforced while reading.
//!
//! Routes and limits are `common::rpc::http`'s (Func's: `POST /` and
//! `POST /RPC2`; HTTP 200 even for faults).

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, RwLock};

use common::identity::PeerIdentity;
use common::rpc::{self, http::Reply};
use common::tls::Credentials;
use http::Request;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioTimer;
use rustls::pki_types::pem::PemObject;
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;

use crate::acl::Acl;
use crate::audit::AuditLog;
use crate::config::MinionConfig;
use crate::dispatch;
use crate::jobs::Jobs;
use crate::modules::Registry;
use crate::quickack::QuickAckStream;

/// A running minion's shared state.
pub struct Minion {
    pub config: MinionConfig,
    pub registry: Registry,
    pub acl: Acl,
    pub audit: AuditLog,
    pub jobs: Arc<Jobs>,
    /// Blocking calls in progress, per caller.
    pub gate: Arc<crate::limits::CallGate>,
    /// Request bytes in flight: non-overlord callers share one budget, the
    /// overlord has its own.
    budget_others: Arc<tokio::sync::Semaphore>,
    budget_overlord: Arc<tokio::sync::Semaphore>,
    creds: Credentials,
    /// The TLS configuration new connections use; replaced when a new CRL arrives.
    tls: RwLock<Arc<rustls::ServerConfig>>,
}

/// Why a minion cannot start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("minion {name:?}: no {what} at {path} — enroll with the certmaster first (see README)")]
    MissingCredential {
        name: String,
        what: &'static str,
        path: std::path::PathBuf,
    },
    #[error("minion name {0:?} is not a plain host name")]
    BadName(String),
    #[error(transparent)]
    Tls(#[from] common::tls::TlsError),
    #[error(transparent)]
    Jobs(#[from] crate::jobs::store::StoreError),
    #[error("cannot find the funcd executable (async jobs re-run it): {0}")]
    Exe(String),
    #[error("cannot save the CRL: {0}")]
    SaveCrl(String),
    #[error("CRL refused: {0}")]
    StaleCrl(String),
}

impl Minion {
    /// Loads ACLs, opens the audit log and the job store (taking in results
    /// that arrived while no daemon ran), reads the minion's TLS credentials
    /// and the last CRL fetched from the certmaster (if any).
    pub fn new(config: MinionConfig) -> Result<Self, StartError> {
        if !common::identity::is_valid_host_name(&config.name) {
            return Err(StartError::BadName(common::paths::shorten(&config.name)));
        }
        let root = &config.root;
        let creds = Credentials {
            key: root.minion_key(&config.name),
            cert: root.minion_cert(&config.name),
            ca: root.minion_ca_cert(),
            crl: None,
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
        let crls = match common::tls::load_crl(&root.minion_crl()) {
            Ok(crl) => vec![crl],
            Err(_) if !root.minion_crl().exists() => Vec::new(),
            Err(e) => {
                tracing::warn!(error = %e, "ignoring an unreadable CRL; a fresh one is fetched from the certmaster");
                Vec::new()
            }
        };
        let tls = RwLock::new(Arc::new(common::tls::server_config(&creds, crls)?));
        let exe = std::env::current_exe().map_err(|e| StartError::Exe(e.to_string()))?;
        let jobs = Jobs::open(root, &config.name, config.keep_jobs, exe, config.quotas.clone())?;
        let q = &config.quotas;
        Ok(Self {
            gate: crate::limits::CallGate::new(q.clone()),
            budget_others: Arc::new(tokio::sync::Semaphore::new(q.request_bytes_others)),
            budget_overlord: Arc::new(tokio::sync::Semaphore::new(q.request_bytes_overlord)),
            jobs: Arc::new(jobs),
            acl: Acl::load(&root.acl_dir()),
            audit: AuditLog::open(&root.audit_log()),
            registry: Registry::with_dropins(
                config.root.clone(),
                config.modules.clone(),
                crate::dropin::exec::Group::Own,
            ),
            config,
            creds,
            tls,
        })
    }

    /// Installs a CRL (PEM) for connections from now on, and saves it below
    /// the root for the next start. Returns whether it differs from the saved one.
    ///
    /// A CRL older than the one held (lower CRL number, or an earlier
    /// `thisUpdate`) is refused: whoever answers in the certmaster's place
    /// with an old, validly signed CRL cannot roll revocation back.
    pub fn apply_crl(&self, pem: &str) -> Result<bool, StartError> {
        let path = self.config.root.minion_crl();
        let saved = std::fs::read_to_string(&path).ok();
        if saved.as_deref() == Some(pem) {
            return Ok(false);
        }
        let crl = rustls::pki_types::CertificateRevocationListDer::from_pem_slice(pem.as_bytes())
            .map_err(|e| StartError::Tls(common::tls::TlsError::Config(format!("CRL: {e}"))))?;
        if let Some(held) = saved.as_deref().and_then(certs::authority::crl_order) {
            let offered = certs::authority::crl_order(pem)
                .ok_or_else(|| StartError::StaleCrl("it cannot be parsed".into()))?;
            if offered.0 < held.0 || offered.1 < held.1 {
                return Err(StartError::StaleCrl(format!(
                    "number {} issued {} is older than the held number {} issued {}",
                    offered.0, offered.1, held.0, held.1
                )));
            }
        }
        let config = common::tls::server_config(&self.creds, vec![crl])?;
        certs::files::write_atomic(&path, pem.as_bytes(), certs::files::PUBLIC)
            .map_err(|e| StartError::SaveCrl(e.to_string()))?;
        *self.tls.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(config);
        Ok(true)
    }

    fn acceptor(&self) -> TlsAcceptor {
        TlsAcceptor::from(Arc::clone(&self.tls.read().unwrap_or_else(|p| p.into_inner())))
    }
}

/// Serves `listener` until `shutdown` completes. Connections already open
/// end with the runtime.
pub async fn serve(
    minion: Arc<Minion>,
    listener: TcpListener,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let max = minion.config.max_connections;
    let per_address = minion.config.quotas.connections_per_address;
    rpc::accept::accept_loop(listener, max, per_address, shutdown, |tcp, peer, permit| {
        tokio::spawn(connection(
            Arc::clone(&minion),
            minion.acceptor(),
            tcp,
            peer,
            permit,
        ));
    })
    .await;
    Ok(())
}

async fn connection(
    minion: Arc<Minion>,
    acceptor: TlsAcceptor,
    tcp: TcpStream,
    peer: SocketAddr,
    slot: rpc::accept::Slot,
) {
    let _ = tcp.set_nodelay(true);
    let tcp = QuickAckStream::new(tcp);
    let handshake = tokio::time::timeout(minion.config.handshake_timeout, acceptor.accept(tcp));
    let tls = tokio::select! {
        done = handshake => match done {
            Ok(Ok(tls)) => tls,
            Ok(Err(e)) => {
                tracing::info!(%peer, error = %e, "TLS handshake refused");
                return;
            }
            Err(_) => {
                tracing::info!(%peer, "TLS handshake timed out");
                return;
            }
        },
        _ = slot.evicted() => {
            tracing::debug!(%peer, "closed before its handshake: its slot was needed");
            return;
        }
    };
    slot.established();
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
    builder.timer(TokioTimer::new());
    // Idle past the header deadline: ended with close_notify, then FIN.
    if let Err(e) = rpc::idle::serve(&mut builder, tls, service, header_timeout, &slot).await {
        tracing::debug!(%peer, error = %e, "connection ended with an error");
    }
}

async fn handle(minion: Arc<Minion>, peer: SocketAddr, who: PeerIdentity, req: Request<Incoming>) -> Reply {
    let caller = crate::acl::Caller::from(&who);
    let budget = match who.overlord {
        true => &minion.budget_overlord,
        false => &minion.budget_others,
    };
    let user = req
        .headers()
        .get(rpc::client::USER_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let refuse = |name: &str| dispatch::refusal(&minion, &caller, name);
    let admission = rpc::http::Admission {
        budget,
        refuse: &refuse,
    };
    // `_bytes` keeps the request's share of the budget until the reply.
    let (call, _bytes) = match rpc::http::read_call_admitted(
        req,
        &minion.config.limits,
        minion.config.body_timeout,
        &admission,
    )
    .await
    {
        Ok(read) => read,
        Err(reply) => return reply,
    };
    let max_depth = minion.config.limits.max_depth;
    let answer = dispatch::call(minion, peer, who, user, call.method, call.params)
        .await
        .encode(max_depth);
    // Wide integers and dateTime values go back in the form their sender
    // wrote them.
    rpc::http::xml(common::xmlrpc::lenient::restore(answer, &call.as_sent))
}
