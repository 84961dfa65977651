//! The one engine entry (DESIGN §13): a door decodes its input into a
//! [`Request`], [`serve`] carries it out with the door's [`Plan`] (root,
//! SPEC, dispatch settings, routes) and answers an [`Answer`]; the door only
//! encodes that answer. Each host's end is streamed to the door's [`Watch`]
//! as it happens (a call now, a batch driven here, a job followed), so a
//! door shows progress without assembling execution itself.
//!
//! What is decided here, once for every door: a method listed in
//! `force_async` runs as a job whatever the door asked; hosts that could not
//! judge a fact filter end failed, never called; `last` is not resolved here
//! (a door names a job by id; see `jobs::resolve_id`).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::paths::Root;
use common::Value;

pub mod batches;

use crate::batch::control::Recovered;
use crate::gate::{self, Run};
use crate::job::Action;
use crate::jobs::kill::Signalled;
use crate::jobs::{self, start::Caller, Status};
use crate::plan::{Plan, PlanError};
use crate::targets::Target;

/// One operation, typed and checked, from any door.
#[derive(Debug)]
pub enum Request {
    /// A checked call: now, as a job, or in batches (`call.run`).
    Call(gate::Call),
    /// A prepared action run now on the plan's targets, for the commands
    /// that are not `call` (ping, grep, show, copyfile).
    Run { function: String, action: Action },
    /// The signed minions the plan's SPEC (and fact filter) names.
    ListMinions,
    /// A job's status, read as `look` says.
    JobStatus { id: String, look: Look },
    /// A new job from job `id`'s signed request (`failed`: only the hosts
    /// that did not succeed).
    JobRerun { id: String, failed: bool },
    /// What runs now on the hosts `spec` names, by overlord job.
    JobsActive { spec: String },
    /// A page of the job listing.
    JobsList(jobs::listing::Query),
    /// Every batch, newest first.
    BatchList,
    /// A batch's status.
    BatchStatus { id: String },
    /// A stop (drain) or, with `kill`, a kill request for a batch's driver;
    /// with `wait`, until it applied it.
    BatchStop { id: String, kill: bool, wait: bool },
    /// A new driver for a batch whose driver is gone (`None`: every such batch).
    BatchRecover { id: Option<String> },
    /// A relay's part of a verified signed request (DESIGN §17): now, each
    /// host streamed, or as a job of the relay's store.
    Relay(Box<crate::relay::serve::Relayed>),
    /// Signals job `id` on every host still running it; with `wait`, then
    /// follows it until the signalled hosts end (at most the plan's `-t`,
    /// default 10 s; without, their ends come later in the job's status).
    JobKill { id: String, signal: String, wait: bool },
}

/// How a job's status is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Look {
    /// As the store has it (a long-lived door whose watcher keeps it fresh).
    Stored,
    /// After asking its unfinished hosts once.
    Asked,
    /// Followed until it ends or the plan's `-t` deadline passes.
    Followed,
}

/// What a [`Request`] answers.
#[derive(Debug)]
pub enum Answer {
    /// Every host's result of a call made now; `missing`: literal names
    /// that matched no minion (the others ran).
    Results {
        function: String,
        results: BTreeMap<String, Value>,
        missing: Vec<String>,
    },
    /// A job that runs on: its id, its hosts (`forced`: by `force_async`,
    /// not asked).
    Started {
        id: String,
        hosts: Vec<String>,
        forced: bool,
    },
    /// A batch driven here until it ended, was halted or interrupted.
    Batch {
        id: String,
        status: Status,
        interrupted: bool,
        halted: Option<String>,
        failed: bool,
    },
    /// The minions named (a fact filter's chosen); `unjudged`: hosts that
    /// could not judge the filter (reported by the plan; a failure).
    Minions {
        targets: Vec<Target>,
        unjudged: BTreeMap<String, Value>,
    },
    Active(jobs::active::Active),
    Jobs(jobs::row::JobPage),
    Batches(Vec<batches::Found>),
    /// `found`: `None` when unknown (or not the caller's to see).
    BatchStatus {
        id: String,
        found: Option<batches::Found>,
    },
    /// The batch after the request (`None`: unknown); `applied`: whether
    /// its driver applied it in time (`None`: not waited for).
    BatchStop {
        id: String,
        kill: bool,
        found: Option<batches::Found>,
        applied: Option<bool>,
    },
    /// What a recover did with each batch, and the batch as it was.
    Recovered(Vec<(String, Recovered, Option<batches::Found>)>),
    Status {
        id: String,
        status: Status,
    },
    /// A re-run started: its id, the job it re-runs, its hosts.
    Rerun {
        id: String,
        of: String,
        hosts: Vec<String>,
    },
    /// `signalled`: how each running host took the signal; `None` when
    /// there was nothing to kill (unknown, or already finished).
    Killed {
        id: String,
        status: Status,
        signalled: Option<Vec<(String, Signalled)>>,
    },
}

/// What a door sees while a request is carried out.
pub trait Watch {
    /// A call now or a batch driven here is about to call `hosts`.
    fn begin(&mut self, _function: &str, _hosts: &[String]) {}
    /// Host `host` ended with `value` (a call now, a batch driven here).
    fn host(&mut self, _host: &str, _value: &Value) {}
    /// A followed job as it was last polled.
    fn status(&mut self, _status: &Status) {}
    /// A batch driven here: the job id, before the first host is called.
    fn batch(&mut self, _id: &str, _size: usize, _targets: &[Target]) {}
    /// Whether it looks at each host's end as it comes ([`Watch::host`]).
    /// One that does not lets a call now run wholly on a long-lived door's
    /// runtime ([`Ready::Calling`]).
    fn each_host(&self) -> bool {
        true
    }
}

/// A door that watches nothing.
pub struct Unwatched;
impl Watch for Unwatched {
    fn each_host(&self) -> bool {
        false
    }
}

/// Carries out `request` for `caller` (`None`: the invoking user, who holds
/// the overlord's key) with `plan`. A call's targets were authorized by the
/// gate before (`gate::rights::authorize_call`); what the caller may see of
/// jobs and batches is decided here, for every door: one it may not see is
/// unknown to it. `caller` is what a job records.
pub fn serve(
    plan: &Plan,
    caller: Option<Caller>,
    request: Request,
    watch: &mut dyn Watch,
) -> Result<Answer, PlanError> {
    match prepare(plan, caller, request, watch)? {
        Ready::Answer(answer) => Ok(*answer),
        Ready::Calling(calling) => crate::reach::on_door_task(calling),
    }
}

/// What the engine made of a request ([`prepare`]).
pub enum Ready {
    /// Carried out.
    Answer(Box<Answer>),
    /// Decided, authorized and made ready: a call now over a long-lived
    /// door's kept connections, for a door that looks only at the whole
    /// answer ([`Watch::each_host`]). The door awaits it on its runtime,
    /// whose threads read the connections (no thread handed the answers).
    Calling(Calling),
}

impl Ready {
    /// The answer: awaited here when it is a call still to be made (on the
    /// door's runtime).
    pub async fn finish(self) -> Result<Answer, PlanError> {
        match self {
            Ready::Answer(answer) => Ok(*answer),
            Ready::Calling(calling) => calling.await,
        }
    }
}

/// A call now still to be awaited on a long-lived door's runtime.
pub type Calling = std::pin::Pin<Box<dyn std::future::Future<Output = Result<Answer, PlanError>> + Send>>;

/// [`serve`], but a call now over kept connections is left for the door
/// to await ([`Ready::Calling`]); everything else is carried out here.
pub fn prepare(
    plan: &Plan,
    caller: Option<Caller>,
    request: Request,
    watch: &mut dyn Watch,
) -> Result<Ready, PlanError> {
    if let Some(c) = &caller {
        refuse_unseen(plan, c, &request)?;
    }
    let answer = match request {
        Request::Call(call) => return call_now_or_start(plan, caller, call, watch),
        Request::Run { function, action } => run_now(plan, &function, &action, watch),
        Request::ListMinions => {
            let mut targets = plan.targets()?;
            targets.sort_by(|a, b| crate::values::natural_cmp(&a.name, &b.name));
            let unjudged = plan.unjudged();
            Ok(Answer::Minions { targets, unjudged })
        }
        Request::JobStatus { id, look } => {
            let status = match look {
                Look::Stored => stored_status(plan, &id)?,
                Look::Asked => crate::status::check(plan, &id, false)?,
                Look::Followed => {
                    let deadline = plan.timeout.map(|t| Instant::now() + Duration::from_secs_f64(t));
                    crate::status::watch(plan, &id, deadline, |s| watch.status(s))?
                }
            };
            Ok(Answer::Status { id, status })
        }
        Request::JobRerun { id, failed } => rerun(plan, caller, &id, failed),
        Request::JobKill { id, signal, wait } => kill(plan, caller, id, &signal, wait),
        Request::Relay(relayed) => relay(plan, *relayed, watch),
        Request::JobsActive { spec } => Ok(Answer::Active(jobs::active::active(plan, &spec)?)),
        Request::JobsList(query) => {
            let rights = gate::rights::Rights::of_signed(caller.as_ref().and_then(|c| c.rights.as_deref()));
            let page = jobs::listing::page(&plan.store(), &plan.root, &rights, &query)?;
            Ok(Answer::Jobs(page))
        }
        Request::BatchList => Ok(Answer::Batches(batches::list(plan, caller.as_ref())?)),
        Request::BatchStatus { id } => {
            let found = batches::status(plan, caller.as_ref(), &id)?;
            Ok(Answer::BatchStatus { id, found })
        }
        Request::BatchStop { id, kill, wait } => {
            let (found, applied) = batches::stop(plan, caller.as_ref(), &id, kill, wait)?;
            Ok(Answer::BatchStop {
                id,
                kill,
                found,
                applied,
            })
        }
        Request::BatchRecover { id } => Ok(Answer::Recovered(batches::recover(
            plan,
            caller.as_ref(),
            id.as_deref(),
        )?)),
    };
    answer.map(|a| Ready::Answer(Box::new(a)))
}

/// Refuses what `caller` may not see: a job whose hosts its rights do not
/// all reach with the job's function is unknown to it; what every minion
/// runs (`jobs active`) is an administrator's to ask.
fn refuse_unseen(plan: &Plan, caller: &Caller, request: &Request) -> Result<(), PlanError> {
    let rights = gate::rights::Rights::of_signed(caller.rights.as_deref());
    let id = match request {
        Request::JobStatus { id, .. } | Request::JobKill { id, .. } => id,
        Request::JobsActive { .. } if !rights.admin => {
            let why = "what every minion runs is an administrator's to ask".to_string();
            return Err(gate::GateError::Forbidden(why).into());
        }
        _ => return Ok(()),
    };
    let Some(record) = crate::store::JobStore::load(&plan.store(), id)? else {
        return Ok(());
    };
    match rights.forbidden(&plan.root, &record.meta.function, record.hosts.keys()) {
        None => Ok(()),
        Some(_) => {
            let why = format!("no job {} (unknown, or expired)", common::paths::shorten(id));
            Err(gate::GateError::NotFound(why).into())
        }
    }
}

/// A call: now (each host streamed), or recorded as a job or batch.
fn call_now_or_start(
    plan: &Plan,
    caller: Option<Caller>,
    mut call: gate::Call,
    watch: &mut dyn Watch,
) -> Result<Ready, PlanError> {
    let function = call.function();
    let forced = force_async(&plan.root, &mut call);
    match &call.run {
        Run::Now => call_now(plan, caller.as_ref(), &function, call.params(), watch),
        Run::Batch { detached: false, .. } => {
            drive_batch(plan, &call, watch).map(|a| Ready::Answer(Box::new(a)))
        }
        Run::Async | Run::Batch { .. } => {
            // Names only: the driver reads each address when it calls.
            let hosts = plan.target_names()?;
            authorized(plan, caller.as_ref(), &function, &hosts)?;
            // Every host failed to judge the filter: no job of none.
            if hosts.is_empty() {
                let filter = plan.filter.as_ref().map_or_else(String::new, |f| f.describe());
                let none = format!("{} (none could judge {filter})", plan.spec);
                return Err(crate::targets::TargetError::NoMatch(none).into());
            }
            plan.check_credentials()?;
            let meta = meta(plan, &call, hosts.len(), caller);
            let started = jobs::start::start(&plan.store(), &plan.root, &call, hosts.clone(), meta)?;
            // The driver runs detached; it is reaped when it ends.
            if let Some(child) = started.driver {
                crate::respawned::reap(child);
            }
            Ok(Ready::Answer(Box::new(Answer::Started {
                id: started.id,
                hosts,
                forced,
            })))
        }
    }
}

/// Refuses a call of `function` on `hosts` that `caller`'s rights do not
/// all allow. The gate authorized the door's request before anything was
/// spent (`gate::rights::authorize_call`); this holds the hosts the SPEC
/// names now to the same rights, so a minion enrolled in between or a
/// host behind a relay is not called for a caller that may not.
fn authorized(
    plan: &Plan,
    caller: Option<&Caller>,
    function: &str,
    hosts: &[String],
) -> Result<(), PlanError> {
    let rights = gate::rights::Rights::of_signed(caller.and_then(|c| c.rights.as_deref()));
    match rights.forbidden(&plan.root, function, hosts) {
        None => Ok(()),
        Some(_) => Err(gate::GateError::Forbidden(format!(
            "this token may not call {function} on every host the SPEC names"
        ))
        .into()),
    }
}

/// The plan's targets, the hosts that could not judge its filter ended
/// now (failed, with why), and the watch told of both.
fn begin_now(
    plan: &Plan,
    function: &str,
    watch: &mut dyn Watch,
) -> Result<(Vec<Target>, BTreeMap<String, Value>), PlanError> {
    let targets = plan.call_targets()?;
    let unjudged = plan.unjudged();
    let names: Vec<String> = targets
        .iter()
        .map(|t| t.name.clone())
        .chain(unjudged.keys().cloned())
        .collect();
    watch.begin(function, &names);
    for (host, error) in &unjudged {
        watch.host(host, error);
    }
    Ok((targets, unjudged))
}

/// A call now, each host streamed (a limited caller's hosts held to its
/// rights first); over kept connections for a door that does not look at
/// each host, left ready for the door to await.
fn call_now(
    plan: &Plan,
    caller: Option<&Caller>,
    function: &str,
    params: Vec<Value>,
    watch: &mut dyn Watch,
) -> Result<Ready, PlanError> {
    let (targets, mut results) = begin_now(plan, function, watch)?;
    let names: Vec<String> = targets.iter().map(|t| t.name.clone()).collect();
    authorized(plan, caller, function, &names)?;
    let (function, missing) = (function.to_string(), plan.missing());
    if let (false, Some(warm)) = (watch.each_host(), &plan.warm) {
        let calling = |ends| crate::calling::warm_call(plan, warm, &targets, &function, params, ends);
        let called = crate::reach::collected(calling);
        return Ok(Ready::Calling(Box::pin(async move {
            results.extend(called.await);
            Ok(Answer::Results {
                function,
                results,
                missing,
            })
        })));
    }
    let called = crate::calling::call(plan, &targets, &function, params, |h, v| watch.host(h, v))?;
    results.extend(called);
    Ok(Ready::Answer(Box::new(Answer::Results {
        function,
        results,
        missing,
    })))
}

/// A prepared action (not a call: ping, grep, show, copyfile) run now
/// through the workers, each host streamed.
fn run_now(plan: &Plan, function: &str, action: &Action, watch: &mut dyn Watch) -> Result<Answer, PlanError> {
    let (targets, mut results) = begin_now(plan, function, watch)?;
    let called = crate::calling::dispatch_to(plan, &targets, action, |host, value| watch.host(host, value))?;
    results.extend(called);
    Ok(Answer::Results {
        function: function.to_string(),
        results,
        missing: plan.missing(),
    })
}

/// A relay's part of a request: its hosts now, each streamed, or a job of
/// its store (dispatched in the background).
fn relay(
    plan: &Plan,
    relayed: crate::relay::serve::Relayed,
    watch: &mut dyn Watch,
) -> Result<Answer, PlanError> {
    let function = relayed.request.function.clone();
    match relayed.request.mode {
        crate::relay::Mode::Now => {
            watch.begin(&function, &relayed.request.hosts);
            let results = crate::relay::serve::now(plan, relayed, |h, v| watch.host(h, v))?;
            Ok(Answer::Results {
                function,
                results,
                missing: Vec::new(),
            })
        }
        crate::relay::Mode::Async => {
            let hosts = relayed.request.hosts.clone();
            let id = crate::relay::serve::start(plan, relayed)?;
            Ok(Answer::Started {
                id,
                hosts,
                forced: false,
            })
        }
    }
}

/// A batch driven by this process (DESIGN §7), each host streamed.
fn drive_batch(plan: &Plan, call: &gate::Call, watch: &mut dyn Watch) -> Result<Answer, PlanError> {
    use crate::batch::{driver, machine};
    let targets = plan.targets()?;
    plan.check_credentials()?;
    let names: Vec<String> = targets.iter().map(|t| t.name.clone()).collect();
    let store = plan.store();
    let meta = meta(plan, call, names.len(), None);
    let started = jobs::start::start(&store, &plan.root, call, names, meta)?;
    let id = started.id;
    watch.batch(&id, started.batch_size.unwrap_or(1), &targets);
    let names: Vec<String> = targets.iter().map(|t| t.name.clone()).collect();
    watch.begin(&call.function(), &names);
    let calling = crate::settings::Calling {
        credentials: plan.credentials(),
        max_response: plan.dispatch.max_response,
    };
    let rec = driver::drive(
        &store,
        &plan.root,
        &id,
        &calling,
        &crate::interrupt::requested,
        |host, end, value| {
            let shown = match (end, value) {
                (machine::HostEnd::Done | machine::HostEnd::Failed, Some(v)) => v.clone(),
                _ => driver::end_error(end),
            };
            watch.host(host, &shown);
        },
    )?;
    let status = crate::status::check(plan, &id, false)?;
    Ok(Answer::Batch {
        id,
        status,
        interrupted: rec.interrupted,
        halted: rec.state.halted.clone(),
        failed: rec.state.ended.values().any(machine::HostEnd::is_failure),
    })
}

/// A re-run of job `id` for `caller`: a job it may not see is unknown, and
/// it needs the right to call the function on every host of the re-run.
fn rerun(plan: &Plan, caller: Option<Caller>, id: &str, failed: bool) -> Result<Answer, PlanError> {
    plan.check_credentials()?;
    let store = plan.store();
    let rights = gate::rights::Rights::of_signed(caller.as_ref().and_then(|c| c.rights.as_deref()));
    let visible = |r: &crate::store::JobRecord| {
        let hosts = r.hosts.keys();
        rights.forbidden(&plan.root, &r.meta.function, hosts).is_none()
    };
    let rerun = jobs::rerun::prepare(&store, &plan.root, id, failed, &visible)?;
    let function = rerun.call.function();
    if rights
        .forbidden(&plan.root, &function, rerun.hosts.iter())
        .is_some()
    {
        let why = format!("this caller may not call {function} on every host of the re-run");
        return Err(gate::GateError::Forbidden(why).into());
    }
    let (hosts, of) = (rerun.hosts.clone(), rerun.original.id.clone());
    let started = jobs::rerun::start(&store, &plan.root, rerun, caller)?;
    if let Some(child) = started.driver {
        crate::respawned::reap(child);
    }
    Ok(Answer::Rerun {
        id: started.id,
        of,
        hosts,
    })
}

fn kill(
    plan: &Plan,
    caller: Option<Caller>,
    id: String,
    signal: &str,
    wait: bool,
) -> Result<Answer, PlanError> {
    let sig = gate::jobs::signal(signal)?;
    let limit = Duration::from_secs_f64(plan.timeout.unwrap_or(10.0));
    let who = match &caller {
        Some(c) => format!("{} via func-api", c.user),
        None => format!("{} via func jobs kill", jobs::current_user()),
    };
    jobs::kill::settle_dispatch(&plan.store(), &id, Instant::now() + limit, sig, &who)?;
    let status = match wait {
        true => crate::status::refreshed(plan, &id)?,
        false => stored_status(plan, &id)?,
    };
    let record = match &status.record {
        Some(record) if !status.finished() => record,
        _ => {
            return Ok(Answer::Killed {
                id,
                status,
                signalled: None,
            })
        }
    };
    let calls = jobs::kill::signal_calls(&plan.root, record, signal);
    let user = caller.as_ref().map(|c| c.user.as_str());
    let mut signalled = send_signals(plan, calls, user)?;
    signalled.sort_by(|a, b| a.0.cmp(&b.0));
    if !wait {
        return Ok(Answer::Killed {
            id,
            status,
            signalled: Some(signalled),
        });
    }
    // The minions now report the signalled jobs as ended; collect that.
    let status = crate::status::watch(plan, &id, Some(Instant::now() + limit), |_| {})?;
    Ok(Answer::Killed {
        id,
        status,
        signalled: Some(signalled),
    })
}

/// Sends each `jobs.signal_job` call, as `user` where a door names its
/// caller: over the plan's kept connections when it has them (func-api),
/// else over a poller of this process; hosts whose job is a relay's
/// through that relay either way.
fn send_signals(
    plan: &Plan,
    calls: Vec<(Target, String, Vec<Value>)>,
    user: Option<&str>,
) -> Result<Vec<(String, Signalled)>, PlanError> {
    if calls.is_empty() {
        return Ok(Vec::new());
    }
    // The pool's connections belong to the door's runtime: they are used there.
    let (Some(pool), Ok(door)) = (
        plan.warm.as_ref().map(|w| &w.pool),
        tokio::runtime::Handle::try_current(),
    ) else {
        let mut poller = crate::status::new_poller(plan).map_err(gate::GateError::from)?;
        let replies = poller.call_each(calls);
        return Ok(replies
            .into_iter()
            .map(|(h, r)| (h, jobs::kill::signalled(r)))
            .collect());
    };
    let (relayed, direct): (Vec<_>, Vec<_>) = calls
        .into_iter()
        .partition(|c| jobs::relayed::is_relayed(c, None));
    let limit = Duration::from_secs_f64(plan.dispatch.timeout_secs);
    let root = &plan.root;
    let asked = async {
        let through_relays = jobs::relayed::answer(root, None, relayed, user);
        let direct = direct.into_iter().map(|(target, method, params)| async move {
            let value = pool.call(&target, &method, params, limit, user).await;
            (target.name, Signalled::of_value(value))
        });
        let (relayed, direct) = tokio::join!(through_relays, futures_util::future::join_all(direct));
        let relayed = relayed.into_iter().map(|(h, r)| (h, jobs::kill::signalled(r)));
        relayed.chain(direct).collect::<Vec<_>>()
    };
    Ok(door.block_on(asked))
}

/// Job `id`'s status as the store has it (unknown: lost in space).
fn stored_status(plan: &Plan, id: &str) -> Result<Status, PlanError> {
    Ok(match crate::store::JobStore::load(&plan.store(), id)? {
        Some(record) => jobs::status_of(record, &BTreeMap::new()),
        None => Status::lost(),
    })
}

/// The job's record, with this plan's dispatch settings.
fn meta(plan: &Plan, call: &gate::Call, hosts: usize, caller: Option<Caller>) -> crate::store::JobMeta {
    jobs::start::meta(
        call,
        hosts,
        (plan.dispatch.timeout_secs, plan.dispatch.forks),
        caller,
    )
}

/// Makes a call to a method listed in `force_async` (of
/// `etc/func/async_methods.conf`) a job, whatever the door asked; whether
/// it did. The one place this rule is applied, for every door (func-api
/// too, whose calls are its own).
pub fn force_async(root: &Root, call: &mut gate::Call) -> bool {
    let forced = call.run == Run::Now && forced_async(root, &call.function());
    if forced {
        call.run = Run::Async;
    }
    forced
}

/// Whether `method` is listed in `force_async` of `etc/func/async_methods.conf`.
pub fn forced_async(root: &Root, method: &str) -> bool {
    common::config::Ini::load(&root.async_methods_conf())
        .map(|ini| ini.list("main", "force_async").iter().any(|m| m == method))
        .unwrap_or(false)
}

impl Answer {
    /// The exit status every door gives this answer (HTTP maps it too):
    /// 0 when every host succeeded, 1 when any failed, was unreachable, or
    /// named no minion, 3 while a job runs on (Func's job_status).
    pub fn exit_code(&self) -> i32 {
        match self {
            Answer::Results {
                function,
                results,
                missing,
            } => i32::from(!missing.is_empty() || !crate::status::all_ok(function, results)),
            Answer::Started { .. } | Answer::Rerun { .. } => 0,
            Answer::Minions { unjudged, .. } => i32::from(!unjudged.is_empty()),
            Answer::Batch {
                interrupted: true, ..
            } => crate::interrupt::EXIT,
            Answer::Batch { failed, .. } => i32::from(*failed),
            Answer::Status { status, .. } => crate::status::exit_code(status),
            Answer::Active(found) => i32::from(!found.unreachable.is_empty()),
            Answer::Batches(_) | Answer::Jobs(_) => 0,
            Answer::BatchStatus { found: None, .. } | Answer::BatchStop { found: None, .. } => 1,
            Answer::BatchStatus {
                found: Some((_, rec)),
                ..
            } => i32::from(crate::batch::control::any_failed(rec) || rec.orphaned()),
            Answer::BatchStop {
                found: Some((_, rec)),
                applied,
                ..
            } => i32::from(!rec.complete && (rec.orphaned() || *applied == Some(false))),
            Answer::Recovered(done) => i32::from(done.iter().any(|(_, r, _)| *r == Recovered::Missing)),
            Answer::Killed {
                status, signalled, ..
            } => match (&status.record, signalled) {
                (None, _) => 1,
                (Some(_), None) => 0,
                (Some(_), Some(s)) => i32::from(s.iter().any(|(_, t)| !t.sent()) || !status.finished()),
            },
        }
    }

    /// The answer as the one JSON document every door shows (`--json`,
    /// `func transmit`): `{host: result}`, `{"job_id"}`, a job's status
    /// document, `{name: address}`, `{"job_id", "rerun_of", "hosts"}`.
    pub fn document(&self) -> serde_json::Value {
        use serde_json::json;
        let json_of = |m: &BTreeMap<String, Value>| -> serde_json::Value {
            m.iter()
                .map(|(h, v)| (h.clone(), crate::values::to_json(v)))
                .collect()
        };
        match self {
            Answer::Results { results, .. } => json_of(results),
            Answer::Started { id, .. } => json!({ "job_id": id }),
            Answer::Batch { id, status, .. }
            | Answer::Status { id, status }
            | Answer::Killed { id, status, .. } => serde_json::to_value(status.doc(id)).unwrap_or_default(),
            Answer::Minions { targets, .. } => {
                targets.iter().map(|t| (t.name.clone(), json!(t.addr))).collect()
            }
            Answer::Rerun { id, of, hosts } => json!({"job_id": id, "rerun_of": of, "hosts": hosts.len()}),
            Answer::Batches(all) => batches_doc(all),
            Answer::Jobs(page) => serde_json::to_value(page).unwrap_or_default(),
            Answer::BatchStatus { id, found } => {
                let doc = match found {
                    Some((meta, rec)) => crate::batch::control::status_doc(meta, rec),
                    None => crate::batch::control::unknown_doc(id),
                };
                serde_json::to_value(doc).unwrap_or_default()
            }
            Answer::BatchStop { id, kill, found, .. } => {
                let mut doc = json!({"job_id": id, "requested": if *kill { "kill" } else { "stop" }});
                if let Some((_, rec)) = found {
                    doc["state"] = json!(crate::batch::control::state_word(rec));
                    doc["complete"] = json!(rec.complete);
                    doc["driver_alive"] = json!(!rec.orphaned() && !rec.complete);
                    doc["counts"] = json!(rec.state.counts());
                }
                doc
            }
            Answer::Recovered(done) => {
                let outcome = |r: &Recovered| match r {
                    Recovered::Missing => "unknown",
                    Recovered::Resumed => "resumed",
                    _ => "nothing to recover",
                };
                let batches: serde_json::Map<String, serde_json::Value> = done
                    .iter()
                    .map(|(id, r, _)| (id.clone(), json!(outcome(r))))
                    .collect();
                json!({ "batches": batches })
            }
            Answer::Active(found) => {
                let jobs: serde_json::Map<String, serde_json::Value> = found
                    .jobs
                    .iter()
                    .map(|j| {
                        let doc =
                            json!({"function": j.function, "running": j.running, "returned": j.returned});
                        (j.id.clone(), doc)
                    })
                    .collect();
                let other: Vec<serde_json::Value> = found
                    .others
                    .iter()
                    .map(|(host, job)| json!({"host": host, "id": job.id, "method": job.method, "pid": job.pid, "caller": job.caller}))
                    .collect();
                let unreachable: serde_json::Map<String, serde_json::Value> = found
                    .unreachable
                    .iter()
                    .map(|(h, v)| (h.clone(), json!(crate::out::error_line(v))))
                    .collect();
                json!({"jobs": jobs, "other": other, "unreachable": unreachable})
            }
        }
    }
}

/// `batch list --json`: `[{"id", "function", "size", "mode", "started", "state", "counts"}]`.
fn batches_doc(all: &[batches::Found]) -> serde_json::Value {
    let rows = all.iter().map(|(m, r)| {
        serde_json::json!({"id": m.id, "function": m.function, "size": r.state.size, "mode": r.mode,
            "started": m.started, "state": crate::batch::control::state_word(r), "counts": r.state.counts()})
    });
    serde_json::Value::Array(rows.collect())
}
