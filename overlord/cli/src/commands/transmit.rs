//! `func transmit`: Func's `func-transmit` for programs. One JSON request
//! on stdin, one JSON answer on stdout, the CLI's exit status, and exactly
//! what `--json` documents:
//!
//! - a call: `{"clients": SPEC, "module": M, "method": m, "parameters": [...],
//!   "async": bool, "nforks": N, "timeout": S, "exclude": SPEC, "batch": "N|P%",
//!   "batch_wait": S, "failhard": bool}` → `{host: result}`, or with
//!   `"async": true` `{"job_id": ID}` (the parameters are sent typed, as
//!   with `--json-args`). Its keys become the gate's call (`gate::CallFields`),
//!   checked as every door's is, and it runs as `func --json SPEC call`;
//! - `{"job_status": ID, "wait": bool, "timeout": S}`: the engine's job
//!   status (`func --json job_status ID [--wait]`); any other command as its
//!   words, `{"command": ["jobs", "list", "--limit", "5"]}`: the
//!   command line they stand for (always with `--json`).
//!
//! A key the request's kind does not know is refused with the closest
//! known one (`"exlude"` → did you mean `"exclude"`?): a misspelt key must
//! never silently run something else.

use serde_json::Value as J;

use overlord::gate::keys::{Fields, Unread};
use overlord::plan::PlanError;

/// The keys each kind of request knows.
const COMMAND_KEYS: &[&str] = &["command", "timeout"];
const JOB_STATUS_KEYS: &[&str] = &["job_status", "wait", "timeout"];
const CALL_KEYS: &[&str] = &[
    "clients",
    "module",
    "method",
    "parameters",
    "async",
    "nforks",
    "timeout",
    "exclude",
    "filter",
    "filteror",
    "grain",
    "fact_query",
    "batch",
    "batch_wait",
    "failhard",
    "delegate",
];

/// Refuses the first key of `obj` that is not in `known` (a `kind` request's keys).
fn only_known(obj: &serde_json::Map<String, J>, known: &[&str], kind: &str) -> Result<(), PlanError> {
    match crate::cli::unknown_key(obj.keys(), known) {
        Some(why) => Err(PlanError::usage(format!(
            "func transmit: {}",
            why.replacen("; known", &format!(" in a {kind} request; known"), 1)
        ))),
        None => Ok(()),
    }
}

/// A request read: the command line it stands for, a job's status, or a
/// call for the gate.
#[derive(Debug)]
pub enum Request {
    Words(Vec<String>),
    /// `{"job_status": ID, "wait", "timeout"}`: the engine's job status.
    JobStatus {
        id: String,
        wait: bool,
        timeout: Option<f64>,
    },
    /// A call, checked by the gate; run as `func --json SPEC call`.
    Call(overlord::gate::Call),
}

/// Reads a request.
pub fn request(text: &str) -> Result<Request, PlanError> {
    let req: J = overlord::gate::keys::json(text).map_err(|e| match e {
        Unread::Syntax(e) => bad(format!("the request is not JSON: {e}")),
        Unread::Repeated(why) => bad(why),
    })?;
    let obj = req
        .as_object()
        .ok_or_else(|| bad("the request must be a JSON object".into()))?;
    let fields = Fields(obj);
    if let Some(command) = obj.get("command") {
        only_known(obj, COMMAND_KEYS, "command")?;
        return command_request(command, fields.text("timeout").map_err(badly)?);
    }
    if let Some(id) = fields.name("job_status").map_err(badly)? {
        only_known(obj, JOB_STATUS_KEYS, "job_status")?;
        overlord::gate::JobRef::parse(&id)?;
        let timeout = match fields.text("timeout").map_err(badly)? {
            Some(t) => Some(crate::globals::positive("timeout", &t).map_err(|e| bad(e.to_string()))?),
            None => None,
        };
        let wait = fields.flag("wait").map_err(badly)?;
        return Ok(Request::JobStatus { id, wait, timeout });
    }
    only_known(obj, CALL_KEYS, "call")?;
    call_request(obj).map(Request::Call)
}

/// A field the gate refused, said as this program's.
fn badly(e: overlord::gate::GateError) -> PlanError {
    bad(e.to_string())
}

fn bad(why: String) -> PlanError {
    PlanError::usage(format!("func transmit: {why}"))
}

/// `{"command": [words], "timeout"}`: the command line the words stand for.
fn command_request(command: &J, timeout: Option<String>) -> Result<Request, PlanError> {
    let mut words = vec!["--json".to_string()];
    if let Some(t) = timeout {
        words.extend(["--timeout".into(), t]);
    }
    let list = command
        .as_array()
        .filter(|l| l.iter().all(J::is_string) && !l.is_empty())
        .ok_or_else(|| bad("\"command\" must be a list of words".into()))?;
    if list[0] == "transmit" {
        return Err(bad("a request cannot be another transmit".into()));
    }
    // The root is the caller's (`func --root R transmit`), never the request's.
    if list
        .iter()
        .filter_map(J::as_str)
        .any(|w| w == "--root" || w.starts_with("--root="))
    {
        return Err(bad(
            "a request cannot choose the root (--root): it is the one func transmit runs with".into(),
        ));
    }
    words.extend(list.iter().filter_map(|w| w.as_str().map(str::to_string)));
    Ok(Request::Words(words))
}

/// A call's keys as the gate's call, checked as every door's is.
fn call_request(obj: &serde_json::Map<String, J>) -> Result<overlord::gate::Call, PlanError> {
    let f = Fields(obj);
    let need = |key: &str| {
        f.name(key)
            .map_err(badly)?
            .ok_or_else(|| bad(format!("a call needs {key:?}")))
    };
    let args = match obj.get("parameters") {
        None | Some(J::Null) => Vec::new(),
        Some(J::Array(p)) => p.clone(),
        Some(_) => return Err(bad("\"parameters\" must be a list".into())),
    };
    Ok(overlord::gate::Call::new(overlord::gate::CallFields {
        spec: need("clients")?,
        exclude: f.name("exclude").map_err(badly)?,
        module: need("module")?,
        method: need("method")?,
        args,
        words: None,
        asynchronous: f.flag("async").map_err(badly)?,
        batch: f.text("batch").map_err(badly)?,
        batch_wait: f.text("batch_wait").map_err(badly)?,
        failhard: f.flag("failhard").map_err(badly)?,
        timeout: f.text("timeout").map_err(badly)?,
        forks: f.text("nforks").map_err(badly)?,
        filter: f.name("filter").map_err(badly)?,
        filteror: f.name("filteror").map_err(badly)?,
        grain: f.name("grain").map_err(badly)?,
        fact_query: obj.get("fact_query").filter(|q| !q.is_null()).cloned(),
        delegate: f.flag("delegate").map_err(badly)?,
    })?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request_words(text: &str) -> Result<Vec<String>, PlanError> {
        match request(text)? {
            Request::Words(w) => Ok(w),
            Request::JobStatus { id, wait, .. } => Ok(vec![format!("job_status {id} {wait}")]),
            Request::Call(c) => Ok(vec![c.function()]),
        }
    }

    #[test]
    fn requests_become_calls_or_command_lines() {
        let Request::Call(c) = request(r#"{"clients": "web*", "module": "test", "method": "add", "parameters": [1, 2], "nforks": 4, "timeout": 5}"#).unwrap() else {
            panic!("not a call")
        };
        assert_eq!(
            (c.spec.as_str(), c.function(), c.forks, c.timeout, c.run),
            (
                "web*",
                "test.add".to_string(),
                Some(4),
                Some(5.0),
                overlord::gate::Run::Now
            )
        );
        assert_eq!(c.args, overlord::gate::Args::Typed(vec![1.into(), 2.into()]));
        let Request::Call(c) = request(
            r#"{"clients": "*", "module": "test", "method": "sleep", "parameters": [1], "async": true}"#,
        )
        .unwrap() else {
            panic!("not a call")
        };
        assert_eq!(c.run, overlord::gate::Run::Async);
        let w = request_words(r#"{"job_status": "x-1.5", "wait": true}"#).unwrap();
        assert_eq!(w, ["job_status x-1.5 true"]);
        assert!(request_words("[1]").is_err());
        assert!(request_words(r#"{"clients": "*"}"#).is_err());
        assert!(request_words(r#"{"command": ["transmit"]}"#).is_err());
        // The gate decides, as for every door.
        let e = request_words(r#"{"clients": "*", "module": "test", "method": "ping", "failhard": true}"#)
            .unwrap_err();
        assert_eq!(
            (e.exit_code(), e.to_string()),
            (2, "failhard and batch_wait need batch".to_string())
        );
        assert!(
            request_words(r#"{"clients": "*", "module": "test", "method": "ping", "async": "yes"}"#).is_err()
        );
    }

    #[test]
    fn unknown_keys_are_refused_with_a_suggestion() {
        let err = |text: &str| request_words(text).unwrap_err().to_string();
        let e = err(r#"{"clients": "*", "module": "test", "method": "ping", "exlude": "m1"}"#);
        assert!(
            e.contains(r#"unknown key "exlude""#) && e.contains(r#"did you mean "exclude"?"#),
            "{e}"
        );
        let e = err(r#"{"clients": "*", "module": "test", "method": "sleep", "asynk": true}"#);
        assert!(e.contains(r#"did you mean "async"?"#), "{e}");
        let e = err(r#"{"clients": "*", "module": "test", "method": "add", "paramters": [1, 2]}"#);
        assert!(e.contains(r#"did you mean "parameters"?"#), "{e}");
        let e = err(r#"{"job_status": "x", "wiat": true}"#);
        assert!(e.contains(r#"did you mean "wait"?"#), "{e}");
        let e = err(r#"{"command": ["jobs", "list", "--root", "/tmp/x"]}"#);
        assert!(e.contains("cannot choose the root"), "{e}");
        let e = err(r#"{"command": ["m1", "ping", "--root=/tmp/x"]}"#);
        assert!(e.contains("cannot choose the root"), "{e}");
        let e = err(r#"{"command": ["jobs", "list"], "clients": "*"}"#);
        assert!(e.contains("unknown key \"clients\" in a command request"), "{e}");
    }
}
