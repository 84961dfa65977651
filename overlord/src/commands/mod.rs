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
pub mod transmit;

use std::collections::BTreeMap;

use common::Value;

use crate::cli::{SpecCommand, TopCommand};
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

    /// Replaces a job id `last` by the newest job (or batch) of this user.
    pub fn resolve_last(&mut self, store: &crate::store::Store) -> Result<(), PlanError> {
        use crate::commands::batch::Batch;
        use crate::commands::jobs::Jobs;
        let (id, batch): (&mut String, bool) = match self {
            Command::JobStatus(c) => (&mut c.id, false),
            Command::Call(c) if c.jobstatus => (&mut c.method, false),
            Command::Jobs(Jobs::Lookup(c)) => (&mut c.id, false),
            Command::Jobs(Jobs::Kill(c)) => (&mut c.id, false),
            Command::Batch(
                Batch::Status { id, .. } | Batch::Stop { id, .. } | Batch::Recover { id: Some(id) },
            ) => (id, true),
            _ => return Ok(()),
        };
        *id = crate::jobs::resolve_id(store, id, batch).map_err(PlanError::Config)?;
        Ok(())
    }

    /// A command that takes no SPEC.
    pub fn from_top(c: TopCommand) -> Result<Self, PlanError> {
        Ok(match c {
            TopCommand::JobStatus(a) => Command::JobStatus(job_status::JobStatus {
                id: a.id,
                wait: a.wait,
            }),
            TopCommand::Jobs { command } => Command::Jobs(jobs::Jobs::from_cli(command)?),
            TopCommand::Batch { command } => Command::Batch(batch::Batch::from(command)),
            TopCommand::Spec(_) | TopCommand::Transmit => {
                return Err(PlanError::Usage("missing command after SPEC".into()))
            }
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

/// Calls `action` on the plan's targets and shows each host the moment
/// it ends (`report.rs`: blocks rendered by `render`, a progress line naming
/// the hosts awaited, a summary on stderr); `--json` prints one document at
/// the end. `transform` may reshape a result before it is shown. Returns
/// the exit status.
pub fn call_and_show(
    plan: &Plan,
    method: &str,
    action: &Action,
    render: crate::report::Render,
    transform: &dyn Fn(Value) -> Value,
) -> Result<i32, PlanError> {
    let targets = plan.targets()?;
    let mut report = crate::report::Report::new(plan, method, targets.iter().map(|t| t.name.clone()), render);
    let mut shown = BTreeMap::new();
    dispatch_to(plan, &targets, action, |host, value| {
        let value = transform(value.clone());
        report.host(host, &value);
        shown.insert(host.to_string(), value);
    })?;
    if plan.json {
        crate::outln!("{}", crate::output::results_as(plan.out, &shown));
    }
    Ok(i32::from(!report.finish()))
}

/// Dispatches `action` to `targets`; `on_each` sees every host as it ends.
pub fn dispatch_to(
    plan: &Plan,
    targets: &[crate::targets::Target],
    action: &Action,
    on_each: impl FnMut(&str, &Value),
) -> Result<BTreeMap<String, Value>, PlanError> {
    plan.check_credentials()?;
    let exe = std::env::current_exe()
        .map_err(|e| PlanError::Config(format!("cannot find the func executable: {e}")))?;
    plan.detail(targets);
    dispatch::run(
        &exe,
        &plan.credentials(),
        targets,
        action,
        &plan.dispatch,
        on_each,
    )
    .map_err(|e| PlanError::Config(format!("cannot start workers: {e}")))
}

/// A call action for `method` with `params`.
pub fn call_action(method: &str, params: Vec<Value>) -> Result<Action, PlanError> {
    let call_xml = common::xmlrpc::encode_call(method, params, common::xmlrpc::DEFAULT_MAX_DEPTH)
        .map_err(|e| PlanError::Usage(format!("cannot encode the call: {e}")))?;
    Ok(Action::Call { call_xml })
}
