//! What every handler shares ([`Api`]: the root, settings, the job store,
//! the warm pool, tokens, sessions, the event bus, limits, the audit log)
//! and what a connection tells its requests ([`Peer`]).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use common::paths::Root;
use tokio::sync::Semaphore;

use super::{bus, config, sessions, tokens};
use overlord::audit;
use overlord::pool::Pool;
use overlord::store::Store;

/// Everything the handlers share.
pub struct Api {
    pub root: Root,
    pub settings: config::ApiSettings,
    pub store: Store,
    pub pool: Arc<Pool>,
    pub tokens: Mutex<tokens::Tokens>,
    pub sessions: Mutex<sessions::Sessions>,
    pub bus: Arc<bus::Bus>,
    /// Calls in progress per caller (a semaphore each).
    pub busy: Mutex<HashMap<String, Arc<Semaphore>>>,
    /// Event streams open per caller.
    pub streams: Mutex<HashMap<String, usize>>,
    /// Our own executable: the drivers of async jobs and batches.
    pub exe: PathBuf,
    pub audit: audit::Audit,
    /// Requests in progress (event streams aside), for a clean stop.
    pub in_flight: std::sync::atomic::AtomicUsize,
    /// Failed authentications per address.
    pub failures: super::failures::Failures,
    /// The service's TLS configuration (made, with its certificate, first).
    pub tls: Arc<rustls::ServerConfig>,
    /// Requests without credentials in progress (bounded apart from
    /// callers', and per address).
    pub anonymous: Arc<super::anonymous::Anonymous>,
    /// When the service started (epoch seconds): jobs begun since are new.
    pub started: f64,
    /// Counters for `GET /metrics`.
    pub metrics: super::counters::Metrics,
    /// How calls are made when the request does not say: overlord.conf's
    /// `socket_timeout`, as for `func`; the forks of async drivers.
    pub dispatch: overlord::dispatch::Dispatch,
    /// As a relay: the nonces of the requests it ran.
    pub nonces: overlord::relay::nonces::Nonces,
    /// Single sign-on (`[oidc]`, `[roles]`), when set up.
    pub sso: Option<super::oidc::flow::Sso>,
    /// Notifications (`[notify.NAME]`), when any target is set.
    pub notifier: Option<super::notify::queue::Notifier>,
}

impl Api {
    /// The service's state below `root`.
    pub fn new(root: Root, settings: config::ApiSettings) -> anyhow::Result<Self> {
        use anyhow::Context as _;
        let calling = overlord::settings::Calling::of_root(&root);
        // Kept connections never take the descriptors the service needs
        // (its clients, its files, new connections to minions).
        let nofile = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)
            .map_or(1024, |(soft, _)| soft);
        let headroom = settings.max_connections as u64 + 4096;
        let max_idle = settings
            .max_idle_connections
            .min(nofile.saturating_sub(headroom).max(64) as usize);
        if max_idle < settings.max_idle_connections {
            tracing::warn!(
                configured = settings.max_idle_connections,
                kept = max_idle,
                open_files = nofile,
                "[api] max_idle_connections lowered to fit the open-files limit"
            );
        }
        // Said before the service listens: one listing of the minions,
        // as its first call makes anyway.
        keeps_every_connection(&root, max_idle, nofile);
        let pool = Pool::new(calling)
            .context("the overlord's certificate (is the certmaster set up below this root?)")?
            .with_max_idle(max_idle)
            .with_idle_for(std::time::Duration::from_secs(settings.keep_idle_for));
        // The newest CRL, local or shared, kept current while running: the
        // pool rebuilds its TLS (and drops kept connections) when it changes.
        let crl_root = root.clone();
        std::thread::Builder::new()
            .name("crl".into())
            .spawn(move || loop {
                let url = overlord::settings::store_url(&crl_root).and_then(Result::ok);
                overlord::revocation::effective(&crl_root, url.as_ref());
                std::thread::sleep(std::time::Duration::from_secs(2));
            })
            .context("starting the CRL watcher")?;
        let targets = super::notify::settings::load(&root).map_err(anyhow::Error::msg)?;
        let notifier = (!targets.is_empty()).then(|| super::notify::queue::Notifier::new(targets));
        Ok(Api {
            notifier,
            store: overlord::settings::store(&root),
            pool: Arc::new(pool),
            tokens: Mutex::new(tokens::Tokens::new(&root)),
            sessions: Mutex::new(sessions::Sessions::default()),
            bus: Arc::new(bus::Bus::new(settings.event_backlog)),
            busy: Mutex::new(HashMap::new()),
            streams: Mutex::new(HashMap::new()),
            exe: common::process::own_exe().context("finding func-api's own executable")?,
            audit: audit::Audit::new(&root),
            failures: super::failures::Failures::new(settings.auth_failures),
            in_flight: std::sync::atomic::AtomicUsize::new(0),
            tls: Arc::new(super::tls::server_config(&root, &settings)?),
            anonymous: Arc::default(),
            started: overlord::store::now(),
            metrics: Default::default(),
            dispatch: overlord::dispatch::Dispatch::for_root(&root, None, None)
                .map_err(|e| anyhow::anyhow!("{e}"))?,
            nonces: overlord::relay::nonces::Nonces::load(&root),
            sso: match super::oidc::settings::load(&root).map_err(anyhow::Error::msg)? {
                Some((oidc, roles)) => Some(
                    super::oidc::flow::Sso::new(oidc, roles, settings.public_url.clone())
                        .map_err(anyhow::Error::msg)?,
                ),
                None => None,
            },
            settings,
            root,
        })
    }
}

/// Warns when this service cannot keep a connection to every minion it
/// calls itself (those the delegation map puts behind no relay): each call
/// to the others pays a TLS handshake. Relays and `LimitNOFILE` are sized by
/// docs/SCALING.md.
fn keeps_every_connection(root: &Root, kept: usize, nofile: u64) {
    let minions = overlord::targets::all_minions(root);
    let direct = match overlord::relay::Routes::load(root, None) {
        Ok(Some(routes)) => routes.split(minions).0.len(),
        _ => minions.len(),
    };
    if direct > kept {
        tracing::warn!(
            minions = direct,
            kept,
            open_files = nofile,
            "func-api cannot keep a connection to every minion it calls: raise the open-files limit \
             (LimitNOFILE) and [api] max_idle_connections, or put hosts behind relays (docs/SCALING.md)"
        );
    }
}

/// What the connection tells a request: the peer, and whether it showed
/// the overlord's certificate.
#[derive(Debug, Clone)]
pub struct Peer {
    pub addr: SocketAddr,
    /// The CN of a client certificate with the overlord mark.
    pub overlord: Option<String>,
}
