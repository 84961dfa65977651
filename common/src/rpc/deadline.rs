//! A stream whose writes have a deadline: a peer that stops reading (its
//! answers never taken, pipelined requests piling up) cannot hold a
//! connection, and the slot it takes, for good. A write, flush or shutdown
//! that makes no progress for the deadline fails with `TimedOut`, which
//! ends the connection. Reads are untouched (idle limits are `rpc::idle`'s).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::Sleep;

use super::idle::IntoTcp;

/// `inner` with a deadline on writes that make no progress.
pub struct WriteDeadline<S> {
    inner: S,
    limit: Duration,
    /// Set while a write is stalled: when it runs out.
    stalled: Option<Pin<Box<Sleep>>>,
}

impl<S> WriteDeadline<S> {
    pub fn new(inner: S, limit: Duration) -> Self {
        WriteDeadline {
            inner,
            limit,
            stalled: None,
        }
    }

    /// What a write's poll means, given the deadline.
    fn judge<T>(&mut self, cx: &mut Context<'_>, polled: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        match polled {
            Poll::Ready(r) => {
                self.stalled = None;
                Poll::Ready(r)
            }
            Poll::Pending => {
                let limit = self.limit;
                let timer = self
                    .stalled
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
                match timer.as_mut().poll(cx) {
                    Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "the peer took no data for the write deadline",
                    ))),
                    Poll::Pending => Poll::Pending,
                }
            }
        }
    }
}

use std::future::Future as _;

impl<S: AsyncRead + Unpin> AsyncRead for WriteDeadline<S> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for WriteDeadline<S> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_write(cx, buf);
        this.judge(cx, polled)
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_flush(cx);
        this.judge(cx, polled)
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_shutdown(cx);
        this.judge(cx, polled)
    }
}

impl<S: IntoTcp> IntoTcp for WriteDeadline<S> {
    fn into_tcp(self) -> TcpStream {
        self.inner.into_tcp()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    #[tokio::test]
    async fn a_peer_that_never_reads_fails_the_write_at_the_deadline() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).await.unwrap();
        let (server, _) = listener.accept().await.unwrap();
        let mut timed = WriteDeadline::new(server, Duration::from_millis(300));
        let chunk = vec![0u8; 1 << 20];
        let err = loop {
            // The client never reads: the socket buffers fill, then stall.
            if let Err(e) = timed.write_all(&chunk).await {
                break e;
            }
        };
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        drop(client);
    }
}
