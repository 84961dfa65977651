//! What a relay is asked to do, signed (DESIGN §9, §17): authority stays
//! with the overlord that accepted the call. The request — the function
//! and its encoded call, the hosts of this relay, the caller and the
//! caller's rights, now or as a job — is signed with an overlord key of
//! the CA by whoever hands it on (`func`, a job's driver, a func-api that
//! verified the request it got), and a relay runs it only if the
//! signature verifies against an overlord certificate of our CA (not
//! revoked) and the request is fresh. The exact signed text travels (the
//! `request` string), so nothing is re-serialised before checking.

use common::paths::Root;

use super::error::RelayError;
use crate::store::Seal;

/// How long a signed request may be used after it was made (a captured
/// request cannot be played again later; clocks may differ by this much).
pub const FRESH_FOR: f64 = 600.0;
/// Most hosts one request names.
pub const MAX_HOSTS: usize = 1_000_000;

/// Now (the call's results streamed back) or as a job of the relay.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    Now,
    Async,
}

/// One request to a relay.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RelayRequest {
    pub v: u32,
    /// The job (or call) it belongs to at the overlord that accepted it.
    pub id: String,
    /// The SPEC as the caller gave it (shown in the relay's job list).
    pub spec: String,
    /// `module.method`.
    pub function: String,
    /// The method's arguments, typed, as JSON (`values::to_json`).
    pub params: serde_json::Value,
    pub user: String,
    /// The caller's rights (a func-api token's rules); `None`: an administrator.
    pub rights: Option<Vec<String>>,
    /// The hosts this relay is to call (or hand on).
    pub hosts: Vec<String>,
    pub mode: Mode,
    /// Each host's time (seconds).
    pub timeout: f64,
    /// When it was signed (epoch seconds).
    pub issued: f64,
}

/// A signed request as sent: the signed text and its signature.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SealedRequest {
    /// The request's JSON text, exactly as signed.
    pub request: String,
    pub seal: SealDoc,
}

/// A signature and the certificate to check it with (base64 DER).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SealDoc {
    pub cert: String,
    pub sig: String,
}

fn signed_bytes(text: &str) -> Vec<u8> {
    let mut out = b"func-relay-request\n".to_vec();
    out.extend_from_slice(text.as_bytes());
    out
}

impl RelayRequest {
    /// The call's parameters as XML-RPC values.
    pub fn values(&self) -> Vec<common::Value> {
        match &self.params {
            serde_json::Value::Array(items) => items.iter().map(crate::values::from_json).collect(),
            _ => Vec::new(),
        }
    }

    /// Signs the request with the overlord key below `root`.
    pub fn seal(&self, signer: &crate::seal::Signer) -> Result<SealedRequest, RelayError> {
        let request = serde_json::to_string(self).map_err(|e| RelayError::Request(e.to_string()))?;
        let seal = signer
            .sign(&signed_bytes(&request))
            .ok_or_else(|| RelayError::Request("cannot sign with the overlord key".into()))?;
        Ok(SealedRequest {
            request,
            seal: SealDoc {
                cert: seal.cert,
                sig: seal.sig,
            },
        })
    }
}

impl SealedRequest {
    /// The request, if its signature verifies against an overlord
    /// certificate of the CA below `root` and it is fresh.
    pub fn open(&self, root: &Root) -> Result<RelayRequest, RelayError> {
        let seal = Seal {
            cert: self.seal.cert.clone(),
            sig: self.seal.sig.clone(),
        };
        crate::seal::verify_bytes(root, &seal, &signed_bytes(&self.request))
            .map_err(|e| RelayError::Untrusted(e.to_string()))?;
        let request: RelayRequest =
            serde_json::from_str(&self.request).map_err(|e| RelayError::Request(e.to_string()))?;
        let age = crate::store::now() - request.issued;
        if !(-FRESH_FOR..=FRESH_FOR).contains(&age) {
            return Err(RelayError::Untrusted(format!(
                "the request was signed {age:.0} s ago; a relay takes requests at most {FRESH_FOR:.0} s old"
            )));
        }
        if request.v != 1 || request.hosts.is_empty() || request.hosts.len() > MAX_HOSTS {
            return Err(RelayError::Request(format!(
                "a request names 1 to {MAX_HOSTS} hosts (version 1)"
            )));
        }
        if !request.timeout.is_finite() || request.timeout <= 0.0 || request.timeout > crate::conf::MAX_SECS {
            return Err(RelayError::Request("the timeout is out of range".into()));
        }
        if let Some(bad) = request
            .hosts
            .iter()
            .find(|h| !common::identity::is_valid_host_name(h))
        {
            return Err(RelayError::Request(format!(
                "{:?} is not a host name",
                common::paths::shorten(bad)
            )));
        }
        Ok(request)
    }
}
