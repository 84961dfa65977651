//! Server side of XML-RPC over HTTP/1.1: `POST /` and `POST /RPC2` only
//! (other paths 404, other verbs 405), a body size limit enforced while
//! reading (413 and a closed connection, nothing buffered beyond the limit),
//! a body deadline, and replies that are HTTP 200 even for faults, as Python
//! clients expect.

use std::time::Duration;

use bytes::Bytes;
use http::{header, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, Limited};

use crate::xmlrpc::{self, Call, Limits};

/// What a server answers.
pub type Reply = Response<Full<Bytes>>;

/// Reads one XML-RPC call from `req`. `Err` holds the reply to send instead:
/// an HTTP error, or a fault for a body that is not a readable call.
pub async fn read_call<B>(req: Request<B>, limits: &Limits, body_timeout: Duration) -> Result<Call, Reply>
where
    B: hyper::body::Body,
    B::Error: std::error::Error + Send + Sync + 'static,
{
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
