//! What a relay is asked to do, signed (DESIGN §9, §17): authority stays
//! with the top overlord that accepted the call. The request — the
//! function and its encoded call, the hosts of the relay's part of the
//! map, which relay calls which of them (its audience), the caller and
//! the caller's rights, now or as a job, a nonce — is signed with a top
//! overlord's key (`func`, a job's driver, a top func-api) and forwarded
//! unchanged by relays to their relays. A relay runs it only if the
//! signature verifies against an overlord certificate of our CA that is no
//! relay's (not revoked), the request is fresh, names this relay in its
//! audience, and its nonce was not seen here before. The exact signed text
//! travels (the `request` string), so nothing is re-serialised before
//! checking.

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

/// The audience name of a request a warm func hands to its root's own
/// func-api (`relay::local`).
pub const AUDIENCE: &str = "@local";

/// Whether a request's audience (`routes`) is the root's own func-api alone.
pub fn is_local(routes: &std::collections::BTreeMap<String, Vec<String>>) -> bool {
    routes.len() == 1 && routes.contains_key(AUDIENCE)
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
    /// Every host of the request: those the relays of its audience call.
    pub hosts: Vec<String>,
    /// Its audience: each relay (by its name, its certificate's) → the
    /// hosts it calls itself.
    pub routes: std::collections::BTreeMap<String, Vec<String>>,
    pub mode: Mode,
    /// Each host's time (seconds).
    pub timeout: f64,
    /// When it was signed (epoch seconds).
    pub issued: f64,
    /// Random: a relay runs one request once (a replay is refused).
    pub nonce: String,
    /// The identity of the signed job request the calls belong to
    /// (`seal::request_id`), sent to each minion with the call: a minion
    /// runs one at most once. Set when a job's driver hands its dispatch
    /// to the root's func-api.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_request: Option<String>,
}

/// A signed request as sent: the signed text and its signature.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SealedRequest {
    /// The request's JSON text, exactly as signed.
    pub request: String,
    pub seal: SealDoc,
    /// When a relay hands the request on: the hosts of it the next relay
    /// is to answer for (its part of the map). Not signed: it can only
    /// narrow the signed hosts, never add one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub only: Option<Vec<String>>,
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
            only: None,
        })
    }
}

impl SealedRequest {
    /// The identity of this signed request (the hex SHA-256 of its
    /// signature), as a minion is told it.
    pub fn identity(&self) -> String {
        let digest = ring::digest::digest(&ring::digest::SHA256, self.seal.sig.as_bytes());
        digest.as_ref().iter().map(|b| format!("{b:02x}")).collect()
    }

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
        // A warm func hands its root's own func-api a request for `@local`
        // alone, signed with the root's own key: the one request a relay's
        // key may sign (for its own minions).
        let local = is_local(&request.routes);
        match (local, crate::seal::signed_here(root, &seal)) {
            (true, false) => {
                return Err(RelayError::Untrusted(
                    "a request for @local is taken only from this root's own overlord".into(),
                ))
            }
            (false, _) if crate::seal::signer_is_relay(&seal) => {
                return Err(RelayError::Untrusted(
                    "it was signed by a relay's key: a relay runs only what a top overlord signed".into(),
                ))
            }
            _ => {}
        }
        let age = crate::store::now() - request.issued;
        if !(-FRESH_FOR..=FRESH_FOR).contains(&age) {
            return Err(RelayError::Untrusted(format!(
                "the request was signed {age:.0} s ago; a relay takes requests at most {FRESH_FOR:.0} s old"
            )));
        }
        if request.v != 2 || request.hosts.is_empty() || request.hosts.len() > MAX_HOSTS {
            return Err(RelayError::Request(format!(
                "a request names 1 to {MAX_HOSTS} hosts (version 2)"
            )));
        }
        // The call itself, as the gate checks every call a door makes. A
        // job's dispatch (`async.M.m`, with the job's signed request
        // identity) is handed only by a driver of this root to its own
        // func-api, now: M.m is what the gate checks.
        let function = match &request.job_request {
            None => request.function.as_str(),
            Some(id) => {
                let dispatch = request.function.strip_prefix("async.");
                match (
                    local,
                    request.mode,
                    dispatch,
                    common::rpc::client::is_request_id(id),
                ) {
                    (true, Mode::Now, Some(function), true) => function,
                    _ => return Err(RelayError::Request(
                        "a job's dispatch (async.MODULE.METHOD with its request identity) is handed only to \
                             this root's own func-api, now"
                            .into(),
                    )),
                }
            }
        };
        crate::gate::call::check_call(function, &request.params)
            .map_err(|e| RelayError::Request(e.to_string()))?;
        if !common::rpc::client::is_request_id(&request.nonce) {
            return Err(RelayError::Request("the nonce is 16 to 128 hex digits".into()));
        }
        if !request.timeout.is_finite() || request.timeout <= 0.0 || request.timeout > crate::conf::MAX_SECS {
            return Err(RelayError::Request("the timeout is out of range".into()));
        }
        let mut request = request;
        if let Some(only) = &self.only {
            let only: std::collections::HashSet<&String> = only.iter().collect();
            request.hosts.retain(|h| only.contains(h));
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

#[cfg(test)]
mod tests {
    use super::*;

    fn request(function: &str, params: serde_json::Value) -> RelayRequest {
        RelayRequest {
            v: 2,
            id: "m1-test-ping-1.0".into(),
            spec: "m1".into(),
            function: function.into(),
            params,
            user: "cli:root".into(),
            rights: None,
            hosts: vec!["m1".into()],
            routes: [("relay1".to_string(), vec!["m1".to_string()])].into(),
            mode: Mode::Now,
            timeout: 10.0,
            issued: crate::store::now(),
            nonce: "0123456789abcdef0123".into(),
            job_request: None,
        }
    }

    /// A signed request is checked as the gate checks every call a door
    /// makes: a relay runs no method name or argument the gate refuses.
    #[test]
    fn a_signed_request_is_checked_as_every_call_is() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        certs::layout::ensure_ca(&root, "test-CA").unwrap();
        let signer = crate::seal::Signer::load(&root).unwrap();
        let open = |r: RelayRequest| r.seal(&signer).unwrap().open(&root).map(|r| r.function);
        assert_eq!(
            open(request("test.ping", serde_json::json!([]))).unwrap(),
            "test.ping"
        );
        let mut deep = serde_json::json!(1);
        for _ in 0..40 {
            deep = serde_json::json!([deep]);
        }
        for (function, params, why) in [
            ("async.test.ping", serde_json::json!([]), "async"),
            ("test.p ing", serde_json::json!([]), "names"),
            ("ping", serde_json::json!([]), "module.method"),
            ("test.echo", serde_json::json!([deep]), "deeper"),
            ("test.echo", serde_json::json!({"a": 1}), "not a list"),
            ("test.echo", serde_json::json!([{"__base64__": "!!"}]), "base64"),
        ] {
            let refused = open(request(function, params)).unwrap_err().to_string();
            assert!(refused.contains(why), "{function}: {refused}");
        }
    }

    /// A job's dispatch (`async.M.m` with the job's request identity) is
    /// taken only for this root's own func-api (`@local`), now, with a
    /// well-formed identity; M.m is checked as every call is.
    #[test]
    fn a_jobs_dispatch_is_taken_only_for_the_roots_own_func_api() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        certs::layout::ensure_ca(&root, "test-CA").unwrap();
        let signer = crate::seal::Signer::load(&root).unwrap();
        let open = |r: RelayRequest| r.seal(&signer).unwrap().open(&root).map(|r| r.function);
        let dispatch = |function: &str, id: &str, local: bool, mode: Mode| {
            let mut r = request(function, serde_json::json!([]));
            r.job_request = Some(id.into());
            r.mode = mode;
            if local {
                r.routes = [(AUDIENCE.to_string(), vec!["m1".to_string()])].into();
            }
            r
        };
        let id = "00112233445566778899aabbccddeeff";
        assert_eq!(
            open(dispatch("async.test.ping", id, true, Mode::Now)).unwrap(),
            "async.test.ping"
        );
        for (r, why) in [
            (dispatch("async.test.ping", id, false, Mode::Now), "own func-api"),
            (dispatch("async.test.ping", id, true, Mode::Async), "own func-api"),
            (dispatch("test.ping", id, true, Mode::Now), "own func-api"),
            (
                dispatch("async.test.ping", "not hex", true, Mode::Now),
                "own func-api",
            ),
            (dispatch("async.async.test.ping", id, true, Mode::Now), "async"),
        ] {
            let refused = open(r).unwrap_err().to_string();
            assert!(refused.contains(why), "{refused}");
        }
    }
}
