//! Runs a batch: the I/O around the state machine. Each round it takes the
//! ends of in-flight hosts (watched with `jobs.wait_job`, so a slot is freed
//! within a round trip of its host's end), asks hosts at their deadline whether
//! their job still runs (`jobs.find_job`), applies stop requests from the
//! store, steps the machine, kills and dispatches (`async.M.m`) what it
//! says, and persists the state. Before dispatching it saves the hosts as
//! in flight, so a driver that dies mid-dispatch is never followed by a
//! second dispatch of the same host: `recover` gives such a host up.
//!
//! The same loop runs inside `func` (sync batches, printing hosts as they
//! end) and in a detached `func __batch --root ROOT ID` (async batches).
//! While a func-api serves the root, the starts go through it and its
//! watcher follows the started hosts (`warm.rs`); otherwise the next
//! wave's connections are opened while the current one runs.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Child;
use std::time::Duration;

use common::paths::Root;
use common::xmlrpc::remote_error;
use common::Value;

use super::machine::{BatchState, Event, HostEnd, Liveness};
use super::record::{self, BatchRecord, Claim, Control, Proc};
use crate::error::EngineError;
use crate::jobs::poller::{Answer, Poller, Reply};
use crate::jobs::{encode_result, poll_pause};
use crate::store::{HostUpdate, JobMeta, JobStore};
use crate::targets::Target;

/// Longest a single call may take inside a round.
const CALL_LIMIT: f64 = 10.0;

/// Starts the async driver of batch `id` of `store`, detached (new session).
pub fn spawn(exe: &Path, root: &Root, id: &str, store: &dyn JobStore) -> std::io::Result<Child> {
    crate::jobs::driver::spawn_detached(exe, root, "__batch", id, store)
}

/// `func __batch --root ROOT ID`; returns the exit code.
pub fn main(args: &[String]) -> i32 {
    crate::jobs::driver::run_detached("__batch", args, |store, root, id| {
        // Detached: nothing but `batch stop` ends it early.
        drive(
            store,
            root,
            id,
            &crate::settings::Calling::of_root(root),
            &|| false,
            |_, _, _| {},
        )
        .map(|_| ())
    })
}

/// Creates the batch: the overlord job (all hosts pending) and its record,
/// held by this process (which drives it, or hands it to the driver it
/// spawns: `hand_over`), so it never looks driverless.
pub fn create(
    store: &dyn JobStore,
    root: &Root,
    meta: JobMeta,
    state: BatchState,
    mode: &str,
) -> Result<(String, BatchRecord), EngineError> {
    let lease = crate::settings::batch_lease(root);
    let hosts: Vec<String> = state.pending.iter().cloned().collect();
    let signer = crate::seal::Signer::load(root).map_err(|e| EngineError::Credentials(e.to_string()))?;
    let id = store.create_sealed(meta, &hosts, &|m, h| signer.seal(m, h))?;
    let now = crate::store::now();
    let mut record = BatchRecord {
        state,
        minion_jobs: BTreeMap::new(),
        mode: mode.to_string(),
        driver: Some(record::this_process()),
        control: None,
        created: now,
        updated: now,
        complete: false,
        interrupted: false,
        started: false,
        holder_host: None,
        lease_until: None,
        warm: false,
    };
    record.hold(record::this_process(), lease);
    store.save_batch_with(&id, &record.encode(), &[], false, &record::merge_control)?;
    Ok((id, record))
}

/// Atomically takes batch `id` for `me` (see `record::claim`). `driving`:
/// the claimant is the driver (not a `recover` about to spawn one).
pub fn claim(
    store: &dyn JobStore,
    id: &str,
    me: Proc,
    parent: Option<Proc>,
    driving: bool,
    lease: f64,
) -> Result<Claim, EngineError> {
    let mut found = Claim::Missing;
    store.change_batch_with(id, &mut |bytes| {
        let (new, claim) = record::claim(bytes, me, parent, driving, lease);
        found = claim;
        new
    })?;
    Ok(found)
}

/// Hands batch `id`, held by this process, to the driver it spawned.
pub fn hand_over(store: &dyn JobStore, id: &str, child: &Child, lease: f64) -> Result<(), EngineError> {
    let pid = child.id();
    // A child that already ended has no start time: leave the batch with
    // this process, which ends soon, so `recover` can take it.
    let Some(start) = common::process::start_time(pid) else {
        return Ok(());
    };
    let from = record::this_process();
    store
        .change_batch_with(id, &mut |bytes| {
            record::hand_over(bytes, from, (pid, start), lease)
        })
        .map(|_| ())
        .map_err(EngineError::from)
}

/// The process that spawned this one, if it is still there.
fn parent() -> Option<Proc> {
    let pid = nix::unistd::getppid().as_raw() as u32;
    common::process::start_time(pid).map(|start| (pid, start))
}

/// Whether batch `id`'s request was signed by an overlord (DESIGN §9): the
/// job's function, arguments and hosts as signed; the signed hosts (the
/// batch record's must all be among them). The outer error: the store.
fn trust(
    store: &dyn JobStore,
    root: &Root,
    id: &str,
    meta: &JobMeta,
) -> Result<Result<Vec<String>, crate::seal::SealError>, EngineError> {
    let Some(job) = store.load(id)? else {
        return Err(EngineError::Record("no such batch in the store".into()));
    };
    let hosts: Vec<String> = job.hosts.keys().cloned().collect();
    Ok(crate::seal::verify(root, meta, &hosts).map(|()| hosts))
}

/// Loads batch `id`.
pub fn load(store: &dyn JobStore, id: &str) -> Result<Option<(JobMeta, BatchRecord)>, EngineError> {
    let Some(bytes) = store.batch(id)? else {
        return Ok(None);
    };
    let Some(job) = store.load(id)? else {
        return Ok(None);
    };
    Ok(Some((
        job.meta,
        BatchRecord::decode(&bytes).map_err(EngineError::Record)?,
    )))
}

/// Drives batch `id` to its end; `on_end` sees each host as it ends.
/// `calling` has the credentials and limits to call minions with;
/// `cancelled` is asked every round: for a sync batch, the front end's
/// Ctrl-C (the driver stops driving and records the batch as interrupted).
pub fn drive(
    store: &dyn JobStore,
    root: &Root,
    id: &str,
    calling: &crate::settings::Calling,
    cancelled: &dyn Fn() -> bool,
    mut on_end: impl FnMut(&str, &HostEnd, Option<&Value>),
) -> Result<BatchRecord, EngineError> {
    let mut run = match Run::start(store, root, id, calling)? {
        Started::Running(run) => *run,
        Started::Complete(rec) => return Ok(*rec),
    };
    let mut round = 0;
    loop {
        // Ctrl-C on the `func` driving a sync batch: stop driving, and say
        // so in the record (not a mystery "driver gone"); in-flight hosts
        // keep running and `func batch recover` picks them up.
        if run.rec.mode == "sync" && cancelled() {
            return run.interrupted();
        }
        let now = crate::store::now();
        let before = run.rec.state.clone();
        let actions = run.rec.state.step(now, std::mem::take(&mut run.events));
        if !actions.kill.is_empty() {
            let calls = with_jobs(root, &run.rec, &actions.kill, "jobs.kill_job");
            run.poller.call_each(calls);
        }
        let mut changes = run.dispatch(&actions.dispatch)?;
        changes.extend(run.report_ends(&mut on_end));
        // The next wave's connections open while this one runs (unless
        // func-api starts them: it has them).
        if run.warm.is_none() {
            let next = run.rec.state.pending.iter().take(run.rec.state.size);
            run.poller.preconnect(root, next);
        }
        let finished = actions.finished && run.events.is_empty();
        if run.persist(&before, &changes, finished, now)? {
            round = 0;
        }
        if finished {
            return run.finish();
        }
        run.apply_control();
        let liveness = liveness(
            &mut run.poller,
            root,
            &run.meta.function,
            &run.rec,
            &actions.ask,
            &mut run.results,
        );
        run.events.extend(liveness);
        // Ends arrive the moment they happen; the pause only paces looking
        // at deadlines and stop requests.
        let pause = if run.events.is_empty() {
            poll_pause(round).min(Duration::from_millis(100))
        } else {
            Duration::ZERO
        };
        if !run.take_returns(pause) {
            round += 1;
        }
    }
}

/// What [`Run::start`] found.
enum Started<'a> {
    Running(Box<Run<'a>>),
    /// The batch was complete already: its record.
    Complete(Box<BatchRecord>),
}

/// One driver's hold on a batch while it drives it: the record it took,
/// the poller that calls and watches its hosts, the results and events of
/// the round.
struct Run<'a> {
    store: &'a dyn JobStore,
    root: &'a Root,
    id: &'a str,
    meta: JobMeta,
    rec: BatchRecord,
    poller: Poller,
    /// Why nothing may be sent (the request's signature), if so.
    refused: Option<crate::seal::SealError>,
    lease: f64,
    results: BTreeMap<String, Value>,
    /// Hosts whose end was handed to `on_end` and the store.
    reported: BTreeSet<String>,
    events: Vec<Event>,
    /// Starts and ends through the root's func-api (`warm.rs`), while one
    /// serves it.
    warm: Option<super::warm::WarmBatch>,
}

impl<'a> Run<'a> {
    /// Takes batch `id` (only the claim's winner drives: two drivers never
    /// run one batch), judges its signature on the record taken, and sets
    /// up the poller (through relays with --delegate); a recovered batch's
    /// in-flight hosts are watched again, those caught mid-dispatch given up.
    fn start(
        store: &'a dyn JobStore,
        root: &'a Root,
        id: &'a str,
        calling: &crate::settings::Calling,
    ) -> Result<Started<'a>, EngineError> {
        let missing = || EngineError::Record("no such batch in the store".into());
        let (meta, _) = load(store, id)?.ok_or_else(missing)?;
        // A request whose signature does not verify is refused: every host it
        // would dispatch fails with the reason, and nothing is sent.
        let signed = trust(store, root, id, &meta)?;
        let lease = crate::settings::batch_lease(root);
        let (rec, recovering) = match claim(store, id, record::this_process(), parent(), true, lease)? {
            Claim::Taken { record, resumed } => (*record, resumed),
            Claim::Complete => {
                let (_, rec) = load(store, id)?.ok_or_else(missing)?;
                return Ok(Started::Complete(Box::new(rec)));
            }
            Claim::Held((pid, _)) => return Err(EngineError::Held(pid)),
            Claim::Missing => return Err(missing()),
        };
        // The hosts are judged on the record this driver took (and dispatches
        // from), not on an earlier read a store could answer differently.
        let refused = match signed {
            Err(why) => Some(why),
            Ok(hosts) => {
                let extra = crate::seal::unsigned_hosts(&hosts, rec.state.hosts());
                (!extra.is_empty()).then(|| crate::seal::SealError::ExtraHosts(extra.join(", ")))
            }
        };
        let limit = Duration::from_secs_f64(meta.timeout_secs.clamp(0.1, CALL_LIMIT));
        // With --delegate, the window's starts go through relays where the map says.
        let delegation = match meta.delegate {
            true => crate::relay::Routes::load(root, None)
                .map_err(|e| EngineError::Record(e.to_string()))?
                .map(|routes| crate::jobs::relayed::Delegation {
                    routes,
                    order: crate::relay::Order::of_job(&meta),
                }),
            false => None,
        };
        // A warm func: func-api starts the hosts and follows them (not with
        // --delegate: relays are the driver's; nor for a refused request).
        let warm = match (meta.delegate, &refused) {
            (false, None) => super::warm::WarmBatch::new(root, &meta, calling),
            _ => None,
        };
        let mut poller = Poller::new(calling.clone(), limit)?.relaying(root.clone(), delegation);
        // Each minion runs this signed request at most once, whatever the
        // store says (a host reset to pending and recovered is refused there).
        poller.set_request(crate::seal::request_id(&meta));
        let mut run = Run {
            store,
            root,
            id,
            meta,
            reported: rec.state.ended.keys().cloned().collect(),
            rec,
            poller,
            refused,
            lease,
            results: BTreeMap::new(),
            events: Vec::new(),
            warm,
        };
        run.rec.warm = run.warm.is_some();
        if recovering {
            run.recover();
            record::log_event(store, id, "recover", &run.rec);
        } else {
            record::log_event(store, id, "new", &run.rec);
        }
        Ok(Started::Running(Box::new(run)))
    }

    /// A recovered batch: hosts saved as in flight but without a minion job
    /// id were being dispatched when the last driver died (never sent
    /// twice: given up); the others are watched again.
    fn recover(&mut self) {
        for host in self.rec.state.active.keys() {
            if !self.rec.minion_jobs.contains_key(host) {
                self.events.push(Event::DispatchFailed {
                    host: host.clone(),
                    why: "its driver died while dispatching; not sent again, so it cannot run twice".into(),
                });
            }
        }
        let running: Vec<(String, String)> = (self.rec.minion_jobs.iter())
            .filter(|(host, _)| self.rec.state.active.contains_key(*host))
            .map(|(host, job)| (host.clone(), job.clone()))
            .collect();
        for (host, job) in running {
            self.follow(host, job);
        }
    }

    /// Stops driving a sync batch its front end was interrupted in.
    fn interrupted(mut self) -> Result<BatchRecord, EngineError> {
        self.rec.interrupted = true;
        save(self.store, self.id, &mut self.rec, &[], false, self.lease)?;
        record::log_event(self.store, self.id, "interrupted", &self.rec);
        Ok(self.rec)
    }

    /// Starts `hosts` (`async.M.m`), saved as in flight first; an untrusted
    /// request starts none and fails each with the reason. The store's
    /// changes: each host dispatched with its minion job.
    fn dispatch(&mut self, hosts: &[String]) -> Result<Vec<(String, HostUpdate)>, EngineError> {
        let mut changes = Vec::new();
        if hosts.is_empty() {
            return Ok(changes);
        }
        if let Some(why) = &self.refused {
            let v = remote_error(
                "func.overlord.UntrustedRequest",
                &format!("refused, nothing sent: {why}"),
                "",
            );
            for host in hosts {
                self.results.insert(host.clone(), v.clone());
                self.events.push(Event::DispatchFailed {
                    host: host.clone(),
                    why: crate::values::error_text(&v),
                });
            }
            return Ok(changes);
        }
        save(self.store, self.id, &mut self.rec, &[], false, self.lease)?;
        let params: Vec<Value> = self.meta.params();
        let function = format!("async.{}", self.meta.function);
        let replies = match &mut self.warm {
            Some(warm) => warm.start(hosts, &function, &params),
            None => {
                let calls = hosts
                    .iter()
                    .map(|h| (Target::enrolled(self.root, h), function.clone(), params.clone()))
                    .collect();
                self.poller.call_each(calls)
            }
        };
        for (host, reply) in replies {
            match reply {
                Reply::Value(Value::String(job)) => {
                    changes.push((
                        host.clone(),
                        HostUpdate::Dispatched {
                            minion_job: job.clone(),
                        },
                    ));
                    self.rec.minion_jobs.insert(host.clone(), job.clone());
                    self.follow(host, job);
                }
                Reply::Value(v)
                    if crate::values::error_kind(&v) == Some(common::rpc::client::ALREADY_RAN) =>
                {
                    self.results.insert(host.clone(), v.clone());
                    self.events.push(Event::Refused {
                        host,
                        why: crate::values::error_text(&v),
                    });
                }
                Reply::Value(v) | Reply::Fault(v) => {
                    self.results.insert(host.clone(), v.clone());
                    self.events.push(Event::DispatchFailed {
                        host,
                        why: crate::values::error_text(&v),
                    });
                }
                Reply::Unreachable(why) => self.events.push(Event::DispatchFailed { host, why }),
            }
        }
        Ok(changes)
    }

    /// Hands each host that ended since the last round to `on_end`; the
    /// store's changes: their results.
    fn report_ends(
        &mut self,
        on_end: &mut impl FnMut(&str, &HostEnd, Option<&Value>),
    ) -> Vec<(String, HostUpdate)> {
        let mut changes = Vec::new();
        for (host, end) in &self.rec.state.ended {
            if self.reported.insert(host.clone()) {
                self.poller.unwatch(host);
                if let Some(warm) = &mut self.warm {
                    warm.unfollow(host);
                }
                let value = self.results.get(host);
                on_end(host, end, value);
                let result = match (end, value) {
                    (HostEnd::Done | HostEnd::Failed, Some(v)) => v.clone(),
                    _ => end_error(end),
                };
                changes.push((
                    host.clone(),
                    HostUpdate::Finished {
                        result_xml: encode_result(result),
                    },
                ));
            }
        }
        changes
    }

    /// Saves what changed (and renews the lease when due); with nothing
    /// changed, only looks for a stop request. Whether anything changed.
    fn persist(
        &mut self,
        before: &BatchState,
        changes: &[(String, HostUpdate)],
        finished: bool,
        now: f64,
    ) -> Result<bool, EngineError> {
        self.rec.complete = finished;
        if self.rec.state != *before || !changes.is_empty() || finished {
            save(self.store, self.id, &mut self.rec, changes, finished, self.lease)?;
            let event = match (finished, &self.rec.state.halted) {
                (true, Some(_)) => "halted",
                (true, None) => "complete",
                _ => "progress",
            };
            record::log_event(self.store, self.id, event, &self.rec);
            return Ok(true);
        }
        if self
            .rec
            .lease_until
            .is_some_and(|until| until - now < self.lease / 2.0)
        {
            // Nothing changed, but the lease wants renewing.
            save(self.store, self.id, &mut self.rec, &[], false, self.lease)?;
        } else if let Ok(Some(stored)) = self.store.batch(self.id) {
            // Nothing changed: only look (no write) for a stop request.
            if let Ok(stored) = BatchRecord::decode(&stored) {
                self.rec.control = record::stronger(self.rec.control, stored.control);
            }
        }
        Ok(false)
    }

    /// The batch's end: its record, or, for a request that could not be
    /// trusted, the refusal (audited).
    fn finish(self) -> Result<BatchRecord, EngineError> {
        let Some(why) = self.refused else {
            return Ok(self.rec);
        };
        let hosts: Vec<String> = self.rec.state.ended.keys().cloned().collect();
        crate::audit::Audit::new(self.root).line(
            &self.meta.user,
            None,
            &format!("driver refused batch {} ({}): {why}", self.id, self.meta.function),
            &hosts,
            403,
        );
        Err(EngineError::Untrusted(format!(
            "batch {} refused, nothing sent: {why}",
            self.id
        )))
    }

    /// A stop (or kill) request not yet applied becomes the machine's event.
    fn apply_control(&mut self) {
        match self.rec.control {
            Some(Control::Kill) if self.rec.state.halted.as_deref() != Some(super::machine::KILLED) => {
                self.events.push(Event::Stop { kill: true })
            }
            Some(Control::Stop) if self.rec.state.halted.is_none() => {
                self.events.push(Event::Stop { kill: false })
            }
            _ => {}
        }
    }

    /// Takes the ends of in-flight hosts that arrive within `pause`;
    /// whether anything happened this round (ends or events).
    fn take_returns(&mut self, pause: Duration) -> bool {
        let mut ends = self.warm_ends(pause);
        ends.extend(self.poller.ended(if self.warm.is_some() {
            Duration::ZERO
        } else {
            pause
        }));
        let happened = !ends.is_empty() || !self.events.is_empty();
        for (host, value) in ends {
            if self.rec.state.active.contains_key(&host) {
                self.events.push(Event::Returned {
                    host: host.clone(),
                    ok: common::outcome::ok(&self.meta.function, &value),
                });
                self.results.insert(host, value);
            }
        }
        happened
    }

    /// `host` runs minion job `job`: its end awaited through func-api's
    /// watcher (warm) or watched from here.
    fn follow(&mut self, host: String, job: String) {
        match &mut self.warm {
            Some(warm) => warm.follow(host, job),
            None => self.poller.watch(Target::enrolled(self.root, &host), job),
        }
    }

    /// The ends func-api's watcher recorded (waiting up to `pause`); when
    /// func-api is gone, the hosts still running are watched from here.
    fn warm_ends(&mut self, pause: Duration) -> Vec<(String, Value)> {
        let Some(warm) = &mut self.warm else {
            return Vec::new();
        };
        match warm.ended(self.store, self.id, pause) {
            Ok(Ok(ends)) => ends,
            // The store cannot be read now: the next round looks again.
            Err(e) => {
                crate::log::line(&format!("func batch {}: cannot read ends yet: {e}", self.id));
                std::thread::sleep(pause);
                Vec::new()
            }
            Ok(Err(super::warm::Gone(running))) => {
                self.warm = None;
                self.rec.warm = false;
                for (host, job) in running {
                    self.poller.watch(Target::enrolled(self.root, &host), job);
                }
                Vec::new()
            }
        }
    }
}

/// Saves the record (keeping a stop request stored meanwhile, which it
/// then carries) and the host changes.
fn save(
    store: &dyn JobStore,
    id: &str,
    rec: &mut BatchRecord,
    changes: &[(String, HostUpdate)],
    done: bool,
    lease: f64,
) -> Result<(), EngineError> {
    rec.updated = crate::store::now();
    // Every save renews the lease.
    rec.lease_until = Some(rec.updated + lease);
    let encoded = rec.encode();
    // Saved only while this process still holds the batch: a driver that
    // lost its lease (its store was away longer than the lease, and another
    // overlord took the batch over) must not write over the new holder.
    let me = record::this_process();
    let mine = |r: &BatchRecord| r.driver == Some(me) && r.held_here();
    let merge = |stored: &[u8], new: &[u8]| match BatchRecord::decode(stored) {
        Ok(old) if !mine(&old) => stored.to_vec(),
        _ => record::merge_control(stored, new),
    };
    let saved = crate::store::api::retrying(&format!("batch {id}"), || {
        store.save_batch_with(id, &encoded, changes, done, &merge)
    })?;
    if let Ok(stored) = BatchRecord::decode(&saved) {
        if !mine(&stored) {
            return Err(EngineError::Held(stored.driver.map_or(0, |d| d.0)));
        }
        rec.control = stored.control;
    }
    Ok(())
}

/// Calls `method(minion job id)` on each of `hosts` that has a minion job.
fn with_jobs(
    root: &Root,
    rec: &BatchRecord,
    hosts: &[String],
    method: &str,
) -> Vec<(Target, String, Vec<Value>)> {
    hosts
        .iter()
        .filter_map(|h| {
            let job = rec.minion_jobs.get(h)?;
            Some((
                Target::enrolled(root, h),
                method.to_string(),
                vec![Value::String(job.clone())],
            ))
        })
        .collect()
}

/// Liveness answers (`jobs.find_job`) of hosts at their deadline. A job
/// no longer running may just have ended: its result, if there is one,
/// counts as its return.
fn liveness(
    poller: &mut Poller,
    root: &Root,
    method: &str,
    rec: &BatchRecord,
    ask: &[String],
    results: &mut BTreeMap<String, Value>,
) -> Vec<Event> {
    let mut events = Vec::new();
    let mut gone = Vec::new();
    for (host, reply) in poller.call_each(with_jobs(root, rec, ask, "jobs.find_job")) {
        let answer = match reply {
            Reply::Value(Value::Struct(m)) if !m.is_empty() => Liveness::Running,
            Reply::Value(Value::Struct(_)) => {
                gone.push(host);
                continue;
            }
            _ => Liveness::Silent,
        };
        events.push(Event::Liveness { host, answer });
    }
    let asks = gone
        .iter()
        .filter_map(|h| Some((Target::enrolled(root, h), rec.minion_jobs.get(h)?.clone())))
        .collect();
    for (host, answer) in poller.poll(asks, None) {
        events.push(match answer {
            Answer::Finished(value) => {
                let ok = common::outcome::ok(method, &value);
                results.insert(host.clone(), value);
                Event::Returned { host, ok }
            }
            _ => Event::Liveness {
                host,
                answer: Liveness::Gone,
            },
        });
    }
    events
}

/// The stored result of a host that ended without one of its own.
pub fn end_error(end: &HostEnd) -> Value {
    let (kind, why) = match end {
        HostEnd::Timeout(why) => ("func.overlord.BatchTimeout", why.clone()),
        HostEnd::Unreachable(why) => ("func.overlord.BatchUnreachable", why.clone()),
        HostEnd::Killed => (
            "func.overlord.BatchKilled",
            "killed by func batch stop --kill".to_string(),
        ),
        HostEnd::Abandoned(why) => ("func.overlord.BatchAbandoned", why.clone()),
        HostEnd::Refused(why) => (common::rpc::client::ALREADY_RAN, why.clone()),
        HostEnd::Done | HostEnd::Failed => ("func.overlord.BatchError", "no result recorded".to_string()),
    };
    remote_error(kind, &why, "")
}
