//! The call request: `SPEC call MODULE METHOD ARGS`, now, as an async job
//! or as a batch. Every door fills in the same [`CallFields`] — func-api's
//! `POST /api/v1/calls` body is exactly its JSON shape (unknown keys
//! refused); `func SPEC call`, `func transmit` and `func-transmit` map
//! their own words and keys onto it — and [`Call::new`] is the only place a
//! call is validated, so the same call gets the same decision and the same
//! message through every door.

use serde::{Deserialize, Deserializer};
use serde_json::Value as J;

use super::error::GateError;
use crate::settings::seconds;

/// Longest SPEC (and `exclude`) accepted.
pub const MAX_SPEC: usize = 4096;
/// Longest module or method name accepted.
pub const MAX_NAME: usize = 200;
/// Most forks (`--forks`, `nforks`).
pub const MAX_FORKS: usize = 1024;
/// Deepest nesting of lists and structs in an argument: well inside what
/// an XML-RPC call may nest on the wire (each level is three elements) and
/// what a minion accepts, so a call too deep is refused here, the same way
/// through every door and in every mode, never sent to fail on a host.
pub const MAX_ARG_DEPTH: usize = 32;

/// A call as a door hands it in, not yet checked. Numbers that a person
/// types (`timeout`, `batch`, `batch_wait`) are taken as a JSON number or
/// as text, and read here, so `-t 5`, `"timeout": 5` and `"timeout": "5"`
/// are one value and a bad one gets one message.
#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = Call)]
pub struct CallFields {
    /// Func's SPEC: globs separated by `;`, `@group`.
    pub spec: String,
    /// Hosts left out (a SPEC too).
    #[serde(default)]
    pub exclude: Option<String>,
    pub module: String,
    pub method: String,
    /// Typed arguments (JSON values), as func-api, `func transmit`,
    /// `func-transmit` and `--json-args` send them.
    #[serde(default)]
    #[schema(value_type = Vec<serde_json::Value>)]
    pub args: Vec<J>,
    /// The command line's arguments, sent as strings as Func sends them
    /// (`func SPEC call M m a b`); not part of the JSON shape.
    #[serde(skip)]
    pub words: Option<Vec<String>>,
    #[serde(default, rename = "async")]
    pub asynchronous: bool,
    /// Hosts at a time: `N` or `"P%"`.
    #[serde(default, deserialize_with = "text_or_number")]
    #[schema(schema_with = number_or_text)]
    pub batch: Option<String>,
    /// Seconds between a host's end and the next start (with `batch`).
    #[serde(default, deserialize_with = "text_or_number")]
    #[schema(schema_with = number_or_text)]
    pub batch_wait: Option<String>,
    #[serde(default)]
    pub failhard: bool,
    /// Seconds each host has (`-t`).
    #[serde(default, deserialize_with = "text_or_number")]
    #[schema(schema_with = number_or_text)]
    pub timeout: Option<String>,
    /// Worker processes (`--forks`, Func's `nforks`); not part of func-api's shape.
    #[serde(skip)]
    pub forks: Option<String>,
    /// Targeting by facts: every term holds (`os=Debian,num_cpus>=2`).
    #[serde(default)]
    pub filter: Option<String>,
    /// Targeting by facts: at least one term holds.
    #[serde(default)]
    pub filteror: Option<String>,
    /// Salt's grain target `KEY:GLOB`.
    #[serde(default)]
    pub grain: Option<String>,
    /// Func's serialized fact query (`["AND", [["os", "Debian"]]]`), as
    /// Func's overlord built it; ANDed with the other filters.
    #[serde(default)]
    #[schema(value_type = Option<Vec<serde_json::Value>>)]
    pub fact_query: Option<J>,
    /// Hosts the delegation map puts behind a relay are called through
    /// it (Func's `--delegate`, DESIGN §17).
    #[serde(default)]
    pub delegate: bool,
}

/// A checked call.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub spec: String,
    pub exclude: Option<String>,
    pub module: String,
    pub method: String,
    pub args: Args,
    pub run: Run,
    /// Seconds each host has, when the caller chose (else overlord.conf's).
    pub timeout: Option<f64>,
    pub forks: Option<usize>,
    /// Targeting by facts (boxed: most calls have none).
    pub filter: Option<Box<super::filter::Filter>>,
    /// Through relays where the map says (DESIGN §17).
    pub delegate: bool,
}

/// A call's arguments.
#[derive(Debug, Clone, PartialEq)]
pub enum Args {
    /// Strings, as Func's command line sends them (the minion coerces).
    Words(Vec<String>),
    /// Typed values.
    Typed(Vec<J>),
}

/// When and how the call runs.
#[derive(Debug, Clone, PartialEq)]
pub enum Run {
    /// Now; the answer is every host's result.
    Now,
    /// As an async job; the answer is its id.
    Async,
    /// In a sliding window of `size` hosts (DESIGN §7), driven by the
    /// caller, or with `detached` by a driver of its own (the answer is
    /// the job id).
    Batch {
        size: String,
        wait: f64,
        failhard: bool,
        detached: bool,
    },
}

impl Call {
    /// The one validation of a call.
    pub fn new(f: CallFields) -> Result<Call, GateError> {
        let bad = |why: String| Err(GateError::Invalid(why));
        check_spec("spec", &f.spec)?;
        if let Some(ex) = &f.exclude {
            check_spec("exclude", ex)?;
        }
        check_function(&f.module, &f.method, &f.args)?;
        let secs = |what: &str, v: &Option<String>, zero: bool| -> Result<Option<f64>, GateError> {
            v.as_deref()
                .map(|t| seconds(t, zero).map_err(|why| GateError::Invalid(format!("{what} {why}"))))
                .transpose()
        };
        let timeout = secs("timeout", &f.timeout, false)?;
        let batch_wait = secs("batch_wait", &f.batch_wait, true)?;
        let forks = f.forks.as_deref().map(forks).transpose()?;
        let run = match &f.batch {
            Some(size) => {
                crate::batch::machine::size(size, 1).map_err(GateError::Invalid)?;
                Run::Batch {
                    size: size.trim().to_string(),
                    wait: batch_wait.unwrap_or(0.0),
                    failhard: f.failhard,
                    detached: f.asynchronous,
                }
            }
            None if f.failhard || batch_wait.is_some() => {
                return bad("failhard and batch_wait need batch".into());
            }
            None if f.asynchronous => Run::Async,
            None => Run::Now,
        };
        let args = match f.words {
            Some(words) if f.args.is_empty() => Args::Words(words),
            Some(_) => return bad("the arguments are given twice (as words and as typed values)".into()),
            None => Args::Typed(f.args),
        };
        let filter = super::filter::Filter::parse(
            f.filter.as_deref(),
            f.filteror.as_deref(),
            f.grain.as_deref(),
            f.fact_query.as_ref(),
        )?;
        Ok(Call {
            spec: f.spec,
            exclude: f.exclude,
            module: f.module,
            method: f.method,
            args,
            run,
            timeout,
            forks,
            filter: filter.map(Box::new),
            delegate: f.delegate,
        })
    }

    /// `module.method`, the name called on the minions.
    pub fn function(&self) -> String {
        format!("{}.{}", self.module, self.method)
    }

    /// The arguments as the job store keeps them: the words, or the typed
    /// values as JSON text.
    pub fn stored_args(&self) -> (Vec<String>, Option<String>) {
        match &self.args {
            Args::Words(w) => (w.clone(), None),
            Args::Typed(v) => (Vec::new(), Some(J::Array(v.clone()).to_string())),
        }
    }

    /// The arguments as XML-RPC values.
    pub fn params(&self) -> Vec<common::Value> {
        match &self.args {
            Args::Words(w) => w.iter().map(|a| common::Value::String(a.clone())).collect(),
            Args::Typed(v) => v.iter().map(crate::values::from_json).collect(),
        }
    }
}

/// Worker processes: a whole number from 1 to [`MAX_FORKS`].
pub fn forks(n: &str) -> Result<usize, GateError> {
    n.trim()
        .parse::<usize>()
        .ok()
        .filter(|n| (1..=MAX_FORKS).contains(n))
        .ok_or_else(|| {
            GateError::Invalid(format!(
                "forks takes a whole number from 1 to {MAX_FORKS}, not {:?}",
                common::paths::shorten(n)
            ))
        })
}

/// What every call is checked for, whoever made it (a door's request, a
/// relay's signed one): `module` and `method` are names, the module is not
/// the minion's own `async`, and no argument nests deeper than
/// [`MAX_ARG_DEPTH`] or carries a tag whose text is not its type.
pub fn check_function(module: &str, method: &str, args: &[J]) -> Result<(), GateError> {
    let bad = |why: String| Err(GateError::Invalid(why));
    if !is_name(module) || !is_name(method) {
        return bad(format!(
            "module and method are names of 1 to {MAX_NAME} letters, digits, '_' and '.'"
        ));
    }
    // `async.M.m` is the minion's own way to start a job, outside the
    // overlord's store and the caller's rights on `M.m`: never a module.
    if module == "async" || module.starts_with("async.") {
        return bad(
            "module \"async\" is the minion's own: to run a call as a job, use async (--async)".into(),
        );
    }
    if args.iter().any(|a| depth(a) > MAX_ARG_DEPTH) {
        return bad(format!(
            "an argument nests lists or structs deeper than {MAX_ARG_DEPTH} levels"
        ));
    }
    if let Some(why) = args.iter().find_map(bad_tag) {
        return bad(format!("args: {why}"));
    }
    Ok(())
}

/// [`check_function`] on `module.method` (the module is everything before
/// the last dot) and its arguments as a JSON list.
pub fn check_call(function: &str, params: &J) -> Result<(), GateError> {
    let Some((module, method)) = function.rsplit_once('.') else {
        return Err(GateError::Invalid(format!(
            "{:?} is not module.method",
            common::paths::shorten(function)
        )));
    };
    let J::Array(args) = params else {
        return Err(GateError::Invalid("the arguments are not a list".into()));
    };
    check_function(module, method, args)
}

/// The first tagged base64 or dateTime in `v` whose text is not one.
fn bad_tag(v: &J) -> Option<String> {
    match v {
        J::Array(items) => items.iter().find_map(bad_tag),
        J::Object(map) => match crate::values::tagged(map) {
            Some(Err(why)) => Some(why),
            Some(Ok(_)) => None,
            None => map.values().find_map(bad_tag),
        },
        _ => None,
    }
}

/// How deep `v` nests lists and structs (a scalar is 0).
fn depth(v: &J) -> usize {
    match v {
        J::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        J::Object(map) => 1 + map.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

/// A SPEC's form: not empty, not huge, printable.
pub fn check_spec(what: &str, spec: &str) -> Result<(), GateError> {
    if spec.trim().is_empty() || spec.len() > MAX_SPEC || spec.chars().any(char::is_control) {
        return Err(GateError::Invalid(format!(
            "{what} must be 1 to {MAX_SPEC} printable characters"
        )));
    }
    Ok(())
}

/// A module or method name: dot-separated parts of letters, digits and '_'.
fn is_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= MAX_NAME
        && s.split('.')
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
}

/// The schema of a field read by [`text_or_number`].
fn number_or_text() -> utoipa::openapi::schema::Schema {
    use utoipa::openapi::schema::{ObjectBuilder, OneOfBuilder, Type};
    OneOfBuilder::new()
        .item(ObjectBuilder::new().schema_type(Type::Number))
        .item(ObjectBuilder::new().schema_type(Type::String))
        .item(ObjectBuilder::new().schema_type(Type::Null))
        .description(Some("a number, or the same as text"))
        .into()
}

/// A number or a text, as text (`5`, `"5"`, `"5%"`); null is none.
fn text_or_number<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    match Option::<J>::deserialize(d)? {
        None | Some(J::Null) => Ok(None),
        Some(J::String(s)) => Ok(Some(s)),
        Some(J::Number(n)) => Ok(Some(n.to_string())),
        Some(_) => Err(serde::de::Error::custom("expected a number or a text")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(json: &str) -> CallFields {
        serde_json::from_str(json).unwrap()
    }

    fn refused(json: &str) -> String {
        match Call::new(fields(json)) {
            Err(GateError::Invalid(why)) => why,
            other => panic!("{json}: {other:?}"),
        }
    }

    #[test]
    fn a_valid_call_in_each_mode() {
        let c = Call::new(fields(
            r#"{"spec": "web*", "module": "test", "method": "add", "args": [1, 2]}"#,
        ))
        .unwrap();
        assert_eq!(
            (c.function(), c.run.clone(), c.params().len()),
            ("test.add".into(), Run::Now, 2)
        );
        let c = Call::new(fields(
            r#"{"spec": "*", "module": "test", "method": "ping", "async": true}"#,
        ))
        .unwrap();
        assert_eq!(c.run, Run::Async);
        let c = Call::new(fields(
            r#"{"spec": "*", "module": "test", "method": "ping", "batch": "50%", "batch_wait": 1, "failhard": true, "timeout": "5"}"#,
        ))
        .unwrap();
        assert_eq!(
            (c.run, c.timeout),
            (
                Run::Batch {
                    size: "50%".into(),
                    wait: 1.0,
                    failhard: true,
                    detached: false
                },
                Some(5.0)
            )
        );
        let mut f = fields(r#"{"spec": "*", "module": "command", "method": "run"}"#);
        f.words = Some(vec!["uname -a".into()]);
        assert_eq!(
            Call::new(f).unwrap().stored_args(),
            (vec!["uname -a".to_string()], None)
        );
    }

    #[test]
    fn every_kind_of_bad_call_says_why() {
        for (json, why) in [
            (
                r#"{"spec": " ", "module": "test", "method": "ping"}"#,
                "spec must be",
            ),
            (
                r#"{"spec": "*", "exclude": "a\u0007", "module": "test", "method": "ping"}"#,
                "exclude must be",
            ),
            (
                r#"{"spec": "*", "module": "test", "method": "pi ng"}"#,
                "module and method are names",
            ),
            (
                r#"{"spec": "*", "module": "", "method": "ping"}"#,
                "module and method are names",
            ),
            (
                r#"{"spec": "*", "module": "async", "method": "ping"}"#,
                "module \"async\"",
            ),
            (
                r#"{"spec": "*", "module": "async.command", "method": "run"}"#,
                "module \"async\"",
            ),
            (
                r#"{"spec": "*", "module": "test", "method": "echo", "args": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}"#,
                "deeper than 32",
            ),
            (
                r#"{"spec": "*", "module": "test", "method": "ping", "failhard": true}"#,
                "failhard and batch_wait need batch",
            ),
            (
                r#"{"spec": "*", "module": "test", "method": "ping", "batch_wait": 1}"#,
                "need batch",
            ),
            (
                r#"{"spec": "*", "module": "test", "method": "ping", "batch": 0}"#,
                "at least 1",
            ),
            (
                r#"{"spec": "*", "module": "test", "method": "ping", "batch": "x"}"#,
                "a number N or a percentage",
            ),
            (
                r#"{"spec": "*", "module": "test", "method": "ping", "batch": "-5%"}"#,
                "positive",
            ),
            (
                r#"{"spec": "*", "module": "test", "method": "ping", "timeout": 0}"#,
                "timeout takes seconds",
            ),
            (
                r#"{"spec": "*", "module": "test", "method": "ping", "timeout": 1e308}"#,
                "30 days",
            ),
            (
                r#"{"spec": "*", "module": "test", "method": "ping", "batch": 2, "batch_wait": -1}"#,
                "batch_wait takes seconds",
            ),
        ] {
            let e = refused(json);
            assert!(e.contains(why), "{json}: {e}");
        }
        assert!(serde_json::from_str::<CallFields>(
            r#"{"spec": "*", "module": "t", "method": "p", "exlude": "x"}"#
        )
        .is_err());
        let mut f = fields(r#"{"spec": "*", "module": "test", "method": "ping"}"#);
        f.forks = Some("0".into());
        assert!(matches!(Call::new(f), Err(GateError::Invalid(w)) if w.contains("forks")));
    }
}
