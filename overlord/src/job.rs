//! What a worker process is asked to do, and what it reports back: one JSON
//! line in (the job), one JSON line out per host as soon as that host is
//! done. Results travel as encoded XML-RPC responses, so every value type
//! survives the trip exactly.

use std::path::PathBuf;

use common::tls::Credentials;
use common::Value;
use serde::{Deserialize, Serialize};

use crate::targets::Target;

/// The work for one bucket of minions.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Job {
    pub targets: Vec<Target>,
    pub action: Action,
    /// Per-host limit for connect + call (seconds).
    pub timeout_secs: f64,
    /// Hosts in flight at once inside one worker.
    pub concurrency: usize,
    pub key: PathBuf,
    pub cert: PathBuf,
    pub ca: PathBuf,
    /// The CRL minions' certificates are checked against.
    #[serde(default)]
    pub crl: Option<PathBuf>,
    /// Largest response accepted from one minion.
    #[serde(default = "default_max_response")]
    pub max_response: usize,
}

fn default_max_response() -> usize {
    common::rpc::client::MAX_RESPONSE
}

impl Job {
    pub fn credentials(&self) -> Credentials {
        Credentials {
            key: self.key.clone(),
            cert: self.cert.clone(),
            ca: self.ca.clone(),
            crl: self.crl.clone(),
        }
    }
}

/// What to do on each host.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Action {
    /// One method call; `call_xml` is the encoded `<methodCall>`, part of
    /// signed request `request` (its identity) if any.
    Call {
        call_xml: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        request: Option<String>,
    },
    /// Send a local file: `copyfile.open`, `copyfile.append` in chunks, then
    /// `copyfile.checksum` compared with `sha1`.
    CopyFile {
        local: PathBuf,
        remote: String,
        mode: u32,
        uid: i64,
        gid: i64,
        sha1: String,
    },
}

impl Action {
    /// One call of `method(params)`, encoded once for every host.
    pub fn call(method: &str, params: Vec<Value>) -> Result<Self, common::xmlrpc::EncodeError> {
        let call_xml = common::xmlrpc::encode_call(method, params, common::xmlrpc::DEFAULT_MAX_DEPTH)?;
        Ok(Action::Call {
            call_xml,
            request: None,
        })
    }
}

/// One host's outcome.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    pub host: String,
    /// Encoded `<methodResponse>` holding the host's result (a value or a
    /// `REMOTE_ERROR` list).
    pub response_xml: String,
}

impl Report {
    pub fn new(host: &str, value: Value) -> Self {
        let response_xml = common::xmlrpc::encode_response(value, common::xmlrpc::DEFAULT_MAX_DEPTH)
            .unwrap_or_else(|e| {
                let err = common::xmlrpc::remote_error("EncodeError", &e.to_string(), "");
                common::xmlrpc::encode_response(err, common::xmlrpc::DEFAULT_MAX_DEPTH).unwrap_or_default()
            });
        Self {
            host: host.to_string(),
            response_xml,
        }
    }

    /// The host's result value.
    pub fn value(&self) -> Value {
        let limits = common::xmlrpc::Limits {
            max_body: usize::MAX,
            max_depth: common::xmlrpc::DEFAULT_MAX_DEPTH,
            max_values: usize::MAX,
        };
        match common::xmlrpc::decode_response(self.response_xml.as_bytes(), &limits) {
            Ok(Ok(v)) => v,
            _ => common::xmlrpc::remote_error(
                "func.overlord.WorkerError",
                "unreadable result from a worker",
                "",
            ),
        }
    }
}

/// Decodes a stored `<methodResponse>`.
pub fn decode_result(xml: &str) -> Value {
    Report {
        host: String::new(),
        response_xml: xml.to_string(),
    }
    .value()
}

/// Encodes a host's result for the store.
pub fn encode_result(value: Value) -> String {
    Report::new("", value).response_xml
}
