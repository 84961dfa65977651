//! A running minion's shared state ([`Minion`]): configuration, module
//! registry, ACL, audit log, job store, per-caller limits and the TLS
//! configuration new connections use. Built once at start; the network
//! side (`server.rs`) and each call (`dispatch.rs`) read it.

use std::sync::{Arc, RwLock};

use common::tls::Credentials;
use rustls::pki_types::pem::PemObject;
use tokio_rustls::TlsAcceptor;

use crate::acl::Acl;
use crate::audit::AuditLog;
use crate::config::MinionConfig;
use crate::jobs::Jobs;
use crate::modules::Registry;

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
    pub(crate) budget_others: Arc<tokio::sync::Semaphore>,
    pub(crate) budget_overlord: Arc<tokio::sync::Semaphore>,
    creds: Credentials,
    /// The TLS configuration new connections use; replaced when a new CRL arrives.
    tls: RwLock<Arc<rustls::ServerConfig>>,
}

/// Why a minion cannot start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("minion {name:?}: no {what} at {path} — enroll with the certmaster first (see docs/INSTALL.md)")]
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
        let exe = std::env::current_exe().map_err(|e| StartError::Exe(e.to_string()))?;
        Self::with_exe(config, exe)
    }

    /// As [`Minion::new`], with the `funcd` executable whose job zygote
    /// (`funcd --job-zygote`) starts async jobs (a minion run in another
    /// program, a test, names it).
    pub fn with_exe(config: MinionConfig, exe: std::path::PathBuf) -> Result<Self, StartError> {
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

    pub(crate) fn acceptor(&self) -> TlsAcceptor {
        TlsAcceptor::from(Arc::clone(&self.tls.read().unwrap_or_else(|p| p.into_inner())))
    }
}
