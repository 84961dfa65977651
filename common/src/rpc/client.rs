//! A keep-alive XML-RPC client for one server (a minion, or the certmaster): TCP connect and TLS handshake
//! under a deadline, the overlord's client certificate, and a check that the
//! minion's certificate names the minion we meant to call (TLS server name).
//! A fault from the minion is a value ([`CallError::Fault`]) distinct from
//! transport failures, so callers can report each host on its own.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use crate::xmlrpc::{self, DecodeError, Limits};
use crate::Value;
use bytes::Bytes;
use http::{header, Request, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use rustls::pki_types::ServerName;
use tokio::net::TcpStream;
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
    sender: http1::SendRequest<Full<Bytes>>,
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
            let stream = TlsConnector::from(tls)
                .connect(server_name, tcp)
                .await
                .map_err(|e| CallError::Tls {
                    name: name.into(),
                    detail: e.to_string(),
                })?;
            let (sender, conn) = http1::handshake(TokioIo::new(stream))
                .await
                .map_err(|e| CallError::Http(e.to_string()))?;
            tokio::spawn(async move {
                let _ = conn.await;
            });
            Ok::<_, CallError>(sender)
        };
        let sender = tokio::time::timeout(timeout, connect)
            .await
            .map_err(|_| CallError::Timeout(timeout))??;
        Ok(Self {
            sender,
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

    /// Whether the connection has ended (the minion closed it): a kept
    /// connection found closed is dropped, not used.
    pub fn is_closed(&self) -> bool {
        self.sender.is_closed()
    }

    /// Calls from now on wait at most `timeout` for their answer.
    pub fn set_timeout(&mut self, timeout: Duration) {
        self.timeout = timeout;
    }

    /// Calls from now on name `user` in [`USER_HEADER`] (a service calling
    /// for its own users, e.g. func-api's token names); `None`: this process's user.
    pub fn set_user(&mut self, user: Option<&str>) {
        self.user = user.and_then(|u| http::HeaderValue::from_str(u).ok());
    }

    /// Calls `method` with `params`; a fault becomes [`CallError::Fault`].
    /// Calls from now on belong to signed request `request` (its identity,
    /// [`REQUEST_HEADER`]); `None`: to none.
    pub fn set_request(&mut self, request: Option<&str>) {
        self.request = request
            .filter(|r| is_request_id(r))
            .and_then(|r| http::HeaderValue::from_str(r).ok());
    }

    /// Every request names the user this process runs for ([`USER_HEADER`]).
    pub async fn call(&mut self, method: &str, params: Vec<Value>) -> Result<Value, CallError> {
        let body = xmlrpc::encode_call(method, params, self.limits.max_depth)
            .map_err(|e| CallError::Encode(e.to_string()))?;
        let mut request = Request::post("/RPC2")
            .header(header::HOST, self.name.as_str())
            .header(header::CONTENT_TYPE, "text/xml")
            .header(header::USER_AGENT, concat!("func-rs/", env!("CARGO_PKG_VERSION")))
            .header(USER_HEADER, self.user.clone().unwrap_or_else(on_behalf_of));
        if let Some(id) = &self.request {
            request = request.header(REQUEST_HEADER, id.clone());
        }
        let request = request
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| CallError::Http(e.to_string()))?;
        let exchange = async {
            self.sender
                .ready()
                .await
                .map_err(|e| CallError::Http(e.to_string()))?;
            let resp = self.sender.send_request(request).await.map_err(http_error)?;
            if resp.status() != StatusCode::OK {
                return Err(CallError::Status(resp.status()));
            }
            let max = self.limits.max_body;
            let bytes = Limited::new(resp.into_body(), max)
                .collect()
                .await
                .map_err(|e| match e.downcast_ref::<http_body_util::LengthLimitError>() {
                    Some(_) => CallError::TooLarge(max),
                    None => CallError::Http(e.to_string()),
                })?
                .to_bytes();
            Ok(bytes)
        };
        let bytes = tokio::time::timeout(self.timeout, exchange)
            .await
            .map_err(|_| CallError::Timeout(self.timeout))??;
        match xmlrpc::decode_response(&bytes, &self.limits)? {
            Ok(v) => Ok(v),
            Err(f) => Err(CallError::Fault {
                code: f.code(),
                message: f.string().to_string(),
            }),
        }
    }
}

/// The request header naming the user a call is made for (the invoking
/// user under sudo). funcd writes it into its audit line when the caller
/// is the overlord, the only caller it believes.
pub const USER_HEADER: &str = "x-func-user";

/// A failed exchange, said as a user reads it: a connection the minion
/// closed before answering is a minion stopped or restarted mid-call
/// (hyper says only "connection error").
fn http_error(e: hyper::Error) -> CallError {
    if e.is_closed() || e.is_incomplete_message() || e.is_canceled() {
        return CallError::Http(format!(
            "the minion closed the connection before it answered (stopped or restarted mid-call?): {e}"
        ));
    }
    let mut text = e.to_string();
    if let Some(cause) = std::error::Error::source(&e) {
        text = format!("{text}: {cause}");
    }
    CallError::Http(text)
}

/// The identity of the signed request a call belongs to (hex digest of its
/// signature, DESIGN §9), sent by an overlord beside the XML-RPC body
/// (clients that send none are served as before): a minion runs one
/// signed request at most once while it keeps its job.
pub const REQUEST_HEADER: &str = "x-func-request";

/// The error kind of a call refused because its signed request already ran.
pub const ALREADY_RAN: &str = "func.minion.AlreadyRan";

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
