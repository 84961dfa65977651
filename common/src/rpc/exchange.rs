//! One HTTP/1.1 request and its response on a kept connection, done by the
//! calling task itself: the request is written in one piece, the response's
//! head is parsed with `httparse`, and its body is read by its length,
//! chunk by chunk, or to the end of the connection, never past `max_body`.
//!
//! Why not hyper's client here: it gives every connection its own task and
//! request queue (a channel that grows over a connection's first ~64
//! requests, ~17 KiB each), and every request two hand-offs between tasks.
//! A relay keeps one connection per minion of its segment, tens of
//! thousands, and calls each with one request at a time: the connection
//! needs no queue and no task of its own.

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Largest response head (status line and headers) accepted.
const MAX_HEAD: usize = 64 << 10;
/// Headers a response may have.
const MAX_HEADERS: usize = 64;
/// Longest chunk-size line (with extensions) or trailer line accepted.
const MAX_LINE: usize = 4096;
/// Interim answers (1xx) accepted before the real one.
const MAX_INTERIM: usize = 4;
/// Trailer bytes accepted after a chunked body.
const MAX_TRAILERS: usize = 64 << 10;
/// Room reserved for a body before its bytes come.
const INITIAL_BODY: usize = 64 << 10;

/// Why an exchange did not produce a response.
#[derive(Debug, thiserror::Error)]
pub enum ExchangeError {
    /// The connection ended (or failed) before the response was complete;
    /// `answered`: whether any of the response had come.
    #[error("{detail}")]
    Ended { answered: bool, detail: String },
    #[error("malformed response: {0}")]
    Malformed(String),
    #[error("response body larger than {0} bytes")]
    TooLarge(usize),
}

/// A complete response.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub body: Vec<u8>,
    /// Whether the connection may carry another request.
    pub keep_alive: bool,
}

/// Writes `request` (head and body) and reads the response to it.
pub async fn exchange<S>(stream: &mut S, request: &[u8], max_body: usize) -> Result<Response, ExchangeError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let sent = async {
        stream.write_all(request).await?;
        stream.flush().await
    };
    sent.await.map_err(|e| ended(false, &e))?;
    let mut reader = Reader {
        stream,
        buf: Vec::with_capacity(4096),
        pos: 0,
    };
    for _ in 0..MAX_INTERIM + 1 {
        let head = reader.head().await?;
        // An interim answer (100 Continue and the like) precedes the real one.
        if (100..200).contains(&head.status) && head.status != 101 {
            continue;
        }
        let body = match head.framing {
            _ if head.status == 204 || head.status == 304 => Vec::new(),
            Framing::Chunked => reader.chunked(max_body).await?,
            Framing::Length(n) => reader.exact(n, max_body).await?,
            Framing::ToEnd => reader.until_end(max_body).await?,
        };
        let keep_alive = head.keep_alive && !matches!(head.framing, Framing::ToEnd);
        return Ok(Response {
            status: head.status,
            body,
            keep_alive: keep_alive && reader.pos == reader.buf.len(),
        });
    }
    Err(ExchangeError::Malformed(format!(
        "more than {MAX_INTERIM} interim answers"
    )))
}

fn ended(answered: bool, e: &std::io::Error) -> ExchangeError {
    ExchangeError::Ended {
        answered,
        detail: e.to_string(),
    }
}

fn eof(answered: bool) -> ExchangeError {
    ExchangeError::Ended {
        answered,
        detail: "connection closed".into(),
    }
}

enum Framing {
    Chunked,
    Length(usize),
    ToEnd,
}

struct Head {
    status: u16,
    framing: Framing,
    keep_alive: bool,
}

struct Reader<'a, S> {
    stream: &'a mut S,
    buf: Vec<u8>,
    /// Bytes of `buf` already consumed.
    pos: usize,
}

impl<S: AsyncRead + Unpin> Reader<'_, S> {
    /// Reads more into the buffer; `false` at the end of the connection.
    async fn fill(&mut self) -> Result<bool, ExchangeError> {
        let answered = !self.buf.is_empty();
        // What was read is dropped before more comes: the buffer holds an
        // unread part only, which the callers bound.
        self.buf.drain(..self.pos);
        self.pos = 0;
        if self.buf.capacity() - self.buf.len() < 1024 {
            self.buf.reserve(8192);
        }
        let n = self
            .stream
            .read_buf(&mut self.buf)
            .await
            .map_err(|e| ended(answered, &e))?;
        Ok(n > 0)
    }

    async fn head(&mut self) -> Result<Head, ExchangeError> {
        loop {
            let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
            let mut parsed = httparse::Response::new(&mut headers);
            let status = parsed
                .parse(&self.buf[self.pos..])
                .map_err(|e| ExchangeError::Malformed(e.to_string()))?;
            if let httparse::Status::Complete(len) = status {
                let head = read_head(&parsed)?;
                self.pos += len;
                return Ok(head);
            }
            if self.buf.len() - self.pos > MAX_HEAD {
                return Err(ExchangeError::Malformed(format!(
                    "head larger than {MAX_HEAD} bytes"
                )));
            }
            if !self.fill().await? {
                return Err(eof(self.buf.len() > self.pos));
            }
        }
    }

    /// Takes up to `n` buffered bytes into `out`.
    fn take(&mut self, n: usize, out: &mut Vec<u8>) -> usize {
        let k = n.min(self.buf.len() - self.pos);
        out.extend_from_slice(&self.buf[self.pos..self.pos + k]);
        self.pos += k;
        k
    }

    async fn exact(&mut self, n: usize, max: usize) -> Result<Vec<u8>, ExchangeError> {
        if n > max {
            return Err(ExchangeError::TooLarge(max));
        }
        // Grown as the bytes come, not reserved for what the head claims:
        // a length is a promise, and a rogue peer's costs nothing to make.
        let mut out = Vec::with_capacity(n.min(INITIAL_BODY));
        self.read_into(n, &mut out).await?;
        Ok(out)
    }

    /// Appends exactly `n` more bytes of the body to `out`.
    async fn read_into(&mut self, n: usize, out: &mut Vec<u8>) -> Result<(), ExchangeError> {
        let mut left = n - self.take(n, out);
        while left > 0 {
            let want = out.len() + left;
            let got = (&mut *self.stream)
                .take(left as u64)
                .read_to_end(out)
                .await
                .map_err(|e| ended(true, &e))?;
            if got == 0 {
                return Err(eof(true));
            }
            left = want - out.len();
        }
        Ok(())
    }

    async fn until_end(&mut self, max: usize) -> Result<Vec<u8>, ExchangeError> {
        let mut out = Vec::new();
        self.take(usize::MAX, &mut out);
        loop {
            if out.len() > max {
                return Err(ExchangeError::TooLarge(max));
            }
            let room = (max - out.len()) as u64 + 1;
            let got = (&mut *self.stream)
                .take(room.min(1 << 20))
                .read_to_end(&mut out)
                .await
                .map_err(|e| ended(true, &e))?;
            if got == 0 {
                return Ok(out);
            }
        }
    }

    /// One line (without its CRLF) of at most [`MAX_LINE`] bytes.
    async fn line(&mut self) -> Result<Vec<u8>, ExchangeError> {
        loop {
            let rest = &self.buf[self.pos..];
            if let Some(i) = rest.windows(2).position(|w| w == b"\r\n") {
                let line = rest[..i].to_vec();
                self.pos += i + 2;
                return Ok(line);
            }
            if rest.len() > MAX_LINE {
                return Err(ExchangeError::Malformed("chunk line too long".into()));
            }
            if !self.fill().await? {
                return Err(eof(true));
            }
        }
    }

    async fn chunked(&mut self, max: usize) -> Result<Vec<u8>, ExchangeError> {
        let mut out = Vec::new();
        loop {
            let line = self.line().await?;
            let size = line.split(|&b| b == b';').next().unwrap_or_default();
            let size = std::str::from_utf8(size)
                .ok()
                .map(str::trim)
                .filter(|s| !s.is_empty() && s.len() <= 16)
                .and_then(|s| usize::from_str_radix(s, 16).ok())
                .ok_or_else(|| ExchangeError::Malformed("bad chunk size".into()))?;
            if size == 0 {
                // Trailers, up to the empty line.
                let mut trailers = 0;
                loop {
                    let line = self.line().await?;
                    trailers += line.len() + 2;
                    if line.is_empty() {
                        return Ok(out);
                    }
                    if trailers > MAX_TRAILERS {
                        return Err(ExchangeError::Malformed("trailers too long".into()));
                    }
                }
            }
            if size > max.saturating_sub(out.len()) {
                return Err(ExchangeError::TooLarge(max));
            }
            self.read_into(size, &mut out).await?;
            if !self.line().await?.is_empty() {
                return Err(ExchangeError::Malformed("chunk without its CRLF".into()));
            }
        }
    }
}

fn read_head(parsed: &httparse::Response<'_, '_>) -> Result<Head, ExchangeError> {
    let status = parsed
        .code
        .ok_or_else(|| ExchangeError::Malformed("no status".into()))?;
    let http11 = parsed.version == Some(1);
    let mut keep_alive = http11;
    let (mut chunked, mut length) = (false, None);
    for h in parsed.headers.iter() {
        let value = std::str::from_utf8(h.value).unwrap_or_default().trim();
        if h.name.eq_ignore_ascii_case("connection") {
            for token in value.split(',').map(str::trim) {
                if token.eq_ignore_ascii_case("close") {
                    keep_alive = false;
                } else if token.eq_ignore_ascii_case("keep-alive") {
                    keep_alive = true;
                }
            }
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            // The last coding decides (RFC 9112 §6.3): chunked, or to the end.
            chunked = value
                .rsplit(',')
                .next()
                .is_some_and(|c| c.trim().eq_ignore_ascii_case("chunked"));
            if !chunked {
                keep_alive = false;
            }
        } else if h.name.eq_ignore_ascii_case("content-length") {
            let n: usize = value
                .parse()
                .map_err(|_| ExchangeError::Malformed("bad content-length".into()))?;
            if length.is_some_and(|m| m != n) {
                return Err(ExchangeError::Malformed("conflicting content-length".into()));
            }
            length = Some(n);
        }
    }
    let framing = match (chunked, length) {
        (true, _) => Framing::Chunked,
        (false, Some(n)) => Framing::Length(n),
        (false, None) => Framing::ToEnd,
    };
    Ok(Head {
        status,
        framing,
        keep_alive,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn answer(reply: &[u8], max: usize) -> Result<Response, ExchangeError> {
        let (mut client, mut server) = tokio::io::duplex(1 << 16);
        let reply = reply.to_vec();
        let serve = tokio::spawn(async move {
            let mut got = vec![0u8; 4];
            server.read_exact(&mut got).await.unwrap();
            server.write_all(&reply).await.unwrap();
            // The server ends the connection after its answer.
        });
        let r = exchange(&mut client, b"ping", max).await;
        serve.await.unwrap();
        r
    }

    #[tokio::test]
    async fn reads_each_framing() {
        let r = answer(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", 100)
            .await
            .unwrap();
        assert_eq!((r.status, &r.body[..], r.keep_alive), (200, &b"hello"[..], true));
        let r = answer(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nhel\r\n2\r\nlo\r\n0\r\nT: 1\r\n\r\n",
            100,
        )
        .await
        .unwrap();
        assert_eq!((&r.body[..], r.keep_alive), (&b"hello"[..], true));
        let r = answer(b"HTTP/1.0 200 OK\r\n\r\nhello", 100).await.unwrap();
        assert_eq!((&r.body[..], r.keep_alive), (&b"hello"[..], false));
        let r = answer(
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 500 No\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            100,
        )
        .await
        .unwrap();
        assert_eq!((r.status, r.keep_alive), (500, false));
    }

    #[tokio::test]
    async fn refuses_what_is_too_large_or_cut_or_malformed() {
        let too_large = answer(b"HTTP/1.1 200 OK\r\nContent-Length: 500\r\n\r\n", 100).await;
        assert!(
            matches!(too_large, Err(ExchangeError::TooLarge(100))),
            "{too_large:?}"
        );
        let chunks = answer(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n40\r\n", 60).await;
        assert!(matches!(chunks, Err(ExchangeError::TooLarge(60))), "{chunks:?}");
        let to_end = answer(
            &[b"HTTP/1.0 200 OK\r\n\r\n".as_slice(), &[b'x'; 200]].concat(),
            100,
        )
        .await;
        assert!(matches!(to_end, Err(ExchangeError::TooLarge(100))), "{to_end:?}");
        let cut = answer(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhel", 100).await;
        assert!(
            matches!(cut, Err(ExchangeError::Ended { answered: true, .. })),
            "{cut:?}"
        );
        let none = answer(b"", 100).await;
        assert!(
            matches!(none, Err(ExchangeError::Ended { answered: false, .. })),
            "{none:?}"
        );
        for bad in [
            &b"NOT HTTP\r\n\r\n"[..],
            b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        ] {
            let r = answer(bad, 100).await;
            assert!(matches!(r, Err(ExchangeError::Malformed(_))), "{r:?}");
        }
        // Endless interim answers, endless trailers: refused, not buffered.
        let interim = b"HTTP/1.1 100 Continue\r\n\r\n".repeat(MAX_INTERIM + 1);
        let r = answer(&interim, 100).await;
        assert!(matches!(r, Err(ExchangeError::Malformed(_))), "{r:?}");
        let trailers = [
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n".as_slice(),
            &b"T: 0123456789abcdef0123456789abcdef\r\n".repeat(MAX_TRAILERS / 30),
        ]
        .concat();
        let r = answer(&trailers, 100).await;
        assert!(matches!(r, Err(ExchangeError::Malformed(_))), "{r:?}");
        let head = [b"HTTP/1.1 200 OK\r\n".as_slice(), &[b'x'; MAX_HEAD + 10]].concat();
        let r = answer(&head, 100).await;
        assert!(matches!(r, Err(ExchangeError::Malformed(_))), "{r:?}");
    }
}
