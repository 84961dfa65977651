//! `func SPEC call [OPTIONS] MODULE METHOD [ARGS...]`: run one method on
//! every target. Options may stand before or after MODULE METHOD; `--`
//! ends them. Arguments go over the wire as strings, as Func sends them;
//! the minion's modules coerce them.
//!
//! `--async` (or a method listed in `etc/func/async_methods.conf`
//! `force_async`, as in Func) reserves a job id, starts a detached driver
//! and then polls, printing each host as it finishes; with `--nopoll` it
//! prints `JOB_ID: <id>` and returns at once. `--jobstatus JOB_ID` is an
//! alias of `func job_status JOB_ID`.

use crate::globals::{split_flag, Globals};
use overlord::engine::{self, Answer, Request};
use overlord::gate::{self, CallFields, Run};
use overlord::jobs;
use overlord::plan::{Plan, PlanError};

/// `call` parsed: a call through the gate, or Func's `--jobstatus` alias.
#[derive(Debug)]
pub enum Call {
    Run {
        call: gate::Call,
        /// `--nopoll`: print the job id and return.
        nopoll: bool,
    },
    /// `--jobstatus JOB_ID`.
    JobStatus { id: String },
}

/// The options `call` knows (its own and the global ones), for suggestions.
const CALL_OPTIONS: &[&str] = &[
    "--async",
    "--nopoll",
    "--jobstatus",
    "--batch",
    "--batch-wait",
    "--failhard",
    "--json",
    "--json-args",
    "--out",
    "--forks",
    "--timeout",
    "--exclude",
    "--filter",
    "--filteror",
    "--grain",
    "--fact-query",
    "--verbose",
    "--quiet",
];

/// `--json-args` read (a JSON array, and no other arguments besides
/// MODULE METHOD).
fn typed(text: &str, words: usize) -> Result<Vec<serde_json::Value>, PlanError> {
    if words > 2 {
        return Err(PlanError::usage(
            "--json-args gives all the arguments: put none after MODULE METHOD".into(),
        ));
    }
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(serde_json::Value::Array(v)) => Ok(v),
        Ok(_) => Err(PlanError::usage(
            "--json-args takes a JSON array: '[\"arg\", 2, {\"k\": true}]'".into(),
        )),
        Err(e) => Err(PlanError::usage(format!("--json-args is not JSON: {e}"))),
    }
}

impl Call {
    /// `call` from what clap parsed: the options before MODULE METHOD,
    /// then the words, in which known options (call's and the global ones)
    /// still count until `--`; other dash words are arguments once MODULE
    /// METHOD are there (so `process info -auxh` works), a usage error
    /// before (with a suggestion). The call itself is checked by the gate.
    pub fn from_args(a: crate::cli::CallArgs, spec: &str, globals: &mut Globals) -> Result<Self, PlanError> {
        let Scanned {
            positional,
            asynchronous,
            nopoll,
            jobstatus,
            batch,
            batch_wait,
            failhard,
            typed_args,
            filter,
            filteror,
            grain,
            fact_query,
        } = Scanned::of(a, globals)?;
        if jobstatus {
            return match positional.as_slice() {
                [id] => Ok(Self::JobStatus { id: id.clone() }),
                _ => Err(PlanError::usage("call --jobstatus takes one JOB_ID".into())),
            };
        }
        refuse_salt_spelling(&positional)?;
        if positional.len() < 2 {
            return Err(PlanError::usage("call needs MODULE METHOD [ARGS...]".into()));
        }
        let (module, method) = (positional[0].clone(), positional[1].clone());
        if nopoll && !asynchronous && !engine::forced_async(&globals.root, &format!("{module}.{method}")) {
            return Err(PlanError::usage("--nopoll needs --async".into()));
        }
        // `call command run ls -la /`: the shell split one command line.
        if module == "command" && method == "run" && typed_args.is_none() && positional.len() > 3 {
            let line = positional[2..].join(" ");
            return Err(PlanError::usage(format!(
                "command run takes one command line: quote it, as in `call command run {}`",
                overlord::interrupt::shell_quote(&line)
            )));
        }
        let (args, words) = match typed_args {
            Some(t) => (typed(&t, positional.len())?, None),
            None => (Vec::new(), Some(positional[2..].to_vec())),
        };
        let call = gate::Call::new(CallFields {
            spec: spec.to_string(),
            exclude: globals.exclude.clone(),
            module,
            method,
            args,
            words,
            asynchronous,
            batch,
            batch_wait,
            failhard,
            timeout: globals.timeout.map(|t| t.to_string()),
            forks: globals.forks.map(|n| n.to_string()),
            filter: None,
            filteror: None,
            grain: None,
            fact_query: None,
            delegate: globals.delegate,
        })?;
        // Filters given after MODULE METHOD replace those before them.
        if filter.is_some() || filteror.is_some() || grain.is_some() || fact_query.is_some() {
            let query = gate::filter::query_text(fact_query.as_deref())?;
            globals.filter = gate::filter::Filter::parse(
                filter.as_deref(),
                filteror.as_deref(),
                grain.as_deref(),
                query.as_ref(),
            )?;
        }
        Ok(Self::Run { call, nopoll })
    }

    pub fn run(&self, plan: &Plan) -> Result<i32, PlanError> {
        let (call, nopoll) = match self {
            Call::JobStatus { id } => return crate::commands::job_status::show(plan, id, false),
            Call::Run { call, nopoll } => (call, *nopoll),
        };
        let function = call.function();
        let mut shown = crate::display::Shown::new(plan, crate::display::report::block);
        let answer = engine::serve(plan, None, Request::Call(call.clone()), &mut shown)?;
        match &answer {
            Answer::Started { id, .. } if nopoll || matches!(call.run, Run::Batch { .. }) => {
                show_job_id(plan, id);
                Ok(0)
            }
            Answer::Started { id, .. } => follow(plan, id),
            Answer::Batch {
                id,
                status,
                interrupted,
                halted,
                ..
            } => {
                shown.finish();
                let q = overlord::interrupt::shell_quote(id);
                if *interrupted {
                    overlord::errln!(
                        "\ninterrupted: batch {q} stopped dispatching; hosts already running keep running.\n  follow:  func batch status {q} --follow\n  stop:    func batch stop {q} [--kill]\n  resume:  func batch recover {q}"
                    );
                } else if plan.json {
                    crate::display::show_status(plan, id, status);
                }
                if let Some(why) = halted.as_ref().filter(|_| !*interrupted) {
                    plan.say(&format!("batch halted: {why}"));
                }
                Ok(answer.exit_code())
            }
            Answer::Results { results, .. } => {
                // A host awaited that never reported is a failure too.
                let all_shown_ok = shown.finish();
                if plan.json {
                    overlord::outln!("{}", crate::display::output::results_as(plan.out, results));
                }
                let code = answer.exit_code().max(i32::from(!all_shown_ok));
                if code != 0 && !plan.quiet {
                    if let Some(hint) = salt_module_hint(&function) {
                        overlord::errln!("{hint}");
                    }
                }
                Ok(code)
            }
            _ => Err(PlanError::Config(
                "the engine answered a call with something else".into(),
            )),
        }
    }
}

/// Follows job `id` until it finishes (or the `-t` deadline), printing
/// each host's result as it arrives; Ctrl-C leaves it running.
fn follow(plan: &Plan, id: &str) -> Result<i32, PlanError> {
    plan.say(&format!("JOB_ID: {}", overlord::interrupt::shell_quote(id)));
    overlord::interrupt::catch();
    let mut shown = crate::display::Shown::new(plan, crate::display::report::block);
    let request = Request::JobStatus {
        id: id.to_string(),
        look: overlord::engine::Look::Followed,
    };
    let answer = engine::serve(plan, None, request, &mut shown)?;
    let Answer::Status { status, .. } = &answer else {
        return Err(PlanError::Config(
            "the engine answered a status with something else".into(),
        ));
    };
    let stopped = overlord::interrupt::requested();
    // Neither finished nor unknown: the -t deadline passed.
    if !status.finished() && status.code != jobs::LOST_IN_SPACE && !plan.json && !stopped {
        for (host, why) in &status.waiting {
            overlord::outln!(
                "{host}:\n    (no result within -t: {})",
                crate::display::output::shown_line(why)
            );
        }
    }
    shown.finish();
    if stopped && !status.finished() {
        let q = overlord::interrupt::shell_quote(id);
        overlord::errln!(
            "\ninterrupted: job {q} keeps running on its hosts ({} of {} finished).\n  follow:  func job_status {q} --wait\n  stop:    func jobs kill {q}",
            status.results.len(),
            status.results.len() + status.waiting.len()
        );
        return Ok(overlord::interrupt::EXIT);
    }
    if plan.json {
        crate::display::show_status(plan, id, status);
    }
    Ok(answer.exit_code())
}

/// The id of a job that runs on: `JOB_ID: <id, shell-quoted>` to copy, or
/// `{"job_id": ID}` with `--json`.
fn show_job_id(plan: &Plan, id: &str) {
    match plan.json {
        true if plan.out == crate::display::output::Format::Json => {
            overlord::outln!("{}", serde_json::json!({ "job_id": id }))
        }
        true => crate::display::output::print_doc(plan.out, &serde_json::json!({ "job_id": id })),
        false => overlord::outln!("JOB_ID: {}", overlord::interrupt::shell_quote(id)),
    }
}

/// The words after `call`, scanned: Func took its options anywhere before
/// the method's arguments (and `--` ends them), so they are read here
/// rather than by clap; global options among them go to `globals`.
struct Scanned {
    positional: Vec<String>,
    asynchronous: bool,
    nopoll: bool,
    jobstatus: bool,
    batch: Option<String>,
    batch_wait: Option<String>,
    failhard: bool,
    typed_args: Option<String>,
    filter: Option<String>,
    filteror: Option<String>,
    grain: Option<String>,
    fact_query: Option<String>,
}

impl Scanned {
    fn of(a: crate::cli::CallArgs, globals: &mut Globals) -> Result<Self, PlanError> {
        let rest = a.words;
        let mut s = Scanned {
            positional: Vec::new(),
            asynchronous: a.asynchronous,
            nopoll: a.nopoll,
            jobstatus: a.jobstatus,
            batch: a.batch,
            batch_wait: a.batch_wait,
            failhard: a.failhard,
            typed_args: a.json_args,
            filter: None,
            filteror: None,
            grain: None,
            fact_query: None,
        };
        let mut i = 0;
        while i < rest.len() {
            let arg = &rest[i];
            if arg == "--" {
                s.positional.extend(rest[i + 1..].iter().cloned());
                break;
            }
            let (flag, inline) = split_flag(arg);
            let before_method = s.positional.len() < 2;
            let value = |i: &mut usize| crate::globals::option_value(&rest, i, &flag, inline.clone());
            match flag.as_str() {
                "--json" | "-j" => globals.json = true,
                "-v" | "--verbose" => globals.verbose += 1,
                "-q" | "--quiet" => globals.quiet = true,
                "--async" | "-a" => s.asynchronous = true,
                "--nopoll" | "-n" => s.nopoll = true,
                "--jobstatus" | "-s" => s.jobstatus = true,
                "--failhard" => s.failhard = true,
                "--forks" => globals.forks = Some(crate::globals::forks(&value(&mut i)?)?),
                "-t" | "--timeout" => {
                    globals.timeout = Some(crate::globals::positive(&flag, &value(&mut i)?)?)
                }
                "-e" | "--exclude" => globals.exclude = Some(value(&mut i)?),
                "--batch" | "-b" => s.batch = Some(value(&mut i)?),
                "--batch-wait" => s.batch_wait = Some(value(&mut i)?),
                "--json-args" => s.typed_args = Some(value(&mut i)?),
                "--filter" => s.filter = Some(value(&mut i)?),
                "--filteror" => s.filteror = Some(value(&mut i)?),
                "-G" | "--grain" => s.grain = Some(value(&mut i)?),
                "--fact-query" => s.fact_query = Some(value(&mut i)?),
                "--out" => globals.set_out(&value(&mut i)?)?,
                f if f.starts_with('-') && f.len() > 1 && before_method => {
                    return Err(PlanError::usage(format!(
                        "call: unknown option {f}{} (use -- before method arguments that start with '-')",
                        crate::cli::did_you_mean(f, CALL_OPTIONS)
                    )));
                }
                _ => s.positional.push(arg.clone()),
            }
            i += 1;
        }
        Ok(s)
    }
}

/// Salt's habit, `call test.ping` or `call command.run uptime`, refused
/// with Func's spelling (`async.M` is left to the gate, as through every
/// door).
fn refuse_salt_spelling(positional: &[String]) -> Result<(), PlanError> {
    let Some((module, method)) = positional.first().and_then(|w| w.split_once('.')) else {
        return Ok(());
    };
    if module.is_empty() || method.is_empty() || method.contains('.') || module == "async" {
        return Ok(());
    }
    let rest: String = positional[1..]
        .iter()
        .map(|a| format!(" {}", overlord::interrupt::shell_quote(a)))
        .collect();
    let (ours, name) = crate::cli::func_call_for_salt(module, method);
    Err(PlanError::usage(format!(
        "call takes MODULE and METHOD as two words: try `call {ours} {name}{rest}` (Salt's {module}.{method} is Func's {ours} {name})"
    )))
}

/// Salt's module names that Func calls otherwise: a hint after a call to
/// one of them failed (a drop-in module may carry the name, so the call is
/// made; the hint only follows a failure).
fn salt_module_hint(method: &str) -> Option<String> {
    let (module, name) = method.split_once('.')?;
    let ours = crate::cli::func_module_for_salt(module)?;
    Some(format!(
        "hint: Salt's {module}.{name} is Func's {ours}.{name}: func SPEC call {ours} {name} ..."
    ))
}
