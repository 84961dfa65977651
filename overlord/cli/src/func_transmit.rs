//! `func-transmit`: Func's program of that name, for scripts in any
//! language. One request on stdin, one answer on stdout, both JSON
//! (`--json`, the default) or YAML (`--yaml`), in Func's own shapes (DESIGN
//! §11), so Func-era scripts run unchanged:
//!
//! - `{"clients": SPEC | [SPEC, ...], "module": M, "method": m,
//!   "parameters": [..] | value, "async": bool, "nforks": N, "timeout": S}`
//!   → `{host: result}`, or the bare job id when `"async": true`;
//! - `{"method": "list_minions", "clients": ...}` → the names (no `clients`:
//!   `*`; no match: `[]`);
//! - `{"method": "job_status", "parameters": ID}` → `[code, {host: result}]`
//!   with Func's codes (0 running, 1 finished, 2 lost, 3 partial).
//!
//! It is a front end of its own over the engine: a request becomes a typed
//! [`Request`], carried out in this process (targets, calls through the
//! worker processes — this program re-spawned as `__worker` — the job store,
//! async jobs with their detached `__driver`), so its jobs are the CLI's
//! jobs, in the same store, under the same limits and audit. A bad request
//! is a clear error (`{"error": ...}`) and exit 2; otherwise the exit status
//! is as `func`'s (1 when a host failed, 3 for a job not finished yet).

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use common::paths::Root;
use serde_json::{json, Value as J};

use overlord::engine::{self, Answer};
use overlord::gate::keys::Fields;
use overlord::plan::{Plan, PlanError};
use overlord::targets::TargetError;

/// Largest request read from stdin.
const MAX_REQUEST: u64 = 16 << 20;

/// The keys a request may hold (Func's, plus `timeout`).
const KEYS: &[&str] = &[
    "clients",
    "module",
    "method",
    "parameters",
    "async",
    "nforks",
    "timeout",
    "filter",
    "filteror",
    "grain",
    "delegate",
    "mapfile",
];

#[derive(Parser, Debug)]
#[command(
    name = "func-transmit",
    version,
    about = "Func's func-transmit: one request on stdin, one answer on stdout (JSON or YAML)",
    after_help = "Request: {\"clients\": \"*\", \"module\": \"test\", \"method\": \"add\", \"parameters\": [1, 2], \"async\": false, \"nforks\": 1}\n\
Also {\"method\": \"list_minions\"} and {\"method\": \"job_status\", \"parameters\": JOB_ID}.\n\
Exit status: 0 every host succeeded, 1 a host failed, 2 a bad request, 3 a job not finished yet."
)]
pub struct Cli {
    /// Read and write JSON (the default)
    #[arg(long, conflicts_with = "yaml")]
    pub json: bool,
    /// Read and write YAML
    #[arg(long)]
    pub yaml: bool,
    /// The overlord's root (the certmaster's); env FUNC_ROOT, default /
    #[arg(long, value_name = "DIR", env = "FUNC_ROOT")]
    pub root: Option<PathBuf>,
}

/// A request, checked.
#[derive(Debug, PartialEq)]
enum Request {
    ListMinions {
        spec: String,
        filter: Option<overlord::gate::filter::Filter>,
    },
    JobStatus {
        id: String,
    },
    /// A call, checked by the gate, and the delegation map to use
    /// (`mapfile`, with `delegate`).
    Call(overlord::gate::Call, Option<String>),
}

/// Why a request was refused: the message, the exit status and the kind
/// (`gate::GateError::kind`) the error document carries.
#[derive(Debug)]
struct Bad {
    why: String,
    exit: i32,
    kind: &'static str,
}

/// A request that cannot be read or is malformed: exit 2, `invalid`.
fn bad(why: String) -> Bad {
    Bad {
        why,
        exit: 2,
        kind: "invalid",
    }
}

impl From<overlord::gate::GateError> for Bad {
    fn from(e: overlord::gate::GateError) -> Self {
        Bad {
            why: e.to_string(),
            exit: e.exit_status(),
            kind: e.kind(),
        }
    }
}

/// Runs the program; the exit status.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let yaml = cli.yaml;
    let mut text = String::new();
    let read = std::io::stdin().take(MAX_REQUEST + 1).read_to_string(&mut text);
    let answer = match read {
        Err(e) => Err(bad(format!("cannot read the request: {e}"))),
        Ok(n) if n as u64 > MAX_REQUEST => {
            Err(bad(format!("the request is larger than {MAX_REQUEST} bytes")))
        }
        Ok(_) => decode(&text, yaml).and_then(|req| check(&req)),
    };
    let (doc, code) = match answer {
        Ok(request) => run(&cli, &request),
        Err(Bad { why, exit, kind }) => (
            json!({"error": format!("func-transmit: {why}"), "kind": kind}),
            exit,
        ),
    };
    if let Some(why) = doc.get("error").and_then(J::as_str) {
        overlord::errln!("{why}");
    } else if let Some(why) = doc
        .get("message")
        .and_then(J::as_str)
        .filter(|_| doc.get("error").is_some())
    {
        overlord::errln!("func-transmit: {why}");
    }
    // JSON writes terminal hazards as \uXXXX (the same document); YAML's
    // plain and single-quoted scalars have no escapes, so it is left as is.
    let out = match yaml {
        true => yaml_serde::to_string(&doc).unwrap_or_else(|e| format!("error: {e}\n")),
        false => crate::display::output::json_safe(format!("{doc}\n")),
    };
    overlord::out!("{out}");
    ExitCode::from(code as u8)
}

/// Deepest YAML nesting accepted (JSON's parser stops at 128 by itself).
const MAX_YAML_NESTING: usize = 100;

/// How deep `text` nests as YAML, over-estimated in one linear pass: every
/// unclosed `[` or `{` counts (even inside quotes, so no quoting trick
/// hides one), plus the block levels open (indentations, and each leading
/// `- ` or `? ` on a line). The YAML parser's time grows with the square of
/// the depth, so a deep request is refused before it is parsed.
fn yaml_nesting(text: &str) -> usize {
    let (mut deepest, mut flow) = (0usize, 0usize);
    let mut blocks: Vec<usize> = Vec::new();
    for line in text.lines() {
        let body = line.trim_start_matches([' ', '\t']);
        if flow == 0 && !body.is_empty() && !body.starts_with('#') {
            let indent = line.len() - body.len();
            while blocks.last().is_some_and(|&open| open >= indent) {
                blocks.pop();
            }
            blocks.push(indent);
            let mut rest = body;
            while let Some(r) = rest.strip_prefix("- ").or_else(|| rest.strip_prefix("? ")) {
                blocks.push(indent + body.len() - r.len());
                rest = r.trim_start_matches(' ');
            }
            deepest = deepest.max(blocks.len());
        }
        for b in line.bytes() {
            match b {
                b'[' | b'{' => {
                    flow += 1;
                    deepest = deepest.max(blocks.len() + flow);
                }
                b']' | b'}' => flow = flow.saturating_sub(1),
                _ => {}
            }
        }
    }
    deepest
}

/// The request document, from JSON or YAML.
fn decode(text: &str, yaml: bool) -> Result<J, Bad> {
    match yaml {
        true if yaml_nesting(text) > MAX_YAML_NESTING => Err(bad(format!(
            "the request nests deeper than {MAX_YAML_NESTING} levels"
        ))),
        true => overlord::gate::keys::yaml(text).map_err(|e| unread(e, "YAML")),
        false => overlord::gate::keys::json(text).map_err(|e| unread(e, "JSON")),
    }
}

fn unread(e: overlord::gate::keys::Unread, format: &str) -> Bad {
    match e {
        overlord::gate::keys::Unread::Syntax(e) => bad(format!("the request is not {format}: {e}")),
        overlord::gate::keys::Unread::Repeated(why) => bad(why),
    }
}

/// A request document as a checked [`Request`].
fn check(doc: &J) -> Result<Request, Bad> {
    let obj = doc
        .as_object()
        .ok_or_else(|| bad("the request must be a mapping of keys to values".into()))?;
    if let Some(why) = crate::cli::unknown_key(obj.keys(), KEYS) {
        return Err(bad(why));
    }
    let f = Fields(obj);
    let spec = clients(obj.get("clients"))?;
    let method = f
        .name("method")
        .map_err(Bad::from)?
        .ok_or_else(|| bad("a request needs \"method\"".into()))?;
    overlord::gate::call::check_spec("spec", &spec).map_err(Bad::from)?;
    let filter = overlord::gate::filter::Filter::parse(
        f.name("filter").map_err(Bad::from)?.as_deref(),
        f.name("filteror").map_err(Bad::from)?.as_deref(),
        f.name("grain").map_err(Bad::from)?.as_deref(),
        None,
    )
    .map_err(|e| Bad::from(overlord::gate::GateError::from(e)))?;
    match method.as_str() {
        "list_minions" => Ok(Request::ListMinions { spec, filter }),
        "job_status" => {
            let id = match obj.get("parameters") {
                Some(J::String(id)) => id.clone(),
                Some(J::Array(one)) if one.len() == 1 && one[0].is_string() => {
                    one[0].as_str().unwrap_or_default().to_string()
                }
                _ => return Err(bad("job_status takes the job id as \"parameters\"".into())),
            };
            overlord::gate::JobRef::parse(&id).map_err(Bad::from)?;
            Ok(Request::JobStatus { id })
        }
        _ => call(obj, spec, method),
    }
}

/// `clients`: a SPEC, or a list of them (`*` when absent).
fn clients(given: Option<&J>) -> Result<String, Bad> {
    fn spec(s: &J) -> Option<&str> {
        s.as_str().filter(|s| !s.trim().is_empty())
    }
    match given {
        None | Some(J::Null) => Ok("*".to_string()),
        Some(J::String(s)) if !s.trim().is_empty() => Ok(s.clone()),
        Some(J::Array(list)) if !list.is_empty() && list.iter().all(|c| spec(c).is_some()) => {
            Ok(list.iter().filter_map(spec).collect::<Vec<_>>().join(";"))
        }
        Some(_) => Err(bad(
            "\"clients\" must be a SPEC (\"*\", \"a;b\", \"@group\") or a list of them".into(),
        )),
    }
}

/// A call of `method` on `spec`, checked by the gate (numbers too).
fn call(obj: &serde_json::Map<String, J>, spec: String, method: String) -> Result<Request, Bad> {
    let f = Fields(obj);
    let module = f
        .name("module")
        .map_err(Bad::from)?
        .ok_or_else(|| bad(format!("a call of {method:?} needs \"module\"")))?;
    let args = match obj.get("parameters") {
        None | Some(J::Null) => Vec::new(),
        Some(J::Array(list)) => list.clone(),
        // Func listified a single value.
        Some(one) => vec![one.clone()],
    };
    let call = overlord::gate::Call::new(overlord::gate::CallFields {
        spec,
        exclude: None,
        module,
        method,
        args,
        words: None,
        asynchronous: f.flag("async").map_err(Bad::from)?,
        batch: None,
        batch_wait: None,
        failhard: false,
        timeout: f.text("timeout").map_err(Bad::from)?,
        forks: f.text("nforks").map_err(Bad::from)?,
        filter: f.name("filter").map_err(Bad::from)?,
        filteror: f.name("filteror").map_err(Bad::from)?,
        grain: f.name("grain").map_err(Bad::from)?,
        fact_query: None,
        delegate: f.flag("delegate").map_err(Bad::from)?,
    })?;
    Ok(Request::Call(call, f.name("mapfile").map_err(Bad::from)?))
}

/// Carries out the request with the engine, in this process: the answer in
/// Func's shape, and the exit status.
fn run(cli: &Cli, request: &Request) -> (J, i32) {
    let root = Root::new(
        cli.root
            .as_ref()
            .map(|r| r.to_string_lossy().into_owned())
            .unwrap_or_else(|| "/".into()),
    );
    match answer(root, request) {
        Ok(done) => done,
        // Nothing matched: Func's client raised, and func-transmit
        // answered its error object (DESIGN §11), for calls and lists alike.
        Err(e @ PlanError::Gate(overlord::gate::GateError::Targets(TargetError::NoMatch(_)))) => (
            json!({"error": 1, "name": "Func Client Exception", "message": e.to_string(), "info": {}}),
            1,
        ),
        Err(e) => (
            json!({"error": format!("func-transmit: {e}"), "kind": e.kind()}),
            e.exit_code(),
        ),
    }
}

/// The engine's request for `request`, with its plan; the answer in Func's
/// shapes: names for `list_minions`, `[code, results]` for `job_status`, the
/// bare id of a job, `{host: result}`.
fn answer(root: Root, request: &Request) -> Result<(J, i32), PlanError> {
    let (plan, asked) = match request {
        Request::ListMinions { spec, filter } => {
            let mut plan = Plan::for_program(root, spec, None, None)?;
            plan.filter = filter.clone();
            (plan, engine::Request::ListMinions)
        }
        Request::JobStatus { id } => {
            let plan = Plan::for_program(root, "", None, None)?;
            // `last`: the newest job of the invoking user, as for func.
            let id = overlord::jobs::resolve_id(&plan.store(), id, false)?;
            (
                plan,
                engine::Request::JobStatus {
                    id,
                    look: engine::Look::Asked,
                },
            )
        }
        Request::Call(call, mapfile) => {
            let mut plan = Plan::for_program(root, &call.spec, call.forks, call.timeout)?;
            plan.filter = call.filter.as_deref().cloned();
            if call.delegate || mapfile.is_some() {
                plan.delegate_with(mapfile.as_deref().map(std::path::Path::new))?;
            }
            (plan, engine::Request::Call(call.clone()))
        }
    };
    let answer = engine::serve(&plan, None, asked, &mut engine::Unwatched)?;
    let code = answer.exit_code();
    Ok(match answer {
        Answer::Minions { targets, .. } => (
            json!(targets.into_iter().map(|t| t.name).collect::<Vec<_>>()),
            code,
        ),
        Answer::Status { status, .. } => {
            let results: serde_json::Map<String, J> = status
                .results
                .iter()
                .map(|(h, v)| (h.clone(), overlord::values::to_json(v)))
                .collect();
            (json!([status.code, results]), code)
        }
        Answer::Started { id, .. } => (J::String(id), code),
        other => (other.document(), code),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(text: &str) -> Result<Request, Bad> {
        check(&decode(text, false).unwrap())
    }

    #[test]
    fn deep_yaml_is_refused_before_it_is_parsed() {
        let ok = "clients: '*'\nmodule: test\nmethod: add\nparameters:\n- [1, {a: [2]}]\n- - 3\n  - 4\n";
        assert!(yaml_nesting(ok) < 10, "{}", yaml_nesting(ok));
        assert!(decode(ok, true).is_ok());
        let flow = "{a: ".repeat(50_000) + &"}".repeat(50_000);
        let dashes = "- ".repeat(500) + "x";
        let ladder: String = (0..500).map(|i| format!("{}a:\n", " ".repeat(i))).collect();
        for deep in [flow, dashes, ladder] {
            assert!(yaml_nesting(&deep) > MAX_YAML_NESTING);
            let Err(Bad { why, .. }) = decode(&deep, true) else {
                panic!("accepted")
            };
            assert!(why.contains("nests deeper"), "{why}");
        }
        // A quote cannot hide an opening bracket from the count.
        assert!(yaml_nesting(&format!("a: '{}'", "[".repeat(200))) > MAX_YAML_NESTING);
    }

    #[test]
    fn funcs_request_shapes() {
        assert_eq!(
            req(r#"{"method": "list_minions"}"#).unwrap(),
            Request::ListMinions {
                spec: "*".into(),
                filter: None
            }
        );
        assert_eq!(
            req(r#"{"method": "list_minions", "clients": ["a", "@g"]}"#).unwrap(),
            Request::ListMinions {
                spec: "a;@g".into(),
                filter: None
            }
        );
        assert_eq!(
            req(r#"{"method": "job_status", "parameters": "x-1.5", "clients": "*"}"#).unwrap(),
            Request::JobStatus { id: "x-1.5".into() }
        );
        let Request::Call(call, _) =
            req(r#"{"clients": "m1;*", "module": "command", "method": "run", "parameters": "/bin/echo hi"}"#)
                .unwrap()
        else {
            panic!()
        };
        assert_eq!(
            (call.args, call.spec.as_str()),
            (overlord::gate::Args::Typed(vec![json!("/bin/echo hi")]), "m1;*"),
            "a single value is listified"
        );
        let yaml = check(
            &decode(
                "clients: '*'\nmodule: test\nmethod: add\nparameters: [1, 2]\nasync: true\nnforks: 4\n",
                true,
            )
            .unwrap(),
        )
        .unwrap();
        assert_eq!(
            yaml,
            Request::Call(
                overlord::gate::Call {
                    spec: "*".into(),
                    exclude: None,
                    module: "test".into(),
                    method: "add".into(),
                    args: overlord::gate::Args::Typed(vec![json!(1), json!(2)]),
                    run: overlord::gate::Run::Async,
                    forks: Some(4),
                    timeout: None,
                    filter: None,
                    delegate: false,
                },
                None
            )
        );
    }

    #[test]
    fn bad_requests_say_why() {
        for (text, why) in [
            (r#"[1]"#, "mapping"),
            (r#"{"clients": "*"}"#, "needs \"method\""),
            (r#"{"method": "add"}"#, "needs \"module\""),
            (r#"{"method": "job_status"}"#, "job id"),
            (
                r#"{"method": "ping", "module": "test", "aysnc": true}"#,
                "did you mean \"async\"?",
            ),
            (
                r#"{"method": "ping", "module": "test", "clients": []}"#,
                "clients",
            ),
            (
                r#"{"method": "ping", "module": "test", "nforks": 0}"#,
                "forks takes a whole number",
            ),
            (
                r#"{"method": "pi ng", "module": "test"}"#,
                "module and method are names",
            ),
            (
                r#"{"method": "ping", "module": "test", "timeout": 1e308}"#,
                "30 days",
            ),
        ] {
            let Err(Bad { why: e, .. }) = req(text) else {
                panic!("{text} accepted")
            };
            assert!(e.contains(why), "{text}: {e}");
        }
    }
}
