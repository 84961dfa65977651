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
pub mod schedule;
pub mod show;
pub mod store;
pub mod transmit;

use crate::cli::{SpecCommand, TopCommand};
use crate::globals::Globals;
use overlord::plan::{Plan, PlanError};

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
    Schedule(schedule::Schedule),
    Show(show::Show),
    Store(store::Store),
}

impl Command {
    /// A command that follows a SPEC.
    pub fn from_spec(c: SpecCommand, spec: &str, globals: &mut Globals) -> Result<Self, PlanError> {
        Ok(match c {
            SpecCommand::Call(args) => Command::Call(call::Call::from_args(args, spec, globals)?),
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
    pub fn resolve_last(&mut self, store: &overlord::store::Store) -> Result<(), PlanError> {
        use crate::commands::batch::Batch;
        let (id, batch): (&mut String, bool) = match self {
            Command::JobStatus(c) => (&mut c.id, false),
            Command::Call(call::Call::JobStatus { id }) => (id, false),
            Command::Jobs(jobs) => match jobs.job_id() {
                Some(id) => (id, false),
                None => return Ok(()),
            },
            Command::Batch(
                Batch::Status { id, .. } | Batch::Stop { id, .. } | Batch::Recover { id: Some(id) },
            ) => (id, true),
            _ => return Ok(()),
        };
        overlord::gate::JobRef::parse(id)?;
        *id = overlord::jobs::resolve_id(store, id, batch)?;
        Ok(())
    }

    /// A command that takes no SPEC.
    pub fn from_top(c: TopCommand) -> Result<Self, PlanError> {
        Ok(match c {
            TopCommand::JobStatus(a) => Command::JobStatus(job_status::JobStatus {
                id: a.id,
                wait: a.wait,
            }),
            TopCommand::Jobs { command } => Command::Jobs(command.checked()?),
            TopCommand::Batch { command } => Command::Batch(batch::Batch::from(command)),
            TopCommand::Store { command } => Command::Store(store::Store(command)),
            TopCommand::Schedule { command } => Command::Schedule(schedule::Schedule(command)),
            TopCommand::Spec(_) | TopCommand::Transmit => {
                return Err(PlanError::usage("missing command after SPEC".into()))
            }
        })
    }
}

/// Carries out `command` with `plan`; returns the exit status. A command
/// that changes something leaves a line in the audit trail (`cli:USER`,
/// what, the SPEC, its exit status; `GET /api/v1/audit` pages it).
pub fn run(plan: &Plan, command: &Command) -> Result<i32, PlanError> {
    let result = carry_out(plan, command);
    if let Some(action) = command.audited() {
        let status = match &result {
            Ok(code) => *code,
            Err(e) => e.exit_code(),
        };
        let spec = (!plan.spec.is_empty()).then_some(plan.spec.as_str());
        overlord::audit::Audit::new(&plan.root).cli_line(&action, spec, status);
    }
    result
}

impl Command {
    /// What the audit trail calls this command, if it changes something.
    fn audited(&self) -> Option<String> {
        use crate::commands::batch::Batch;
        Some(match self {
            Command::Call(call::Call::Run { call, .. }) => format!("call {}", call.function()),
            Command::CopyFile(_) => "copyfile".to_string(),
            Command::Jobs(jobs) => jobs.audited()?,
            Command::Batch(Batch::Stop { id, kill }) => {
                format!("batch {} {id}", if *kill { "kill" } else { "stop" })
            }
            Command::Batch(Batch::Recover { id }) => format!("batch recover {}", id.as_deref().unwrap_or("")),
            Command::Schedule(s) => s.audited()?,
            _ => return None,
        })
    }
}

fn carry_out(plan: &Plan, command: &Command) -> Result<i32, PlanError> {
    match command {
        Command::Batch(c) => c.run(plan),
        Command::Call(c) => c.run(plan),
        Command::CopyFile(c) => c.run(plan),
        Command::Grep(c) => c.run(plan),
        Command::Group(c) => c.run(plan),
        Command::JobStatus(c) => c.run(plan),
        Command::Jobs(c) => c.run(plan),
        Command::ListMinions => list_minions::run(plan),
        Command::Ping => ping::run(plan),
        Command::Schedule(c) => c.run(plan),
        Command::Show(c) => c.run(plan),
        Command::Store(c) => c.run(plan),
    }
}
