//! `func` subcommands, one file each. [`Command::from_spec`] and
//! [`Command::from_top`] turn what clap parsed (`cli.rs`) into a validated
//! command; [`run`] carries out a plan and returns the exit status.

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

use common::Value;

use crate::dispatch;
use crate::job::Action;
use crate::cli::{SpecCommand, TopCommand};
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
    /// A command that follows a SPEC.
    pub fn from_spec(c: SpecCommand, globals: &mut Globals) -> Result<Self, PlanError> {
        Ok(match c {
            SpecCommand::Call(args) => Command::Call(call::Call::from_args(args, globals)?),
            SpecCommand::Ping => Command::Ping,
            SpecCommand::ListMinions => Command::ListMinions,
            SpecCommand::Copyfile(args) => Command::CopyFile(copyfile::CopyFile {
                local: args.file,
                remote: args.remotepath,
            }),
            SpecCommand::Grep { word } => Command::Grep(grep::Grep::new(word)?),
            SpecCommand::Show { keys, .. } => Command::Show(show::Show { keys }),
            SpecCommand::Group(args) => Command::Group(group::Group::from_args(args)?),
        })
    }

    /// A command that takes no SPEC.
    pub fn from_top(c: TopCommand) -> Result<Self, PlanError> {
        Ok(match c {
            TopCommand::JobStatus(a) => Command::JobStatus(job_status::JobStatus { id: a.id, wait: a.wait }),
            TopCommand::Jobs { command } => Command::Jobs(jobs::Jobs::from_cli(command)?),
            TopCommand::Batch { command } => Command::Batch(batch::Batch::from(command)),
            TopCommand::Spec(_) => return Err(PlanError::Usage("missing command after SPEC".into())),
        })
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
    plan.detail(targets);
    let progress = plan.progress() && total >= 10;
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
