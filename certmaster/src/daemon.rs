//! The certmaster's network service on port 51235: XML-RPC
//! `wait_for_cert(csr_pem[, info])` → `[signed, cert_pem, ca_pem]` and
//! `get_crl()` → CRL PEM.
//!
//! One port speaks both plain HTTP (what Func's Python requester and
//! `xmlrpc.client` with `http://` use) and HTTPS (what `funcd` uses: the
//! certmaster's certificate names `certmaster` and chains to the CA, so a
//! minion that pins the CA fingerprint cannot be fooled on first contact).
//! The first byte of a connection decides: 0x16 starts a TLS handshake.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use common::config::{ConfigError, Ini};
use common::paths::Root;
use common::rpc::http::{read_call, xml, Reply};
use common::xmlrpc::{self, args::Args, Limits, FAULT_FUNC};
use common::Value;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioTimer;
use tokio::net::{TcpListener, TcpStream};

use crate::store::{Outcome, Store};
use certs::files::{write_atomic, PRIVATE, PUBLIC};
use certs::{layout, request, Authority, Result};

/// Func's certmaster port.
pub const DEFAULT_PORT: u16 = 51235;
/// Name in the certmaster's TLS certificate; minions check it.
pub const SERVER_NAME: &str = "certmaster";
/// Connections served at once; further ones wait in the kernel backlog.
const MAX_CONNECTIONS: usize = 1024;
/// A CSR is a few hundred bytes; nothing bigger is read.
const MAX_REQUEST: usize = 64 * 1024;

/// The certmaster's settings (`etc/certmaster/certmaster.conf`, `[main]`).
#[derive(Debug, Clone)]
pub struct CertmasterConfig {
    pub root: Root,
    pub listen: SocketAddr,
    pub autosign: bool,
    pub header_timeout: Duration,
    /// How long a new connection may take to send its first byte and
    /// finish the TLS handshake (`handshake_timeout`, default 5 s).
    pub handshake_timeout: Duration,
    /// Connections open at once from one source address
    /// (`max_connections_per_address`, default 16).
    pub connections_per_address: usize,
    /// Pending requests in all (`max_pending`, default 1000) and from one
    /// source address (`max_pending_per_address`, default 100).
    pub max_pending: usize,
    pub max_pending_per_address: usize,
}

impl CertmasterConfig {
    /// Reads the config file below `root`; flags given as `Some` win.
    pub fn load(
        root: Root,
        listen: Option<SocketAddr>,
        autosign: bool,
    ) -> std::result::Result<Self, ConfigError> {
        let ini = Ini::load(&root.certmaster_conf())?;
        let count = |key: &str, default: usize| -> std::result::Result<usize, ConfigError> {
            Ok(ini
                .u64("main", key)?
                .map_or(default, |v| v.clamp(1, 1 << 20) as usize))
        };
        let port = ini
            .u64("main", "listen_port")?
            .and_then(|p| u16::try_from(p).ok())
            .unwrap_or(DEFAULT_PORT);
        let addr = ini.str("main", "listen_addr").unwrap_or("0.0.0.0");
        let configured = format!("{addr}:{port}")
            .parse()
            .unwrap_or_else(|_| SocketAddr::from(([0, 0, 0, 0], port)));
        Ok(Self {
            listen: listen.unwrap_or(configured),
            autosign: autosign || ini.bool("main", "autosign")?.unwrap_or(false),
            header_timeout: Duration::from_secs_f64(
                ini.f64("main", "header_timeout")?
                    .unwrap_or(30.0)
                    .clamp(0.05, 3600.0),
            ),
            handshake_timeout: Duration::from_secs_f64(
                ini.f64("main", "handshake_timeout")?
                    .unwrap_or(5.0)
                    .clamp(0.05, 3600.0),
            ),
            connections_per_address: count("max_connections_per_address", 16)?,
            max_pending: count("max_pending", 1000)?,
            max_pending_per_address: count("max_pending_per_address", 100)?,
            root,
        })
    }
}

/// A running certmaster's state.
pub struct Certmaster {
    pub config: CertmasterConfig,
    pub store: Store,
    ca: Authority,
    tls: Arc<rustls::ServerConfig>,
    /// SHA-256 fingerprint of the CA certificate, for minions to pin.
    pub ca_fingerprint: String,
    /// Names of the pending requests each source address made (pruned of
    /// names no longer pending when counted).
    pending_from:
        std::sync::Mutex<std::collections::HashMap<std::net::IpAddr, std::collections::BTreeSet<String>>>,
}

impl Certmaster {
    /// Creates the CA and overlord credentials on first start, the
    /// certmaster's own TLS certificate, and an initial CRL.
    pub fn open(config: CertmasterConfig) -> Result<Self> {
        let root = config.root.clone();
        let host = nix::unistd::gethostname()
            .ok()
            .and_then(|h| h.into_string().ok())
            .unwrap_or_else(|| "certmaster".into());
        let (ca, _) = layout::ensure_ca(&root, &format!("{host}-CA-KEY"))?;
        let (key_path, cert_path) = (
            root.ca_dir().join("certmaster-server.pem"),
            root.ca_dir().join("certmaster-server.cert"),
        );
        if !key_path.exists() || !cert_path.exists() {
            let key = request::new_key()?;
            let signed = ca.issue_server(SERVER_NAME, &key)?;
            write_atomic(&key_path, key.serialize_pem().as_bytes(), PRIVATE)?;
            write_atomic(&cert_path, signed.cert_pem.as_bytes(), PUBLIC)?;
        }
        let store = Store::new(root.clone()).grouped();
        if !store.crl_path().exists() {
            store.publish_crl(&ca)?;
        }
        store.canonicalize_names()?;
        // Minions signed before a shared store was configured are listed too.
        store.share();
        let ca_der = certs::authority::pem_to_der(ca.cert_pem()).ok_or(certs::CertError::BadCertificate)?;
        let mut chain = common::tls::load_certs(&cert_path, "certmaster certificate").map_err(tls_error)?;
        chain.push(ca_der.clone().into());
        let key = common::tls::load_key(&key_path).map_err(tls_error)?;
        let tls = common::tls::server_config_open(chain, key).map_err(tls_error)?;
        Ok(Self {
            ca_fingerprint: common::identity::fingerprint_sha256(&ca_der),
            pending_from: Default::default(),
            config,
            store,
            ca,
            tls: Arc::new(tls),
        })
    }

    /// Whether a new pending request for `name` from `addr` fits the caps
    /// (`max_pending` in all, `max_pending_per_address`); records it if so.
    fn admit_pending(&self, addr: std::net::IpAddr, name: &str) -> Option<String> {
        let (all, per) = (self.config.max_pending, self.config.max_pending_per_address);
        if self.store.pending().len() >= all {
            return Some(format!(
                "too many pending requests ({all}); try again once some are signed or cleaned"
            ));
        }
        let mut from = self.pending_from.lock().unwrap_or_else(|p| p.into_inner());
        let names = from.entry(addr).or_default();
        names.retain(|n| self.store.is_pending(n));
        if names.len() >= per {
            return Some(format!("too many pending requests from {addr} ({per})"));
        }
        names.insert(name.to_string());
        None
    }

    /// The CA, for `certmaster-ca`-like operations in process.
    pub fn authority(&self) -> &Authority {
        &self.ca
    }
}

fn tls_error(e: common::tls::TlsError) -> certs::CertError {
    certs::CertError::Io {
        action: "loading TLS credentials",
        path: "etc/pki/certmaster/ca".into(),
        source: std::io::Error::other(e.to_string()),
    }
}

/// Serves `listener` until `shutdown` completes.
pub async fn serve(
    cm: Arc<Certmaster>,
    listener: TcpListener,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let per_address = cm.config.connections_per_address;
    common::rpc::accept::accept_loop(
        listener,
        MAX_CONNECTIONS,
        per_address,
        shutdown,
        |tcp, peer, permit| {
            let cm = Arc::clone(&cm);
            tokio::spawn(async move {
                connection(cm, tcp, peer, &permit).await;
                drop(permit);
            });
        },
    )
    .await;
    Ok(())
}

async fn connection(cm: Arc<Certmaster>, tcp: TcpStream, peer: SocketAddr, slot: &common::rpc::accept::Slot) {
    let _ = tcp.set_nodelay(true);
    let timeout = cm.config.header_timeout;
    let handshake = cm.config.handshake_timeout;
    let mut first = [0u8; 1];
    let peeked = tokio::select! {
        p = tokio::time::timeout(handshake, tcp.peek(&mut first)) => matches!(p, Ok(Ok(1))),
        _ = slot.evicted() => false,
    };
    if !peeked {
        return;
    }
    let service_cm = Arc::clone(&cm);
    let service = service_fn(move |req| {
        let cm = Arc::clone(&service_cm);
        async move { Ok::<_, Infallible>(handle(cm, peer, req).await) }
    });
    let mut builder = http1::Builder::new();
    builder.timer(TokioTimer::new());
    let served = if first[0] == 0x16 {
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::clone(&cm.tls));
        let accepted = tokio::select! {
            a = tokio::time::timeout(handshake, acceptor.accept(tcp)) => a,
            _ = slot.evicted() => return,
        };
        match accepted {
            Ok(Ok(tls)) => {
                slot.established();
                common::rpc::idle::serve(&mut builder, tls, service, timeout, slot).await
            }
            _ => return,
        }
    } else {
        slot.established();
        common::rpc::idle::serve(&mut builder, tcp, service, timeout, slot).await
    };
    if let Err(e) = served {
        tracing::debug!(%peer, error = %e, "connection ended with an error");
    }
}

async fn handle<B>(cm: Arc<Certmaster>, peer: SocketAddr, req: http::Request<B>) -> Reply
where
    B: hyper::body::Body,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    let limits = Limits {
        max_body: MAX_REQUEST,
        max_depth: 16,
        max_values: common::xmlrpc::DEFAULT_MAX_VALUES,
    };
    let call = match read_call(req, &limits, cm.config.header_timeout).await {
        Ok(call) => call,
        Err(reply) => return reply,
    };
    let method = call.method.clone();
    let answer = tokio::task::spawn_blocking(move || answer(&cm, peer, &call.method, &call.params)).await;
    let body = match answer {
        Ok(Ok(value)) => xmlrpc::encode_response(value, limits.max_depth)
            .unwrap_or_else(|e| xmlrpc::encode_fault(FAULT_FUNC, &e.to_string())),
        Ok(Err(message)) => {
            tracing::info!(%peer, method = %common::paths::shorten(&method), %message, "refused");
            xmlrpc::encode_fault(FAULT_FUNC, &message)
        }
        Err(_) => xmlrpc::encode_fault(FAULT_FUNC, "internal error"),
    };
    xml(body)
}

/// One method call; `Err` is the fault message.
fn answer(
    cm: &Certmaster,
    peer: SocketAddr,
    method: &str,
    params: &[Value],
) -> std::result::Result<Value, String> {
    let args = Args::new(method, params);
    match method {
        "wait_for_cert" => {
            args.arity(1, 2).map_err(|e| e.message)?;
            let csr = args.string(0, "csrbuf").map_err(|e| e.message)?;
            let address = match args.opt(1) {
                Some(Value::Struct(info)) => match info.get("address") {
                    Some(Value::String(a)) => Some(a.clone()),
                    _ => None,
                },
                _ => None,
            };
            let mut admit = |name: &str| cm.admit_pending(peer.ip().to_canonical(), name);
            let outcome = cm
                .store
                .request_admitted(
                    &cm.ca,
                    &csr,
                    address.as_deref(),
                    cm.config.autosign,
                    Some(peer.ip().to_canonical()),
                    &mut admit,
                )
                .map_err(|e| format!("certmaster error: {e}"))?;
            // Nothing is answered before what it says is on disk (many
            // requests share one sync).
            cm.store.commit().map_err(|e| format!("certmaster error: {e}"))?;
            match outcome {
                Outcome::Signed(cert) => {
                    tracing::info!(address = ?address, "certificate handed out");
                    if let Ok(name) = certs::authority::csr_name(&csr) {
                        cm.store.share_one(&name);
                    }
                    Ok(Value::Array(vec![
                        Value::Boolean(true),
                        Value::String(cert),
                        Value::String(cm.ca.cert_pem().to_string()),
                    ]))
                }
                Outcome::Pending => Ok(Value::Array(vec![
                    Value::Boolean(false),
                    Value::String(String::new()),
                    Value::String(String::new()),
                ])),
                Outcome::Refused(reason) => Err(format!("<class 'certmaster.CMException'>:{reason}")),
            }
        }
        "get_crl" => {
            args.arity(0, 0).map_err(|e| e.message)?;
            Ok(Value::String(cm.store.crl()))
        }
        _ => Err(format!(
            "<class 'certmaster.codes.InvalidMethodException'>:method {} is not supported",
            common::paths::shorten(method)
        )),
    }
}
