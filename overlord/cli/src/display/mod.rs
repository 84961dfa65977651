//! Showing what the engine answers, for people and for `--out`: host
//! results as they come ([`report`]), documents and tables ([`output`]),
//! a job's status ([`show_status`]) and a call's results as they end
//! ([`call_and_show`]). Only the command-line doors show; the engine
//! knows no terminal (DESIGN §13).

pub mod output;
pub mod report;

use std::collections::BTreeMap;

use common::Value;
use overlord::calling::dispatch_to;
use overlord::job::Action;
use overlord::jobs::{self, Status};
use overlord::plan::{Plan, PlanError};
use overlord::status::code_name;

/// Calls `action` on the plan's targets and shows each host the moment
/// it ends (`report.rs`: blocks rendered by `render`, a progress line naming
/// the hosts awaited, a summary on stderr); `--json` prints one document at
/// the end. `transform` may reshape a result before it is shown. Returns
/// the exit status.
pub fn call_and_show(
    plan: &Plan,
    method: &str,
    action: &Action,
    render: report::Render,
    transform: &dyn Fn(Value) -> Value,
) -> Result<i32, PlanError> {
    let targets = plan.targets()?;
    // Hosts that could not judge a filter end now, failed, with why.
    let unjudged = plan.unjudged();
    let names = targets
        .iter()
        .map(|t| t.name.clone())
        .chain(unjudged.keys().cloned());
    let mut report = report::Report::new(plan, method, names, render);
    let mut shown = BTreeMap::new();
    for (host, error) in unjudged {
        report.host(&host, &error);
        shown.insert(host, error);
    }
    dispatch_to(plan, &targets, action, |host, value| {
        let value = transform(value.clone());
        report.host(host, &value);
        shown.insert(host.to_string(), value);
    })?;
    if plan.json {
        overlord::outln!("{}", output::results_as(plan.out, &shown));
    }
    Ok(i32::from(!report.finish()))
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
