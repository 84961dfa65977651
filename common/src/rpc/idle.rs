//! Serves one HTTP/1.1 keep-alive connection and ends it cleanly once it has
//! been idle for the server's header deadline.
//!
//! hyper's own header timer drops an idle connection without a TLS
//! `close_notify`. Python's `xmlrpc.client.ServerProxy` keeps one connection
//! and retries a call once only when the server ended it cleanly, so the
//! next call of a program that waited raised `ssl.SSLEOFError`. Two things
//! make the end clean:
//!
//! - the connection is shut down here: TLS `close_notify`, then FIN;
//! - the socket then *lingers*, reading and discarding, until the client
//!   closes it (or its slot is needed, or ten minutes pass). Closing it at
//!   once would make the client's next request meet a TCP reset between
//!   its header and body writes (http.client writes them apart), which
//!   Python also reports as `SSLEOFError`. Lingering, the request is taken
//!   and dropped, the client reads the `close_notify`, sees a clean end
//!   (`RemoteDisconnected`), and its retry opens a new connection. A
//!   lingering socket keeps no TLS state, still counts against its
//!   address's connection cap, and its accept slot may be taken back for a
//!   new connection ([`Slot::lingering`]).
//!
//! Idle means no request is being served and none has started for `idle`;
//! a client that sends a request head too slowly is ended the same way.
//! hyper's header timer stays as a backstop at twice `idle`.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hyper::body::{Body, Incoming};
use hyper::server::conn::http1;
use hyper::service::Service;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Instant;

use super::accept::Slot;

/// Longest a closed idle socket lingers for its client to notice: a
/// program that calls every few minutes with one connection reconnects
/// cleanly; one that waits longer meets a reset, as with any server.
const LINGER_MAX: Duration = Duration::from_secs(600);

/// A connection's stream that can give back its TCP socket once shut down.
pub trait IntoTcp: AsyncRead + AsyncWrite + Unpin + Send + 'static {
    fn into_tcp(self) -> TcpStream;
}

impl IntoTcp for TcpStream {
    fn into_tcp(self) -> TcpStream {
        self
    }
}

impl<T: IntoTcp> IntoTcp for tokio_rustls::server::TlsStream<T> {
    fn into_tcp(self) -> TcpStream {
        self.into_inner().0.into_tcp()
    }
}

/// Requests in progress and when the last one ended (or the connection began).
struct Activity {
    busy: usize,
    since: Instant,
}

/// Counts one request in progress until dropped.
struct Busy(Arc<Mutex<Activity>>);

impl Busy {
    fn new(activity: &Arc<Mutex<Activity>>) -> Self {
        if let Ok(mut a) = activity.lock() {
            a.busy += 1;
        }
        Busy(Arc::clone(activity))
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        if let Ok(mut a) = self.0.lock() {
            a.busy = a.busy.saturating_sub(1);
            a.since = Instant::now();
        }
    }
}

/// `inner`, counting its requests in `activity`.
struct Counted<S> {
    inner: S,
    activity: Arc<Mutex<Activity>>,
}

type Boxed<T, E> = Pin<Box<dyn Future<Output = Result<T, E>> + Send>>;

impl<S, B> Service<Request<Incoming>> for Counted<S>
where
    S: Service<Request<Incoming>, Response = Response<B>>,
    S::Future: Send + 'static,
{
    type Response = Response<B>;
    type Error = S::Error;
    type Future = Boxed<Response<B>, S::Error>;

    fn call(&self, req: Request<Incoming>) -> Self::Future {
        let busy = Busy::new(&self.activity);
        let answer = self.inner.call(req);
        Box::pin(async move {
            let reply = answer.await;
            drop(busy);
            reply
        })
    }
}

/// Serves `io` with `service` until the client ends the connection, an
/// error ends it, or it has been idle for `idle`: then it is shut down
/// (close_notify, FIN) and lingers as the module says, holding `slot`.
/// `builder` must have a timer set; its header timeout is set here.
pub async fn serve<T, S, B>(
    builder: &mut http1::Builder,
    io: T,
    service: S,
    idle: Duration,
    slot: &Slot,
) -> Result<(), hyper::Error>
where
    T: IntoTcp,
    S: Service<Request<Incoming>, Response = Response<B>> + Unpin + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let activity = Arc::new(Mutex::new(Activity {
        busy: 0,
        since: Instant::now(),
    }));
    let service = Counted {
        inner: service,
        activity: Arc::clone(&activity),
    };
    builder
        .header_read_timeout(idle.saturating_mul(2))
        .keep_alive(true);
    let mut conn = builder.serve_connection(TokioIo::new(io), service);
    let mut idled = false;
    let ended = loop {
        let deadline = match activity.lock() {
            Ok(a) if a.busy > 0 => Instant::now() + idle,
            Ok(a) => a.since + idle,
            Err(_) => Instant::now() + idle,
        };
        let served = tokio::select! {
            // The idle deadline first: on a busy machine the task may wake
            // after both it and hyper's header timer have passed, and the
            // end must then still be the graceful one.
            biased;
            _ = tokio::time::sleep_until(deadline), if !idled => {
                let now_idle = activity
                    .lock()
                    .map(|a| a.busy == 0 && a.since + idle <= Instant::now())
                    .unwrap_or(true);
                if now_idle {
                    // Ends at once when no request is in progress.
                    Pin::new(&mut conn).graceful_shutdown();
                    idled = true;
                }
                continue;
            }
            served = std::future::poll_fn(|cx| conn.poll_without_shutdown(cx)) => served,
        };
        break served;
    };
    // Ended without hyper touching the stream: shut it down ourselves, and
    // linger whatever ended it (our idle limit, hyper's header timer, a bad
    // request), so a request already on its way meets a clean end, never
    // a reset. A client that closed first ends the lingering at once.
    let mut io = conn.into_parts().io.into_inner();
    let _ = tokio::time::timeout(idle, io.shutdown()).await;
    linger(io.into_tcp(), slot).await;
    ended
}

/// Reads and drops whatever the client still sends until it closes the
/// socket, its slot is needed, or [`LINGER_MAX`] passes.
async fn linger(mut tcp: TcpStream, slot: &Slot) {
    slot.lingering();
    let mut sink = [0u8; 4096];
    let drain = async {
        while let Ok(n) = tcp.read(&mut sink).await {
            if n == 0 {
                break;
            }
        }
    };
    tokio::select! {
        _ = tokio::time::timeout(LINGER_MAX, drain) => {}
        _ = slot.evicted() => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::convert::Infallible;

    /// An idle connection ends with a clean EOF (the client's read
    /// returns 0) after answering, and a request the client sends after
    /// that meets no reset: its writes succeed and its read sees the end.
    #[tokio::test]
    async fn an_idle_connection_ends_cleanly_and_lingers_for_the_late_request() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            let (tcp, peer) = listener.accept().await.unwrap();
            let slot = crate::rpc::accept::Slot::standalone(peer.ip());
            let service = hyper::service::service_fn(|_req| async {
                Ok::<_, Infallible>(Response::new(http_body_util::Full::new(
                    bytes::Bytes::from_static(b"hi"),
                )))
            });
            let mut builder = http1::Builder::new();
            builder.timer(hyper_util::rt::TokioTimer::new());
            serve(&mut builder, tcp, service, Duration::from_millis(200), &slot).await
        });
        let request = b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n";
        let mut client = tokio::net::TcpStream::connect(addr).await.unwrap();
        client.write_all(request).await.unwrap();
        client.write_all(b"{}").await.unwrap();
        let mut got = Vec::new();
        client.read_to_end(&mut got).await.unwrap();
        let text = String::from_utf8_lossy(&got);
        assert!(text.starts_with("HTTP/1.1 200") && text.ends_with("hi"), "{text}");
        // The late request, head and body in two writes, as http.client does.
        for _ in 0..3 {
            client.write_all(request).await.expect("no reset");
            tokio::task::yield_now().await;
            client
                .write_all(b"{}")
                .await
                .expect("no reset between the writes");
        }
        assert_eq!(client.read(&mut [0u8; 16]).await.unwrap(), 0, "a clean end");
        drop(client);
        assert!(server.await.unwrap().is_ok(), "a graceful end is no error");
    }
}
