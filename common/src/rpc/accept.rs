//! The accept loop both servers share: at most `max_connections` served at
//! once (further ones wait in the kernel backlog), a short back-off when
//! `accept` fails (EMFILE and friends) instead of spinning, and a clean stop
//! when `shutdown` completes. Each connection is handed to `on_connection`
//! with the slot it holds until it ends.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Accepts until `shutdown` completes.
pub async fn accept_loop(
    listener: TcpListener,
    max_connections: usize,
    shutdown: impl Future<Output = ()>,
    mut on_connection: impl FnMut(TcpStream, SocketAddr, OwnedSemaphorePermit),
) {
    let slots = Arc::new(Semaphore::new(max_connections.max(1)));
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
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        on_connection(tcp, peer, permit);
    }
}
