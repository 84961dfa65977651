//! Showing what the engine answers, for people and for `--out`: host
//! results as they come ([`report`]), documents and tables ([`output`]),
//! a job's status ([`show_status`]) and a call's results as they end
//! ([`call_and_show`]). Only the command-line doors show; the engine
//! knows no terminal (DESIGN §13).

pub mod output;
pub mod report;

use std::collections::BTreeMap;

use common::Value;
use overlord::engine::{Answer, Request, Watch};
use overlord::job::Action;
use overlord::jobs::{self, Status};
use overlord::plan::{Plan, PlanError};
use overlord::status::code_name;

/// Calls `action` on the plan's targets through the engine and shows each
/// host the moment it ends (blocks rendered by `render`, a progress line
/// naming the hosts awaited, a summary on stderr); `--json` prints one
/// document at the end. `transform` may reshape a result before it is
/// shown. Returns the exit status.
pub fn call_and_show(
    plan: &Plan,
    method: &str,
    action: Action,
    render: report::Render,
    transform: &dyn Fn(Value) -> Value,
) -> Result<i32, PlanError> {
    let mut shown = Shown::new(plan, render);
    shown.transform = Some(transform);
    let request = Request::Run {
        function: method.to_string(),
        action,
    };
    let answer = overlord::engine::serve(plan, None, request, &mut shown)?;
    // A host awaited that never reported is a failure too.
    let all_shown_ok = shown.finish();
    if let (Answer::Results { results, .. }, true) = (&answer, plan.json) {
        let results: BTreeMap<String, Value> = results
            .iter()
            .map(|(h, v)| (h.clone(), transform(v.clone())))
            .collect();
        overlord::outln!("{}", output::results_as(plan.out, &results));
    }
    Ok(answer.exit_code().max(i32::from(!all_shown_ok)))
}

/// Prints the status with `--json` as one shape in every state:
/// `{"job_id", "status" (Func's code), "state" (its name), "function",
/// "results": {host: result} (finished hosts; {} when none or unknown),
/// "waiting": {host: why}}` (`--out xmlrpc`: Func's `[code, {host:
/// result}]`); else a status line and one block per host.
pub fn show_status(plan: &Plan, id: &str, status: &Status) {
    if plan.json {
        let doc = status.doc(id);
        // `--out txt`: the finished hosts' results as `host: value` lines.
        match plan.out {
            output::Format::Txt => {
                overlord::outln!("{}", output::results_as(plan.out, &status.results))
            }
            // Func's own answer, typed: [code, {host: result}].
            output::Format::Xmlrpc => overlord::outln!(
                "{}",
                output::xmlrpc(common::Value::Array(vec![
                    common::Value::Integer(status.code),
                    common::Value::Struct(status.results.clone().into_iter().collect()),
                ]))
            ),
            _ => output::print_doc(plan.out, &doc),
        }
        return;
    }
    if status.code == jobs::LOST_IN_SPACE {
        overlord::outln!(
            "JOB_STATUS: {} (2): no job {} here (unknown, or expired)",
            code_name(2),
            common::paths::shorten(id)
        );
        return;
    }
    let total = status.results.len() + status.waiting.len();
    let finished = status.results.len();
    match status.code {
        jobs::FINISHED => overlord::outln!("JOB_STATUS: finished (1): {finished} of {total} hosts finished"),
        // Func's codes 0 and 3 both mean the job is still running.
        code => overlord::outln!(
            "JOB_STATUS: running ({code}{}): {finished} of {total} hosts finished, {} not yet",
            if code == jobs::PARTIAL {
                ", partial"
            } else {
                ", nothing dispatched yet"
            },
            status.waiting.len()
        ),
    }
    overlord::out!("{}", output::human(status.method(), &status.results));
    for (host, why) in &status.waiting {
        overlord::outln!("{host}:\n    ({})", output::shown_line(why));
    }
}

/// The engine's [`Watch`] for people: each host's block the moment it
/// ends, a progress line on a terminal, the summary when [`Shown::finish`]
/// is called; a followed job's hosts as they finish (`tick` runs on every
/// poll).
pub struct Shown<'a> {
    plan: &'a Plan,
    render: report::Render,
    report: Option<report::Report<'a>>,
    /// Reshapes a result before it is shown (`show hardware KEYS`).
    transform: Option<&'a dyn Fn(Value) -> Value>,
}

impl<'a> Shown<'a> {
    pub fn new(plan: &'a Plan, render: report::Render) -> Self {
        Self {
            plan,
            render,
            report: None,
            transform: None,
        }
    }

    /// The summary (stderr); whether every host shown succeeded.
    pub fn finish(&mut self) -> bool {
        self.report.as_mut().is_none_or(|r| r.finish())
    }
}

impl Watch for Shown<'_> {
    fn begin(&mut self, function: &str, hosts: &[String]) {
        self.report = Some(report::Report::new(
            self.plan,
            function,
            hosts.iter().cloned(),
            self.render,
        ));
    }

    fn host(&mut self, host: &str, value: &Value) {
        if let Some(r) = self.report.as_mut() {
            match self.transform {
                Some(f) => r.host(host, &f(value.clone())),
                None => r.host(host, value),
            }
        }
    }

    fn status(&mut self, status: &Status) {
        let (plan, render) = (self.plan, self.render);
        let report = self.report.get_or_insert_with(|| {
            let hosts = status.results.keys().chain(status.waiting.keys()).cloned();
            report::Report::new(plan, status.method(), hosts, render)
        });
        for (host, value) in &status.results {
            report.host(host, value);
        }
    }

    fn batch(&mut self, id: &str, size: usize, targets: &[overlord::targets::Target]) {
        // Recorded now: Ctrl-C stops dispatching (the hosts running go on).
        overlord::interrupt::catch();
        self.plan.detail(targets);
        self.plan.say(&format!(
            "JOB_ID: {} (batch of {size} over {} hosts)",
            overlord::interrupt::shell_quote(id),
            targets.len()
        ));
    }
}
