//! Server side of XML-RPC over HTTP/1.1: `POST /` and `POST /RPC2` only
//! (other paths 404, other verbs 405), a body size limit enforced while
//! reading (413 and a closed connection, nothing buffered beyond the limit),
//! a body deadline, and replies that are HTTP 200 even for faults, as Python
//! clients expect.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{header, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::xmlrpc::{self, Call, Limits};

/// What a server answers.
pub type Reply = Response<Full<Bytes>>;

/// Checks the route and verb of a request; `Err` is the reply to send.
#[allow(clippy::result_large_err)] // the reply to send is the point
fn route<B>(req: &Request<B>) -> Result<(), Reply> {
    if !matches!(req.uri().path(), "/" | "/RPC2") {
        return Err(plain(
            StatusCode::NOT_FOUND,
            "not found: POST XML-RPC to / or /RPC2\n",
        ));
    }
    if req.method() != Method::POST {
        let mut resp = plain(StatusCode::METHOD_NOT_ALLOWED, "only POST is supported\n");
        resp.headers_mut()
            .insert(header::ALLOW, header::HeaderValue::from_static("POST"));
        return Err(resp);
    }
    Ok(())
}

/// The Content-Length a request declares, if any.
fn declared_length<B>(req: &Request<B>) -> Option<u64> {
    req.headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
}

/// Reads one XML-RPC call from `req`. `Err` holds the reply to send instead:
/// an HTTP error, or a fault for a body that is not a readable call.
pub async fn read_call<B>(req: Request<B>, limits: &Limits, body_timeout: Duration) -> Result<Call, Reply>
where
    B: hyper::body::Body,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    route(&req)?;
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|len| len > limits.max_body as u64) {
        return Err(too_large(limits.max_body));
    }
    let body = Limited::new(req.into_body(), limits.max_body);
    let bytes = match tokio::time::timeout(body_timeout, body.collect()).await {
        Err(_) => {
            return Err(closing(plain(
                StatusCode::REQUEST_TIMEOUT,
                "request body not received in time\n",
            )))
        }
        Ok(Err(e)) if e.downcast_ref::<http_body_util::LengthLimitError>().is_some() => {
            return Err(too_large(limits.max_body))
        }
        Ok(Err(_)) => {
            return Err(closing(plain(
                StatusCode::BAD_REQUEST,
                "request body could not be read\n",
            )))
        }
        Ok(Ok(collected)) => collected.to_bytes(),
    };
    xmlrpc::decode_call(&bytes, limits).map_err(|e| {
        let fault = e.fault();
        xml(xmlrpc::encode_fault(fault.code(), fault.string()))
    })
}

/// How a server admits a request before it has read all of it.
pub struct Admission<'a> {
    /// Request bytes in flight that this caller's requests share: the body
    /// takes its bytes from here as it arrives, and gives them back when
    /// the returned permit is dropped (after the reply).
    pub budget: &'a Arc<Semaphore>,
    /// Decides from the method name alone, before the rest of the body is
    /// read: `Some(fault message)` refuses the call (the connection is then
    /// closed, the rest of the body never read).
    pub refuse: &'a (dyn Fn(&str) -> Option<(i32, String)> + Sync),
}

/// How far into a body `</methodName>` must come.
const NAME_WITHIN: usize = 64 * 1024;

/// As [`read_call`], but memory is spent only under `admission`: the body's
/// bytes come from its budget (waiting at most the body deadline), and the
/// method name is judged as soon as `</methodName>` has arrived.
pub async fn read_call_admitted<B>(
    req: Request<B>,
    limits: &Limits,
    body_timeout: Duration,
    admission: &Admission<'_>,
) -> Result<(Call, OwnedSemaphorePermit), Reply>
where
    B: hyper::body::Body + Unpin,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    route(&req)?;
    if declared_length(&req).is_some_and(|len| len > limits.max_body as u64) {
        return Err(too_large(limits.max_body));
    }
    let deadline = tokio::time::Instant::now() + body_timeout;
    let mut body = req.into_body();
    let mut buf: Vec<u8> = Vec::new();
    let mut held: Option<OwnedSemaphorePermit> = None;
    let mut judged = false;
    loop {
        let frame = match tokio::time::timeout_at(deadline, body.frame()).await {
            Err(_) => {
                return Err(closing(plain(
                    StatusCode::REQUEST_TIMEOUT,
                    "request body not received in time\n",
                )))
            }
            Ok(None) => break,
            Ok(Some(Err(_))) => {
                return Err(closing(plain(
                    StatusCode::BAD_REQUEST,
                    "request body could not be read\n",
                )))
            }
            Ok(Some(Ok(frame))) => frame,
        };
        let Ok(mut data) = frame.into_data() else { continue };
        let len = bytes::Buf::remaining(&data);
        let data = bytes::Buf::copy_to_bytes(&mut data, len);
        if buf.len() + data.len() > limits.max_body {
            return Err(too_large(limits.max_body));
        }
        let want = u32::try_from(data.len()).unwrap_or(u32::MAX);
        let permit =
            match tokio::time::timeout_at(deadline, Arc::clone(admission.budget).acquire_many_owned(want))
                .await
            {
                Ok(Ok(p)) => p,
                _ => {
                    return Err(closing(xml(xmlrpc::encode_fault(
                        xmlrpc::FAULT_FUNC,
                        "<class 'func.minion.Busy'>:too many request bytes in flight; try again later",
                    ))))
                }
            };
        match held.as_mut() {
            Some(h) => h.merge(permit),
            None => held = Some(permit),
        }
        buf.extend_from_slice(&data);
        if !judged {
            match method_name(&buf) {
                Some(name) => {
                    judged = true;
                    let refused = name.and_then(|n| (admission.refuse)(&n));
                    if let Some((code, message)) = refused {
                        return Err(closing(xml(xmlrpc::encode_fault(code, &message))));
                    }
                }
                None if buf.len() > NAME_WITHIN => {
                    return Err(closing(xml(xmlrpc::encode_fault(
                        xmlrpc::FAULT_PARSE,
                        "no </methodName> in the first 64 KiB of the request",
                    ))))
                }
                None => {}
            }
        }
    }
    let permit = match held {
        Some(p) => p,
        None => Arc::clone(admission.budget)
            .try_acquire_many_owned(0)
            .map_err(|_| closing(plain(StatusCode::SERVICE_UNAVAILABLE, "shutting down\n")))?,
    };
    let call = xmlrpc::decode_call(&buf, limits).map_err(|e| {
        let fault = e.fault();
        xml(xmlrpc::encode_fault(fault.code(), fault.string()))
    })?;
    Ok((call, permit))
}

/// The text between `<methodName>` and `</methodName>` once both have
/// arrived: `Some(Some(name))` (trimmed), or `Some(None)` when it cannot be
/// judged before the whole request is decoded (not UTF-8, entity
/// references); those are judged after decoding, as every call is.
fn method_name(buf: &[u8]) -> Option<Option<String>> {
    const OPEN: &[u8] = b"<methodName>";
    const CLOSE: &[u8] = b"</methodName>";
    let find = |hay: &[u8], needle: &[u8]| hay.windows(needle.len()).position(|w| w == needle);
    let start = find(buf, OPEN)? + OPEN.len();
    let end = start + find(&buf[start..], CLOSE)?;
    Some(
        std::str::from_utf8(&buf[start..end])
            .ok()
            .filter(|n| !n.contains('&'))
            .map(|n| n.trim().to_string()),
    )
}

/// An HTTP 200 `text/xml` reply.
pub fn xml(body: String) -> Reply {
    let mut resp = Response::new(Full::new(Bytes::from(body)));
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, header::HeaderValue::from_static("text/xml"));
    resp
}

fn plain(status: StatusCode, text: &'static str) -> Reply {
    let mut resp = Response::new(Full::new(Bytes::from_static(text.as_bytes())));
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/plain"),
    );
    resp
}

/// Marks a reply as the last on its connection.
fn closing(mut resp: Reply) -> Reply {
    resp.headers_mut()
        .insert(header::CONNECTION, header::HeaderValue::from_static("close"));
    resp
}

fn too_large(limit: usize) -> Reply {
    let mut resp = closing(plain(
        StatusCode::PAYLOAD_TOO_LARGE,
        "request body over the limit\n",
    ));
    if let Ok(v) = header::HeaderValue::from_str(&limit.to_string()) {
        resp.headers_mut().insert("x-max-request-size", v);
    }
    resp
}
