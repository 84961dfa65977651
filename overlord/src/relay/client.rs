//! Talking to a relay: its func-api over HTTPS, presenting the overlord's
//! certificate (a relay takes requests only from an overlord certificate of
//! its CA) and checking that the relay's certificate, of the same CA, names
//! the host of its `[relays]` address and carries the service mark (a
//! minion's certificate for that host is refused). One connection per exchange
//! (a batch's driver keeps one between its hand-offs: [`RelayClient::keeping`]);
//! every answer is read within a bound.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::paths::Root;
use common::Value;
use http::{header, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use rustls::pki_types::ServerName;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use super::error::RelayError;
use super::map::{Map, RelayAddr};
use super::request::SealedRequest;

/// Largest answer read from a relay (a job's results for its hosts).
pub const MAX_ANSWER: usize = 1 << 30;
/// Longest line of a streamed answer (one host's result).
const MAX_LINE: usize = 80 << 20;

/// How a handed-off request went wrong (`RelayClient::hand`).
#[derive(Debug)]
pub enum Handoff {
    /// Not taken: not connected, or refused before anything ran.
    NotTaken(RelayError),
    /// Taken, then broken off: the hosts not answered may have been called.
    Broken(RelayError),
}

/// A relay to talk to.
#[derive(Clone)]
pub struct RelayClient {
    pub relay: RelayAddr,
    tls: Arc<rustls::ClientConfig>,
    /// Time to connect and to get an answer's head.
    pub timeout: Duration,
    /// The connection kept between hand-offs, and since when it is idle
    /// (`None`: none is kept, see [`Self::keeping`]).
    kept: Option<Arc<Mutex<Option<Kept>>>>,
}

/// A connection kept between hand-offs, and since when it is idle.
type Kept = (http1::SendRequest<Full<Bytes>>, Instant);

/// A kept connection idle longer than this is not used again (func-api
/// closes idle connections after `idle_timeout`, 15 s by default).
const KEEP_IDLE: Duration = Duration::from_secs(5);

/// One host's end as a relay streams it: its result as JSON when JSON
/// holds it exactly (most results: cheaper to read at 100,000 hosts), else
/// XML-RPC encoded (base64, dateTime, wide integers keep their types).
#[derive(serde::Serialize, serde::Deserialize)]
pub struct HostLine {
    pub host: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_xml: Option<String>,
}

impl HostLine {
    /// `value` of `host`, in the cheapest form that keeps it exactly.
    pub fn new(host: String, value: Value) -> Self {
        let json = crate::values::to_json(&value);
        match crate::values::from_json(&json) == value {
            true => HostLine {
                host,
                result: Some(json),
                result_xml: None,
            },
            false => HostLine {
                host,
                result: None,
                result_xml: Some(crate::job::encode_result(value)),
            },
        }
    }

    /// The host's result.
    pub fn value(&self) -> Value {
        match (&self.result, &self.result_xml) {
            (_, Some(xml)) => crate::job::decode_result(xml),
            (Some(json), None) => crate::values::from_json(json),
            (None, None) => Value::Nil,
        }
    }
}

/// A relay job's finished hosts, as `POST /api/v1/relay/jobs/{id}/results` answers.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
pub struct Results {
    /// Host → its result, XML-RPC encoded.
    pub results: BTreeMap<String, String>,
    /// Every host of the relay job is finished.
    pub ended: bool,
}

impl RelayClient {
    /// A client for `relay` with the overlord credentials below `root`.
    pub fn new(root: &Root, relay: RelayAddr) -> Result<Self, RelayError> {
        let creds = crate::settings::credentials(root);
        let tls =
            common::tls::service_client_config(&creds).map_err(|e| RelayError::Config(e.to_string()))?;
        Ok(Self {
            relay,
            tls: Arc::new(tls),
            timeout: Duration::from_secs(30),
            kept: None,
        })
    }

    /// Keeps the connection of a hand-off that ended well for the next one
    /// ([`Self::hand`]), for a caller whose runtime lives between them (a
    /// batch's driver, wave after wave): a hand-off then costs no TLS
    /// handshake on either side.
    pub fn keeping(mut self) -> Self {
        self.kept = Some(Arc::default());
        self
    }

    /// The kept connection, if one is, still open and not idle too long.
    fn take_kept(&self) -> Option<http1::SendRequest<Full<Bytes>>> {
        let slot = self.kept.as_ref()?;
        let (sender, since) = slot.lock().unwrap_or_else(|p| p.into_inner()).take()?;
        (since.elapsed() < KEEP_IDLE && !sender.is_closed()).then_some(sender)
    }

    fn keep(&self, sender: http1::SendRequest<Full<Bytes>>) {
        if let Some(slot) = &self.kept {
            *slot.lock().unwrap_or_else(|p| p.into_inner()) = Some((sender, Instant::now()));
        }
    }

    fn unreachable(&self, detail: impl std::fmt::Display) -> RelayError {
        RelayError::Unreachable {
            relay: self.relay.name.clone(),
            detail: detail.to_string(),
        }
    }

    /// A connection to the relay, TLS and HTTP/1.1 set up (nothing sent yet).
    async fn open(&self) -> Result<http1::SendRequest<Full<Bytes>>, RelayError> {
        let name = ServerName::try_from(self.relay.host().to_string()).map_err(|e| self.unreachable(e))?;
        let opening = async {
            let tcp = TcpStream::connect(&self.relay.addr)
                .await
                .map_err(|e| self.unreachable(e))?;
            let _ = tcp.set_nodelay(true);
            let tls = TlsConnector::from(self.tls.clone())
                .connect(name, tcp)
                .await
                .map_err(|e| self.unreachable(format!("TLS: {e}")))?;
            let (sender, conn) = http1::handshake(TokioIo::new(tls))
                .await
                .map_err(|e| self.unreachable(e))?;
            tokio::spawn(async move {
                let _ = conn.await;
            });
            Ok(sender)
        };
        tokio::time::timeout(self.timeout, opening)
            .await
            .map_err(|_| self.unreachable(format!("no connection within {:?}", self.timeout)))?
    }

    fn request(
        &self,
        method: http::Method,
        path: &str,
        body: Option<Vec<u8>>,
    ) -> Result<Request<Full<Bytes>>, RelayError> {
        let mut req = Request::builder()
            .method(method)
            .uri(path)
            .header(header::HOST, self.relay.addr.as_str())
            .header(header::USER_AGENT, concat!("func-rs/", env!("CARGO_PKG_VERSION")));
        if body.is_some() {
            req = req.header(header::CONTENT_TYPE, "application/json");
        }
        req.body(Full::new(Bytes::from(body.unwrap_or_default())))
            .map_err(|e| self.unreachable(e))
    }

    async fn send(
        &self,
        method: http::Method,
        path: &str,
        body: Option<Vec<u8>>,
    ) -> Result<http::Response<hyper::body::Incoming>, RelayError> {
        let exchange = async {
            let mut sender = self.open().await?;
            let req = self.request(method, path, body)?;
            sender.send_request(req).await.map_err(|e| self.unreachable(e))
        };
        tokio::time::timeout(self.timeout, exchange)
            .await
            .map_err(|_| self.unreachable(format!("no answer within {:?}", self.timeout)))?
    }

    /// The body of `resp`, read whole within bounds; an error status is
    /// the relay's refusal.
    async fn body(&self, resp: http::Response<hyper::body::Incoming>) -> Result<Bytes, RelayError> {
        let status = resp.status();
        let bytes = http_body_util::Limited::new(resp.into_body(), MAX_ANSWER)
            .collect()
            .await
            .map_err(|e| self.unreachable(e))?
            .to_bytes();
        if !status.is_success() {
            return Err(refusal(&self.relay.name, status, &bytes));
        }
        Ok(bytes)
    }

    async fn json<T: serde::de::DeserializeOwned>(
        &self,
        method: http::Method,
        path: &str,
        body: Option<Vec<u8>>,
    ) -> Result<T, RelayError> {
        let resp = self.send(method, path, body).await?;
        let bytes = self.body(resp).await?;
        serde_json::from_slice(&bytes).map_err(|e| self.unreachable(format!("unreadable answer: {e}")))
    }

    /// Runs `sealed` (mode now) and hands each host's result to `on_host`
    /// the moment the relay streams it. Only a line for a host the request
    /// names, and only its first, is handed on: any other line is the
    /// relay's lie and ends the exchange (DESIGN §17). An error after some
    /// hosts leaves the others to the caller (they were not answered).
    pub async fn call_now(
        &self,
        sealed: &SealedRequest,
        hosts: &[String],
        on_host: impl FnMut(String, Value),
    ) -> Result<(), RelayError> {
        let body = serde_json::to_vec(sealed).map_err(|e| RelayError::Request(e.to_string()))?;
        let resp = self.send(http::Method::POST, "/api/v1/relay", Some(body)).await?;
        if resp.status() != StatusCode::OK {
            return Err(self.refused(resp).await);
        }
        self.stream(resp, hosts, on_host).await
    }

    /// [`Self::call_now`] for a handoff (`relay::local`): whether the relay
    /// took the request tells the caller if it may call the hosts itself.
    pub async fn hand(
        &self,
        sealed: &SealedRequest,
        hosts: &[String],
        on_host: impl FnMut(String, Value),
    ) -> Result<(), Handoff> {
        let body =
            serde_json::to_vec(sealed).map_err(|e| Handoff::NotTaken(RelayError::Request(e.to_string())))?;
        let mut req = self
            .request(http::Method::POST, "/api/v1/relay", Some(body))
            .map_err(Handoff::NotTaken)?;
        let mut kept = self.take_kept();
        let (sender, resp) = loop {
            let reused = kept.is_some();
            // Not connected: nothing was sent.
            let mut sender = match kept.take() {
                Some(sender) => sender,
                None => self.open().await.map_err(Handoff::NotTaken)?,
            };
            let sent = tokio::time::timeout(self.timeout, sender.try_send_request(req)).await;
            match sent {
                Ok(Ok(resp)) => break (sender, resp),
                // Never written to the connection: nothing was sent. A kept
                // one func-api closed meanwhile: once more on a new one.
                Ok(Err(mut e)) if e.message().is_some() => match (reused, e.take_message()) {
                    (true, Some(again)) => req = again,
                    _ => return Err(Handoff::NotTaken(self.unreachable(e.into_error()))),
                },
                // Sent, maybe taken: never sent again.
                Ok(Err(e)) => return Err(Handoff::Broken(self.unreachable(e.into_error()))),
                Err(_) => return Err(Handoff::Broken(self.unreachable("no answer in time"))),
            }
        };
        if resp.status() != StatusCode::OK {
            // Refused before anything ran.
            return Err(Handoff::NotTaken(self.refused(resp).await));
        }
        self.stream(resp, hosts, on_host).await.map_err(Handoff::Broken)?;
        // Every line read to the done line: the connection may carry the next.
        self.keep(sender);
        Ok(())
    }

    /// Why the relay answered `resp`, an error status, instead of running.
    async fn refused(&self, resp: http::Response<hyper::body::Incoming>) -> RelayError {
        self.body(resp)
            .await
            .err()
            .unwrap_or_else(|| self.unreachable("unexpected answer"))
    }

    /// Reads the NDJSON host lines of `resp` (see [`Self::call_now`]).
    async fn stream(
        &self,
        resp: http::Response<hyper::body::Incoming>,
        hosts: &[String],
        mut on_host: impl FnMut(String, Value),
    ) -> Result<(), RelayError> {
        let mut awaited: std::collections::HashSet<&str> = hosts.iter().map(String::as_str).collect();
        let mut body = resp.into_body();
        let mut buf: Vec<u8> = Vec::new();
        let mut done = false;
        // Each host answers within its timeout: a relay silent for longer
        // than that (and a margin) is stuck, and its hosts unreachable.
        let quiet = self.timeout + Duration::from_secs(10);
        loop {
            let frame = match tokio::time::timeout(quiet, body.frame()).await {
                Ok(Some(frame)) => frame,
                Ok(None) => break,
                Err(_) => return Err(self.unreachable(format!("silent for {quiet:?} mid-answer"))),
            };
            let frame = frame.map_err(|e| self.unreachable(e))?;
            let Ok(data) = frame.into_data() else { continue };
            buf.extend_from_slice(&data);
            while let Some(end) = buf.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = buf.drain(..=end).collect();
                let line = &line[..line.len() - 1];
                if line.is_empty() {
                    continue;
                }
                if line == br#"{"done":true}"# {
                    done = true;
                    continue;
                }
                let host: HostLine = serde_json::from_slice(line)
                    .map_err(|e| self.unreachable(format!("unreadable line: {e}")))?;
                if !awaited.remove(host.host.as_str()) {
                    return Err(RelayError::Lied {
                        relay: self.relay.name.clone(),
                        detail: format!(
                            "a result for {}, a host it was not sent or had answered already",
                            common::paths::shorten(&host.host)
                        ),
                    });
                }
                let value = host.value();
                on_host(host.host, value);
            }
            if buf.len() > MAX_LINE {
                return Err(self.unreachable("a line longer than the relay may send"));
            }
        }
        match (done, awaited.len()) {
            (true, 0) => Ok(()),
            (true, n) => Err(RelayError::Lied {
                relay: self.relay.name.clone(),
                detail: format!("it said done with {n} host(s) it was sent unanswered"),
            }),
            (false, _) => Err(self.unreachable("the relay's answer ended before every host")),
        }
    }

    /// Starts `sealed` (mode async) as a job of the relay; its id.
    pub async fn start(&self, sealed: &SealedRequest) -> Result<String, RelayError> {
        #[derive(serde::Deserialize)]
        struct Started {
            job_id: String,
        }
        let body = serde_json::to_vec(sealed).map_err(|e| RelayError::Request(e.to_string()))?;
        let started: Started = self.json(http::Method::POST, "/api/v1/relay", Some(body)).await?;
        Ok(started.job_id)
    }

    /// The results of relay job `id` for those of `hosts` that are
    /// finished, waiting up to `wait` seconds for one to finish.
    pub async fn results(&self, id: &str, hosts: &[String], wait: f64) -> Result<Results, RelayError> {
        let body = serde_json::to_vec(&serde_json::json!({"hosts": hosts, "wait": wait}))
            .map_err(|e| RelayError::Request(e.to_string()))?;
        let path = format!("/api/v1/relay/jobs/{}/results", crate::values::url_segment(id));
        let mut client = self.clone();
        client.timeout = self.timeout + Duration::from_secs_f64(wait.clamp(0.0, 60.0));
        client.json(http::Method::POST, &path, Some(body)).await
    }

    /// Signals relay job `id`'s hosts (the relay's `jobs kill`).
    /// Signals the relay's job `id` for `user` (whom the minions are told
    /// the kill is for: the caller's principal, `crate::principal`).
    pub async fn kill(&self, id: &str, signal: &str, user: &str) -> Result<(), RelayError> {
        let path = format!("/api/v1/jobs/{}/kill", crate::values::url_segment(id));
        let body = serde_json::to_vec(&serde_json::json!({"signal": signal, "user": user}))
            .map_err(|e| RelayError::Request(e.to_string()))?;
        let _: serde_json::Value = self.json(http::Method::POST, &path, Some(body)).await?;
        Ok(())
    }

    /// The relay's own map (its minions, and its relays' maps), if it is
    /// the relay of that name (its certificate's: requests name it so).
    pub async fn map(&self, only_alive: bool) -> Result<Map, RelayError> {
        #[derive(serde::Deserialize)]
        struct Answer {
            map: Map,
            #[serde(default)]
            name: Option<String>,
        }
        let path = format!("/api/v1/relay/map?onlyalive={only_alive}");
        let mut client = self.clone();
        client.timeout = Duration::from_secs(300);
        let answer: Answer = client.json(http::Method::GET, &path, None).await?;
        match answer.name {
            Some(name) if name.eq_ignore_ascii_case(&self.relay.name) => Ok(answer.map),
            other => Err(RelayError::Config(format!(
                "relay {} is {}: name it in [relays] by its certificate's name (certmaster-ca --relay NAME)",
                self.relay.name,
                other.map_or(
                    "no relay (its overlord certificate has no relay mark)".into(),
                    |n| format!("relay {n}")
                )
            ))),
        }
    }
}

/// A relay's refusal: its `{"error"}`, shortened.
fn refusal(relay: &str, status: StatusCode, body: &[u8]) -> RelayError {
    let message = serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v["error"].as_str().map(str::to_string))
        .unwrap_or_else(|| String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned());
    RelayError::Refused {
        relay: relay.to_string(),
        status: status.as_u16(),
        message: common::paths::shorten(&message),
    }
}
