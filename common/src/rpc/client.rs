//! A keep-alive XML-RPC client for one server (a minion, or the certmaster): TCP connect and TLS handshake
//! under a deadline, the overlord's client certificate, and a check that the
//! minion's certificate names the minion we meant to call (TLS server name).
//! Each call is one HTTP/1.1 exchange done by the calling task on the
//! connection itself ([`super::exchange`]): a kept connection costs its TLS
//! state and nothing else.
//! A fault from the minion is a value ([`CallError::Fault`]) distinct from
//! transport failures, so callers can report each host on its own.

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Waker};
use std::time::Duration;

use super::exchange::{exchange, ExchangeError};
use crate::xmlrpc::{self, DecodeError, Limits};
use crate::Value;
use http::StatusCode;
use rustls::pki_types::ServerName;
use tokio::io::{AsyncRead, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;

/// Largest response accepted from a minion by default (a big
/// `command.run` output fits); the overlord's `max_response_size` changes it.
pub const MAX_RESPONSE: usize = 64 << 20;

/// Why a call did not produce a value.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    #[error("cannot connect to {addr}: {detail}")]
    Connect { addr: SocketAddr, detail: String },
    #[error("TLS with {name} failed: {detail}")]
    Tls { name: String, detail: String },
    #[error("timed out after {0:?}")]
    Timeout(Duration),
    #[error("HTTP error: {0}")]
    Http(String),
    /// The exchange broke after the minion had begun to answer (cut short,
    /// or not HTTP): it read the call, so the call is never sent again.
    #[error("HTTP error: {0}")]
    Answered(String),
    #[error("minion answered HTTP {0}")]
    Status(StatusCode),
    #[error("response larger than {0} bytes (max_response_size in overlord.conf)")]
    TooLarge(usize),
    #[error("undecodable response: {0}")]
    Decode(#[from] DecodeError),
    #[error("cannot encode call: {0}")]
    Encode(String),
    #[error("fault {code}: {message}")]
    Fault { code: i32, message: String },
}

/// One open connection to one minion.
pub struct MinionClient {
    /// Boxed: allocated once for the connection's life, wherever the
    /// client itself is moved (a pool keeps tens of thousands).
    stream: Box<TlsStream<TcpStream>>,
    /// The connection cannot carry another request: the minion ended it,
    /// said it would, or an exchange on it did not complete (a call given
    /// up mid-way leaves it with half a response unread).
    spent: bool,
    name: String,
    timeout: Duration,
    limits: Limits,
    /// The user calls are made for, when not this process's ([`Self::set_user`]).
    user: Option<http::HeaderValue>,
    request: Option<http::HeaderValue>,
}

impl MinionClient {
    /// Connects to `addr`, expecting a certificate for `name`.
    pub async fn connect(
        addr: SocketAddr,
        name: &str,
        tls: Arc<rustls::ClientConfig>,
        timeout: Duration,
    ) -> Result<Self, CallError> {
        let server_name = ServerName::try_from(name.to_string()).map_err(|e| CallError::Tls {
            name: name.into(),
            detail: e.to_string(),
        })?;
        let connect = async {
            let tcp = TcpStream::connect(addr).await.map_err(|e| CallError::Connect {
                addr,
                detail: e.to_string(),
            })?;
            let _ = tcp.set_nodelay(true);
            TlsConnector::from(tls)
                .connect(server_name, tcp)
                .await
                .map_err(|e| CallError::Tls {
                    name: name.into(),
                    detail: e.to_string(),
                })
        };
        let stream = tokio::time::timeout(timeout, connect)
            .await
            .map_err(|_| CallError::Timeout(timeout))??;
        Ok(Self {
            stream: Box::new(stream),
            spent: false,
            name: name.to_string(),
            timeout,
            limits: Limits {
                max_body: MAX_RESPONSE,
                max_depth: xmlrpc::DEFAULT_MAX_DEPTH,
                max_values: crate::xmlrpc::DEFAULT_MAX_VALUES,
            },
            user: None,
            request: None,
        })
    }

    /// Accepts responses of at most `bytes`; a larger one fails the call
    /// with [`CallError::TooLarge`] (and is not read further).
    pub fn with_max_response(mut self, bytes: usize) -> Self {
        self.limits.max_body = bytes;
        self
    }

    /// Whether the connection has ended (the minion closed it, or it cannot
    /// carry another request): a kept connection found closed is dropped,
    /// not used. Looks without waiting: anything readable on an idle
    /// connection (its end, an error, bytes nobody asked for) ends it.
    pub fn is_closed(&mut self) -> bool {
        if self.spent {
            return true;
        }
        let mut cx = Context::from_waker(Waker::noop());
        let mut byte = [0u8; 1];
        let mut buf = ReadBuf::new(&mut byte);
        if Pin::new(&mut *self.stream)
            .poll_read(&mut cx, &mut buf)
            .is_ready()
        {
            self.spent = true;
        }
        self.spent
    }

    /// Calls from now on wait at most `timeout` for their answer.
    pub fn set_timeout(&mut self, timeout: Duration) {
        self.timeout = timeout;
    }

    /// Calls from now on name `user` in [`USER_HEADER`] (a service calling
    /// for its own users, e.g. func-api's token names); `None`: this process's user.
    /// The same user again changes nothing (and allocates nothing: a kept
    /// connection's header is not re-made among a call's short-lived buffers).
    pub fn set_user(&mut self, user: Option<&str>) {
        if self.user.as_ref().map(http::HeaderValue::as_bytes) != user.map(str::as_bytes) {
            self.user = user.and_then(|u| http::HeaderValue::from_str(u).ok());
        }
    }

    /// Calls from now on belong to signed request `request` (its identity,
    /// [`REQUEST_HEADER`]); `None`: to none. The same again changes nothing.
    pub fn set_request(&mut self, request: Option<&str>) {
        let request = request.filter(|r| is_request_id(r));
        if self.request.as_ref().map(http::HeaderValue::as_bytes) != request.map(str::as_bytes) {
            self.request = request.and_then(|r| http::HeaderValue::from_str(r).ok());
        }
    }

    /// Calls `method` with `params`; a fault becomes [`CallError::Fault`].
    /// Every request names the user this process runs for ([`USER_HEADER`]).
    pub async fn call(&mut self, method: &str, params: Vec<Value>) -> Result<Value, CallError> {
        if self.spent {
            return Err(CallError::Http(
                "the minion closed the connection before it answered (stopped or restarted mid-call?)".into(),
            ));
        }
        let body = xmlrpc::encode_call(method, params, self.limits.max_depth)
            .map_err(|e| CallError::Encode(e.to_string()))?;
        let request = self.request_bytes(body.as_bytes());
        let max = self.limits.max_body;
        // Spent until the exchange completes: one given up half-way (its
        // deadline) leaves the connection unusable.
        self.spent = true;
        let answer = tokio::time::timeout(self.timeout, exchange(&mut *self.stream, &request, max))
            .await
            .map_err(|_| CallError::Timeout(self.timeout))?
            .map_err(exchange_error)?;
        self.spent = !answer.keep_alive;
        if answer.status != 200 {
            self.spent = true;
            let status = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::BAD_GATEWAY);
            return Err(CallError::Status(status));
        }
        match xmlrpc::decode_response(&answer.body, &self.limits)? {
            Ok(v) => Ok(v),
            Err(f) => Err(CallError::Fault {
                code: f.code(),
                message: f.string().to_string(),
            }),
        }
    }

    /// The HTTP request carrying XML-RPC `body`, head and body in one piece
    /// (one TLS record, one write). Every value in the head was checked for
    /// control characters when set (a [`ServerName`], [`http::HeaderValue`]s).
    fn request_bytes(&self, body: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(256 + body.len());
        out.extend_from_slice(b"POST /RPC2 HTTP/1.1\r\nhost: ");
        out.extend_from_slice(self.name.as_bytes());
        out.extend_from_slice(b"\r\ncontent-type: text/xml\r\nuser-agent: func-rs/");
        out.extend_from_slice(env!("CARGO_PKG_VERSION").as_bytes());
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(USER_HEADER.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(self.user.clone().unwrap_or_else(on_behalf_of).as_bytes());
        if let Some(id) = &self.request {
            out.extend_from_slice(b"\r\n");
            out.extend_from_slice(REQUEST_HEADER.as_bytes());
            out.extend_from_slice(b": ");
            out.extend_from_slice(id.as_bytes());
        }
        out.extend_from_slice(format!("\r\ncontent-length: {}\r\n\r\n", body.len()).as_bytes());
        out.extend_from_slice(body);
        out
    }
}

/// The request header naming the user a call is made for (the invoking
/// user under sudo). funcd writes it into its audit line when the caller
/// is the overlord, the only caller it believes.
pub const USER_HEADER: &str = "x-func-user";

/// A failed exchange, said as a user reads it: a connection the minion
/// ended before answering is a minion stopped or restarted mid-call.
fn exchange_error(e: ExchangeError) -> CallError {
    match e {
        ExchangeError::Ended {
            answered: false,
            detail,
        } => CallError::Http(format!(
            "the minion closed the connection before it answered (stopped or restarted mid-call?): {detail}"
        )),
        ExchangeError::Ended {
            answered: true,
            detail,
        } => CallError::Answered(format!("the minion's answer was cut short: {detail}")),
        ExchangeError::Malformed(detail) => CallError::Answered(format!("malformed HTTP response: {detail}")),
        ExchangeError::TooLarge(max) => CallError::TooLarge(max),
    }
}

/// The identity of the signed request a call belongs to (hex digest of its
/// signature, DESIGN §9), sent by an overlord beside the XML-RPC body
/// (clients that send none are served as before): a minion runs one
/// signed request at most once while it keeps its job.
pub const REQUEST_HEADER: &str = "x-func-request";

/// The error kind of a call refused because its signed request already ran.
pub const ALREADY_RAN: &str = "func.minion.AlreadyRan";

/// Whether `id` has a minion job id's shape (`<digits>[.<digits>]-minion`,
/// at most 32 characters before the suffix): the only job ids a minion
/// makes, and the only ones it takes.
pub fn is_minion_job_id(id: &str) -> bool {
    let Some(stamp) = id.strip_suffix("-minion") else {
        return false;
    };
    !stamp.is_empty()
        && stamp.len() <= 32
        && stamp.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        && stamp.bytes().filter(|b| *b == b'.').count() <= 1
}

/// Whether `id` may be a request identity: 16 to 128 hex digits.
pub fn is_request_id(id: &str) -> bool {
    (16..=128).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_hexdigit())
}

/// This process's user as a header value, spelled as the overlord records
/// the command line's user (`cli:USER`; "?" if it cannot be one).
fn on_behalf_of() -> http::HeaderValue {
    static USER: std::sync::OnceLock<http::HeaderValue> = std::sync::OnceLock::new();
    USER.get_or_init(|| {
        http::HeaderValue::from_str(&crate::principal::cli_user())
            .unwrap_or_else(|_| http::HeaderValue::from_static("?"))
    })
    .clone()
}
