//! The swarm's network side: one listener for every identity. The TLS
//! server name the caller asks for picks the identity and its certificate
//! (the overlord sends the minion's name, and checks the certificate names
//! it); callers must present a certificate of the same CA, and only the
//! overlord's (the CA's overlord mark) may call, as a minion without ACL
//! files allows.

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use common::identity::PeerIdentity;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use rustls::server::{ClientHello, ResolvesServerCert, WebPkiClientVerifier};
use rustls::sign::CertifiedKey;
use tokio::net::TcpListener;

use super::enroll::Identities;
use super::wire::{self, Jobs};

/// What the swarm serves: a certificate per name, and the jobs of all.
pub struct Swarm {
    tls: Arc<rustls::ServerConfig>,
    pub jobs: Jobs,
}

#[derive(Debug)]
struct ByName(HashMap<String, Arc<CertifiedKey>>);

impl ResolvesServerCert for ByName {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        hello.server_name().and_then(|n| self.0.get(n)).cloned()
    }
}

impl Swarm {
    pub fn new(ids: Identities) -> anyhow::Result<Self> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut by_name = HashMap::with_capacity(ids.identities.len());
        for id in ids.identities {
            let key = provider
                .key_provider
                .load_private_key(rustls::pki_types::PrivateKeyDer::Pkcs8(id.key_der.into()))?;
            let chain = vec![rustls::pki_types::CertificateDer::from(id.cert_der)];
            by_name.insert(id.name, Arc::new(CertifiedKey::new(chain, key)));
        }
        let mut roots = rustls::RootCertStore::empty();
        roots.add(rustls::pki_types::CertificateDer::from(ids.ca_der))?;
        let verifier =
            WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone()).build()?;
        let mut tls = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_client_cert_verifier(verifier)
            .with_cert_resolver(Arc::new(ByName(by_name)));
        // Resumption would hand one identity's session to another name.
        tls.session_storage = Arc::new(rustls::server::NoServerSessionStorage {});
        tls.send_tls13_tickets = 0;
        Ok(Self {
            tls: Arc::new(tls),
            jobs: Jobs::default(),
        })
    }
}

/// Serves until `shutdown`; each connection in its own task.
pub async fn serve(swarm: Arc<Swarm>, listener: TcpListener, shutdown: impl Future<Output = ()>) {
    tokio::pin!(shutdown);
    let acceptor = tokio_rustls::TlsAcceptor::from(swarm.tls.clone());
    loop {
        let (tcp, _peer) = tokio::select! {
            _ = &mut shutdown => return,
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                // Out of descriptors: wait for some to close.
                Err(_) => { tokio::time::sleep(Duration::from_millis(50)).await; continue; }
            },
        };
        let _ = tcp.set_nodelay(true);
        let (swarm, acceptor) = (swarm.clone(), acceptor.clone());
        tokio::spawn(async move {
            let Ok(Ok(tls)) = tokio::time::timeout(Duration::from_secs(30), acceptor.accept(tcp)).await
            else {
                return;
            };
            let (_, conn) = tls.get_ref();
            let Some(name) = conn.server_name().map(str::to_string) else {
                return;
            };
            let overlord = conn
                .peer_certificates()
                .and_then(|c| c.first())
                .and_then(|c| PeerIdentity::from_der(c.as_ref()).ok())
                .is_some_and(|who| who.overlord);
            let name: Arc<str> = name.into();
            let service = service_fn(move |req| {
                let (swarm, name) = (swarm.clone(), name.clone());
                async move { Ok::<_, Infallible>(wire::handle(&swarm.jobs, &name, overlord, req).await) }
            });
            let mut builder = http1::Builder::new();
            builder
                .timer(TokioTimer::new())
                .header_read_timeout(Duration::from_secs(600));
            let _ = builder.serve_connection(TokioIo::new(tls), service).await;
        });
    }
}
