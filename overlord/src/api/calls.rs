//! `POST /api/v1/calls {"spec", "module", "method", "args", "async",
//! "batch", "batch_wait", "failhard", "timeout", "exclude"}`. The request
//! is parsed into a typed call and judged — targets resolved, the caller's
//! rights checked on every host and the method (403, nothing sent), its
//! share of calls in progress taken (429) — before anything is sent.
//! Synchronous: 200 and `{host: result}` (the document of `func … --json`),
//! called over the warm pool. Async or batch: 202 `{"job_id"}`, run by the
//! same detached drivers as `func`'s.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::json;

use super::auth::Caller;
use super::reply::{ApiError, Body};
use super::state::Api;
use crate::batch::{driver, machine};
use crate::store::JobMeta;
use crate::targets::{Target, TargetError};

/// Longest SPEC accepted.
const MAX_SPEC: usize = 4096;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CallRequest {
    spec: String,
    module: String,
    method: String,
    #[serde(default)]
    args: Vec<serde_json::Value>,
    #[serde(default, rename = "async")]
    asynchronous: bool,
    /// `N` or `"N%"`.
    #[serde(default)]
    batch: Option<serde_json::Value>,
    #[serde(default)]
    batch_wait: Option<f64>,
    #[serde(default)]
    failhard: bool,
    #[serde(default)]
    timeout: Option<f64>,
    #[serde(default)]
    exclude: Option<String>,
}

/// A call, checked.
struct Call {
    spec: String,
    exclude: Option<String>,
    function: String,
    args: Vec<serde_json::Value>,
    asynchronous: bool,
    batch: Option<String>,
    batch_wait: f64,
    failhard: bool,
    timeout: f64,
}

/// A SPEC's form: not empty, not huge, printable.
pub fn check_spec(spec: &str) -> Result<(), ApiError> {
    if spec.trim().is_empty() || spec.len() > MAX_SPEC || spec.chars().any(char::is_control) {
        return Err(ApiError::bad(format!(
            "spec must be 1 to {MAX_SPEC} printable characters"
        )));
    }
    Ok(())
}

fn name_ok(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 200
        && s.split('.')
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
}

impl CallRequest {
    fn check(self) -> Result<Call, ApiError> {
        check_spec(&self.spec)?;
        if let Some(ex) = &self.exclude {
            check_spec(ex)?;
        }
        if !name_ok(&self.module) || !name_ok(&self.method) || self.module == "async" {
            return Err(ApiError::bad(
                "module and method are names: letters, digits, '_', '.'",
            ));
        }
        let secs = |v: Option<f64>, zero: bool, what: &str| -> Result<Option<f64>, ApiError> {
            v.map(|t| {
                crate::settings::seconds(&t.to_string(), zero)
                    .map_err(|why| ApiError::bad(format!("{what} {why}")))
            })
            .transpose()
        };
        let batch = match &self.batch {
            None | Some(serde_json::Value::Null) => None,
            Some(serde_json::Value::Number(n)) => Some(n.to_string()),
            Some(serde_json::Value::String(s)) => Some(s.clone()),
            Some(_) => return Err(ApiError::bad("batch is a number of hosts or \"N%\"")),
        };
        if let Some(b) = &batch {
            let n = b.trim_end_matches('%').trim().parse::<f64>().ok();
            if !n
                .is_some_and(|n| n.is_finite() && n >= 1.0 && n <= if b.ends_with('%') { 100.0 } else { 1e6 })
            {
                return Err(ApiError::bad(
                    "batch: a number of hosts (1 to 1,000,000) or a percentage (1% to 100%)",
                ));
            }
            machine::size(b, 1).map_err(|_| ApiError::bad("batch: a number of hosts or \"N%\""))?;
        } else if self.batch_wait.is_some() || self.failhard {
            return Err(ApiError::bad("batch_wait and failhard need batch"));
        }
        Ok(Call {
            function: format!("{}.{}", self.module, self.method),
            spec: self.spec,
            exclude: self.exclude,
            args: self.args,
            asynchronous: self.asynchronous,
            batch_wait: secs(self.batch_wait, true, "batch_wait")?.unwrap_or(0.0),
            failhard: self.failhard,
            timeout: match secs(self.timeout, false, "timeout")? {
                Some(t) if t < 0.1 => return Err(ApiError::bad("timeout: at least 0.1 seconds")),
                Some(t) => t,
                None => crate::settings::DEFAULT_TIMEOUT,
            },
            batch,
        })
    }
}

/// `POST /api/v1/calls`.
pub async fn call(
    caller: Caller,
    State(api): State<Arc<Api>>,
    Body(req): Body<CallRequest>,
) -> Result<Response, ApiError> {
    let call = req.check()?;
    let root = api.root.clone();
    let (spec, exclude) = (call.spec.clone(), call.exclude.clone());
    let action = format!("call {}", call.function);
    // Which host is not said: it may be one this caller cannot see. A
    // limited caller gets this same answer for a SPEC word that names no
    // minion at all, so it cannot tell missing minions from forbidden ones.
    let forbidden = |names: &[String]| {
        api.audit.line(&caller.name, caller.from, &action, names, 403);
        ApiError::forbidden(format!(
            "this token may not call {} on every host the SPEC names",
            call.function
        ))
    };
    let limited = !caller.rights.admin;
    let (rights, function) = (caller.rights.clone(), call.function.clone());
    let resolved = tokio::task::spawn_blocking(move || {
        if limited && !every_word_names_a_callable_minion(&root, &rights, &function, &spec) {
            return Ok(None);
        }
        crate::targets::resolve(&root, &spec, exclude.as_deref()).map(Some)
    })
    .await
    .map_err(ApiError::internal)?;
    let targets = match resolved {
        Ok(Some(targets)) => targets,
        Ok(None) => return Err(forbidden(&[])),
        // A limited caller learns nothing of names it may not call: no
        // match, an unknown group or pattern in the SPEC or `exclude`, all
        // answer as forbidden.
        Err(_) if limited => return Err(forbidden(&[])),
        Err(e @ TargetError::NoMatch(_)) => return Err(ApiError::not_found(e.to_string())),
        Err(other) => return Err(ApiError::bad(other.to_string())),
    };
    let names: Vec<String> = targets.iter().map(|t| t.name.clone()).collect();
    if caller
        .rights
        .forbidden(&api.root, &call.function, &names)
        .is_some()
    {
        return Err(forbidden(&names));
    }
    let _slot = take_slot(&api, &caller)?;
    api.metrics
        .calls
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let answer = if call.batch.is_some() || call.asynchronous {
        start_job(&api, &caller, &call, names.clone()).await
    } else {
        Ok(sync_call(&api, &caller, &call, &targets).await)
    };
    let status = answer.as_ref().map_or_else(|e| e.status, |r| r.status());
    api.audit
        .line(&caller.name, caller.from, &action, &names, status.as_u16());
    answer
}

/// Whether every `;` word of `spec` names at least one minion `rights`
/// may call with `function` (a word naming none would otherwise be
/// dropped silently, and whether it named a forbidden minion or none at
/// all would show: `m1;m2` excluding `m2` answered 200 when m2 existed).
fn every_word_names_a_callable_minion(
    root: &common::paths::Root,
    rights: &super::tokens::Rights,
    function: &str,
    spec: &str,
) -> bool {
    let callable: Vec<String> = rights.hosts_for(root, Some(function)).into_iter().collect();
    let groups = crate::groups::Groups::load(&root.groups_file());
    spec.split(';')
        .map(str::trim)
        .filter(|w| !w.is_empty())
        .all(|w| crate::targets::select(w, &callable, &groups).is_ok_and(|hosts| !hosts.is_empty()))
}

/// One of the caller's slots for calls in progress, or 429.
pub fn take_slot(api: &Api, caller: &Caller) -> Result<tokio::sync::OwnedSemaphorePermit, ApiError> {
    let slots = {
        let mut busy = api.busy.lock().unwrap_or_else(|p| p.into_inner());
        if busy.len() > 10_000 {
            busy.retain(|_, s| s.available_permits() < api.settings.calls_per_token);
        }
        Arc::clone(
            busy.entry(caller.name.clone())
                .or_insert_with(|| Arc::new(tokio::sync::Semaphore::new(api.settings.calls_per_token))),
        )
    };
    slots.try_acquire_owned().map_err(|_| {
        ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            format!(
                "{} calls of this caller are in progress ([api] calls_per_token)",
                api.settings.calls_per_token
            ),
        )
    })
}

async fn sync_call(api: &Arc<Api>, caller: &Caller, call: &Call, targets: &[Target]) -> Response {
    let params: Vec<common::Value> = call.args.iter().map(crate::values::from_json).collect();
    let results = api
        .pool
        .call_all(
            targets,
            &call.function,
            &params,
            Duration::from_secs_f64(call.timeout),
            Some(&caller.user()),
            |_, _| {},
        )
        .await;
    let doc: serde_json::Map<String, serde_json::Value> = results
        .iter()
        .map(|(h, v)| (h.clone(), crate::values::to_json(v)))
        .collect();
    (StatusCode::OK, Json(serde_json::Value::Object(doc))).into_response()
}

async fn start_job(
    api: &Arc<Api>,
    caller: &Caller,
    call: &Call,
    names: Vec<String>,
) -> Result<Response, ApiError> {
    let mut meta = JobMeta::new_call(
        &call.spec,
        &call.function,
        Vec::new(),
        Some(serde_json::Value::Array(call.args.clone()).to_string()),
        names.len(),
        (call.timeout, crate::dispatch::default_forks()),
        call.batch.is_some(),
    );
    meta.user = caller.user();
    // What the caller may do, signed with the request (DESIGN §9).
    meta.rights = (!caller.rights.admin).then(|| {
        caller
            .rights
            .rules
            .iter()
            .map(|r| format!("{}={}", r.spec, r.methods.join(",")))
            .collect()
    });
    let api2 = Arc::clone(api);
    let (batch, wait, failhard, timeout) = (call.batch.clone(), call.batch_wait, call.failhard, call.timeout);
    let id = tokio::task::spawn_blocking(move || -> Result<String, crate::error::EngineError> {
        let Some(batch) = batch else {
            let (id, driver) = crate::jobs::driver::submit(&api2.store, &api2.root, meta, names)?;
            super::state::reap(driver);
            return Ok(id);
        };
        let size = machine::size(&batch, names.len()).map_err(crate::error::EngineError::Record)?;
        let state = machine::BatchState::new(names, size, wait, failhard, timeout);
        let (id, _) = driver::create(&api2.store, &api2.root, meta, state, "async")?;
        let child =
            driver::spawn(&api2.exe, &api2.root, &id).map_err(|source| crate::error::EngineError::Spawn {
                what: "the batch driver",
                source,
            })?;
        driver::hand_over(&api2.store, &id, &child, crate::settings::batch_lease(&api2.root))?;
        super::state::reap(child);
        Ok(id)
    })
    .await
    .map_err(ApiError::internal)?
    .map_err(|e| match e {
        crate::error::EngineError::Store(s) => ApiError::store(s),
        other => ApiError::internal(other),
    })?;
    api.metrics
        .jobs
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    // Where to follow it: the batch's page for a batch, else the job's.
    let kind = if call.batch.is_some() { "batches" } else { "jobs" };
    let location = format!("/api/v1/{kind}/{}", encode_segment(&id));
    let mut answer = (StatusCode::ACCEPTED, Json(json!({"job_id": id}))).into_response();
    if let Ok(v) = axum::http::HeaderValue::from_str(&location) {
        answer.headers_mut().insert(axum::http::header::LOCATION, v);
    }
    Ok(answer)
}

/// `text` as one URL path segment (job ids hold SPEC characters: `*`, `;`).
pub fn encode_segment(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => out.push(b as char),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}
