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
use std::sync::Arc;

use common::identity::PeerIdentity;
use common::rpc::{self, http::Reply};
use http::Request;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioTimer;
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;

use crate::dispatch;
use crate::quickack::QuickAckStream;
use crate::state::Minion;

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
    let request = req
        .headers()
        .get(rpc::client::REQUEST_HEADER)
        .and_then(|v| v.to_str().ok())
        .filter(|v| rpc::client::is_request_id(v))
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
    let answer = dispatch::call(minion, peer, who, (user, request), call.method, call.params)
        .await
        .encode(max_depth);
    // Wide integers and dateTime values go back in the form their sender
    // wrote them.
    rpc::http::xml(common::xmlrpc::lenient::restore(answer, &call.as_sent))
}
