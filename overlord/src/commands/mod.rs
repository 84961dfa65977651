//! `func` subcommands, one file each. [`Command::parse`] validates a
//! subcommand's own options; [`run`] carries out a plan and returns the exit
//! status.

pub mod batch;
pub mod call;
pub mod copyfile;
pub mod grep;
pub mod group;
pub mod job_status;
pub mod jobs;
pub mod list_minions;
pub mod ping;
pub mod show;

use std::collections::BTreeMap;
use std::io::IsTerminal;

use common::Value;

use crate::dispatch;
use crate::job::Action;
use crate::plan::{Globals, Plan, PlanError};

/// A parsed subcommand.
#[derive(Debug)]
pub enum Command {
    Batch(batch::Batch),
    Call(call::Call),
    CopyFile(copyfile::CopyFile),
    Grep(grep::Grep),
    Group(group::Group),
    JobStatus(job_status::JobStatus),
    Jobs(jobs::Jobs),
    ListMinions,
    Ping,
    Show(show::Show),
}

impl Command {
    pub fn parse(name: &str, rest: &[String], globals: &mut Globals) -> Result<Self, PlanError> {
        Ok(match name {
            "call" => Command::Call(call::Call::parse(rest, globals)?),
            "ping" => no_args(name, rest, globals).map(|_| Command::Ping)?,
            "list_minions" => no_args(name, rest, globals).map(|_| Command::ListMinions)?,
            "copyfile" => Command::CopyFile(copyfile::CopyFile::parse(rest)?),
            "grep" => Command::Grep(grep::Grep::parse(rest, globals)?),
            "show" => Command::Show(show::Show::parse(rest, globals)?),
            "group" => Command::Group(group::Group::parse(rest)?),
            "job_status" => Command::JobStatus(job_status::JobStatus::parse(rest, globals)?),
            "jobs" => Command::Jobs(jobs::Jobs::parse(rest, globals)?),
            "batch" => Command::Batch(batch::Batch::parse(rest, globals)?),
            other => {
                return Err(PlanError::Usage(format!(
                    "Unknown command '{other}'.\n{}",
                    crate::plan::USAGE
                )))
            }
        })
    }
}

/// The words of `rest`, after taking out `--json` (sets the global) and
/// Func's `-v/--verbose` (no effect).
fn words(rest: &[String], globals: &mut Globals) -> Vec<String> {
    let mut words = Vec::new();
    for arg in rest {
        match arg.as_str() {
            "--json" | "-j" => globals.json = true,
            "-v" | "--verbose" => {}
            _ => words.push(arg.clone()),
        }
    }
    words
}

/// A subcommand that takes no argument besides `--json` and `-v`.
fn no_args(name: &str, rest: &[String], globals: &mut Globals) -> Result<(), PlanError> {
    match words(rest, globals).first() {
        None => Ok(()),
        Some(other) => Err(PlanError::Usage(format!("{name} takes no argument {other:?}"))),
    }
}

/// Carries out `plan`; returns the exit status.
pub fn run(plan: &Plan) -> Result<i32, PlanError> {
    match &plan.command {
        Command::Batch(c) => c.run(plan),
        Command::Call(c) => c.run(plan),
        Command::CopyFile(c) => c.run(plan),
        Command::Grep(c) => c.run(plan),
        Command::Group(c) => c.run(plan),
        Command::JobStatus(c) => c.run(plan),
        Command::Jobs(c) => c.run(plan),
        Command::ListMinions => list_minions::run(plan),
        Command::Ping => ping::run(plan),
        Command::Show(c) => c.run(plan),
    }
}

/// Dispatches `action` to the plan's targets, with progress on stderr when
/// it is a terminal and there are many hosts.
pub fn dispatch_to_targets(plan: &Plan, action: &Action) -> Result<BTreeMap<String, Value>, PlanError> {
    dispatch_to(plan, &plan.targets()?, action)
}

/// Dispatches `action` to `targets` (see [`dispatch_to_targets`]).
pub fn dispatch_to(
    plan: &Plan,
    targets: &[crate::targets::Target],
    action: &Action,
) -> Result<BTreeMap<String, Value>, PlanError> {
    plan.check_credentials()?;
    let exe = std::env::current_exe()
        .map_err(|e| PlanError::Config(format!("cannot find the func executable: {e}")))?;
    let total = targets.len();
    let progress = std::io::stderr().is_terminal() && total >= 10;
    let mut done = 0usize;
    let results = dispatch::run(
        &exe,
        &plan.credentials(),
        targets,
        action,
        &plan.dispatch,
        |_, _| {
            done += 1;
            if progress {
                eprint!("\r{done}/{total} hosts done");
            }
        },
    )
    .map_err(|e| PlanError::Config(format!("cannot start workers: {e}")))?;
    if progress {
        eprintln!();
    }
    Ok(results)
}

/// Prints results of `method` (human or JSON) and returns the exit status.
pub fn print_results(plan: &Plan, method: &str, results: &BTreeMap<String, Value>) -> i32 {
    if plan.json {
        crate::outln!("{}", crate::output::json(results));
    } else {
        crate::out!("{}", crate::output::human(method, results));
    }
    if crate::output::all_ok(method, results) {
        0
    } else {
        1
    }
}

/// A call action for `method` with `params`.
pub fn call_action(method: &str, params: Vec<Value>) -> Result<Action, PlanError> {
    let call_xml = common::xmlrpc::encode_call(method, params, common::xmlrpc::DEFAULT_MAX_DEPTH)
        .map_err(|e| PlanError::Usage(format!("cannot encode the call: {e}")))?;
    Ok(Action::Call { call_xml })
}
