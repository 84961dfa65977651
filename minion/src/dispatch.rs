//! One XML-RPC call, from decoded request to reply: printable name and ACL
//! check (faults -32600 and 1; also asked early by `server.rs` once the name
//! has arrived), audit line, then the method on a blocking thread within the
//! caller's share (`limits.rs`) so slow methods never stall other callers.
//! Method failures, unknown methods and an exhausted share are values
//! (`REMOTE_ERROR` lists), as in Func.

use std::net::SocketAddr;
use std::sync::Arc;

use common::identity::PeerIdentity;
use common::xmlrpc::{self, FAULT_FUNC, FAULT_INVALID_REQUEST};
use common::Value;

use crate::acl::Caller;
use crate::facts::Filtered;
use crate::modules::{Context, MethodError};
use crate::state::Minion;

/// The body of an HTTP 200 reply: a response or a fault.
pub enum Reply {
    Value(Value),
    Fault { code: i32, message: String },
}

impl Reply {
    /// Encodes the reply; a value that cannot be encoded becomes a fault.
    pub fn encode(self, max_depth: usize) -> String {
        match self {
            Reply::Value(v) => match xmlrpc::encode_response(v, max_depth) {
                Ok(xml) => xml,
                Err(e) => xmlrpc::encode_fault(
                    FAULT_FUNC,
                    &format!("<class 'OverflowError'>:cannot encode result: {e}"),
                ),
            },
            Reply::Fault { code, message } => xmlrpc::encode_fault(code, &message),
        }
    }
}

/// Runs one call for `who` (on behalf of `user`, as the request said; as
/// part of signed request `request`, if the overlord named one).
pub async fn call(
    minion: Arc<Minion>,
    peer: SocketAddr,
    who: PeerIdentity,
    (user, request): (Option<String>, Option<String>),
    method: String,
    params: Vec<Value>,
) -> Reply {
    let caller = Caller::from(&who);
    // Only the overlord's word on whom it calls for, and for which signed
    // request, is believed.
    let user = user.filter(|_| who.overlord);
    let request = request.filter(|_| who.overlord);
    if let Some((code, message)) = refusal(&minion, &caller, &method) {
        return Reply::Fault { code, message };
    }
    // `async.M.m` runs M.m as a detached job; the ACL judges M.m itself.
    let (is_async, method) = match method.strip_prefix("async.") {
        Some(inner) => (true, inner.to_string()),
        None => (false, method),
    };
    minion
        .audit
        .record(peer, &caller, user.as_deref(), &method, &params);
    // A call with Func's fact query reads the facts first (I/O): never instant.
    let filtered = crate::facts::query_of(&params).is_some();
    if !is_async && !filtered && minion.registry.is_instant(&method) {
        let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            run(&minion, &method, &params, &caller)
        }));
        return Reply::Value(settle(ran.ok()));
    }
    // A blocking thread is taken only within the caller's limits.
    let permit = match minion.gate.enter(&caller) {
        Ok(p) => p,
        Err(busy) => return Reply::Value(busy.into_value()),
    };
    let worker = Arc::clone(&minion);
    let joined = tokio::task::spawn_blocking(move || {
        let _permit = permit;
        // Func's fact query: the method runs only where it holds.
        let (verdict, params) = match crate::facts::query_of(&params) {
            // A verdict names the facts it read, with their values: only a
            // caller that may read them (fact.items) may ask for one.
            Some(_) if !worker.acl.allows(&caller, "fact.items") => {
                return Ok(common::xmlrpc::remote_error(
                    "func.minion.codes.AccessToMethodDenied",
                    &format!(
                        "{} may not call fact.items, so it may not send a fact query",
                        caller.key
                    ),
                    "",
                ))
            }
            // As Func's minion: an async call is a job whatever the query
            // says; the job judges it and wraps its result (`jobproc`).
            Some(_) if is_async => (None, params),
            Some(wire) => match crate::facts::filtered(&worker.config.root, wire) {
                Filtered::Run(verdict) => (Some(verdict), params[1..].to_vec()),
                Filtered::Answer(answer) => return Ok(answer),
            },
            None => (None, params),
        };
        if is_async {
            // Any method gets an id; an unknown one fails inside the job, as in Func.
            return worker
                .jobs
                .submit(&method, params, &caller, request)
                .map(Value::String);
        }
        let ran = run(&worker, &method, &params, &caller);
        match verdict {
            Some(verdict) => Ok(Filtered::wrap(verdict, settle(Some(ran)))),
            None => ran,
        }
    })
    .await;
    Reply::Value(settle(joined.ok()))
}

/// Why `caller` may not call `method` (as sent, `async.` included), as a
/// fault (code, message); `None` when it may. Asked once the method name
/// has arrived, before the rest of the request is read, and again here.
pub fn refusal(minion: &Minion, caller: &Caller, method: &str) -> Option<(i32, String)> {
    // Names are printable ASCII: nothing else reaches an ACL glob, a log
    // line or a job record.
    if !is_printable_name(method) {
        return Some((
            FAULT_INVALID_REQUEST,
            "method name must be printable ASCII without spaces".into(),
        ));
    }
    let inner = method.strip_prefix("async.").unwrap_or(method);
    if minion.acl.allows(caller, inner) {
        return None;
    }
    tracing::info!(caller = %caller.key, method = %common::paths::shorten(inner), "ACL denied");
    Some((
        FAULT_FUNC,
        format!(
            "<class 'func.minion.codes.AccessToMethodDenied'>:{} may not call {}",
            caller.key,
            common::paths::shorten(inner)
        ),
    ))
}

/// Whether a method name is 1 to 256 printable ASCII characters, no spaces.
fn is_printable_name(method: &str) -> bool {
    (1..=256).contains(&method.len()) && method.bytes().all(|b| b.is_ascii_graphic())
}

/// Runs `method` with the daemon's context.
fn run(minion: &Minion, method: &str, params: &[Value], caller: &Caller) -> Result<Value, MethodError> {
    let ctx = Context {
        root: &minion.config.root,
        copyfile_dirs: &minion.config.copyfile_dirs,
        registry: &minion.registry,
        jobs: Some(&minion.jobs),
        caller,
        acl: &minion.acl,
    };
    minion.registry.call(&ctx, method, params)
}

/// The value of a call; `None` when the module panicked (a bug — the
/// caller still gets an error value).
fn settle(outcome: Option<Result<Value, MethodError>>) -> Value {
    match outcome {
        Some(Ok(v)) => v,
        Some(Err(e)) => e.into_value(),
        None => {
            tracing::error!("module panicked");
            MethodError::new("exceptions.Exception", "internal error in module").into_value()
        }
    }
}
