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
        .map_err(|e| e.to_string())
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
    let (meta, _) =
        load(store, id)?.ok_or_else(|| EngineError::Record("no such batch in the store".into()))?;
    // A request whose signature does not verify is refused: every host it
    // would dispatch fails with the reason, and nothing is sent.
    let signed = trust(store, root, id, &meta)?;
    // Only the claim's winner drives: two drivers never run one batch.
    let lease = crate::settings::batch_lease(root);
    let (mut rec, recovering) = match claim(store, id, record::this_process(), parent(), true, lease)? {
        Claim::Taken { record, resumed } => (*record, resumed),
        Claim::Complete => {
            return load(store, id)?
                .map(|(_, r)| r)
                .ok_or_else(|| EngineError::Record("no such batch in the store".into()))
        }
        Claim::Held((pid, _)) => return Err(EngineError::Held(pid)),
        Claim::Missing => return Err(EngineError::Record("no such batch in the store".into())),
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
    let mut poller = Poller::new(calling.clone(), limit)
        .map_err(EngineError::Credentials)?
        .relaying(root.clone(), delegation);
    // Each minion runs this signed request at most once, whatever the
    // store says (a host reset to pending and recovered is refused there).
    poller.set_request(crate::seal::request_id(&meta));
    let mut events = Vec::new();
    if recovering {
        // Hosts saved as in flight but without a minion job id were being
        // dispatched when the last driver died: never send them twice.
        for host in rec.state.active.keys() {
            if !rec.minion_jobs.contains_key(host) {
                events.push(Event::DispatchFailed {
                    host: host.clone(),
                    why: "its driver died while dispatching; not sent again, so it cannot run twice".into(),
                });
            }
        }
        for (host, job) in &rec.minion_jobs {
            if rec.state.active.contains_key(host) {
                poller.watch(Target::enrolled(root, host), job.clone());
            }
        }
        record::log_event(store, id, "recover", &rec);
    } else {
        record::log_event(store, id, "new", &rec);
    }
    let mut results: BTreeMap<String, Value> = BTreeMap::new();
    let mut reported: BTreeSet<String> = rec.state.ended.keys().cloned().collect();
    let mut round = 0;
    loop {
        // Ctrl-C on the `func` driving a sync batch: stop driving, and say
        // so in the record (not a mystery "driver gone"); in-flight hosts
        // keep running and `func batch recover` picks them up.
        if rec.mode == "sync" && cancelled() {
            rec.interrupted = true;
            save(store, id, &mut rec, &[], false, lease)?;
            record::log_event(store, id, "interrupted", &rec);
            return Ok(rec);
        }
        let now = crate::store::now();
        let before = rec.state.clone();
        let actions = rec.state.step(now, std::mem::take(&mut events));
        let mut changes = Vec::new();
        if !actions.kill.is_empty() {
            let calls = with_jobs(root, &rec, &actions.kill, "jobs.kill_job");
            poller.call_each(calls);
        }
        if let (false, Some(why)) = (actions.dispatch.is_empty(), &refused) {
            let v = remote_error(
                "func.overlord.UntrustedRequest",
                &format!("refused, nothing sent: {why}"),
                "",
            );
            for host in &actions.dispatch {
                results.insert(host.clone(), v.clone());
                events.push(Event::DispatchFailed {
                    host: host.clone(),
                    why: crate::values::error_text(&v),
                });
            }
        } else if !actions.dispatch.is_empty() {
            save(store, id, &mut rec, &[], false, lease)?;
            let params: Vec<Value> = meta.params();
            let calls = actions
                .dispatch
                .iter()
                .map(|h| {
                    (
                        Target::enrolled(root, h),
                        format!("async.{}", meta.function),
                        params.clone(),
                    )
                })
                .collect();
            for (host, reply) in poller.call_each(calls) {
                match reply {
                    Reply::Value(Value::String(job)) => {
                        changes.push((
                            host.clone(),
                            HostUpdate::Dispatched {
                                minion_job: job.clone(),
                            },
                        ));
                        poller.watch(Target::enrolled(root, &host), job.clone());
                        rec.minion_jobs.insert(host, job);
                    }
                    Reply::Value(v)
                        if crate::values::error_kind(&v) == Some(common::rpc::client::ALREADY_RAN) =>
                    {
                        results.insert(host.clone(), v.clone());
                        events.push(Event::Refused {
                            host,
                            why: crate::values::error_text(&v),
                        });
                    }
                    Reply::Value(v) | Reply::Fault(v) => {
                        results.insert(host.clone(), v.clone());
                        events.push(Event::DispatchFailed {
                            host,
                            why: crate::values::error_text(&v),
                        });
                    }
                    Reply::Unreachable(why) => events.push(Event::DispatchFailed { host, why }),
                }
            }
        }
        for (host, end) in &rec.state.ended {
            if reported.insert(host.clone()) {
                poller.unwatch(host);
                let value = results.get(host);
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
        let finished = actions.finished && events.is_empty();
        rec.complete = finished;
        if rec.state != before || !changes.is_empty() || finished {
            save(store, id, &mut rec, &changes, finished, lease)?;
            let event = match (finished, &rec.state.halted) {
                (true, Some(_)) => "halted",
                (true, None) => "complete",
                _ => "progress",
            };
            record::log_event(store, id, event, &rec);
            round = 0;
        } else if rec.lease_until.is_some_and(|until| until - now < lease / 2.0) {
            // Nothing changed, but the lease wants renewing.
            save(store, id, &mut rec, &[], false, lease)?;
        } else if let Ok(Some(stored)) = store.batch(id) {
            // Nothing changed: only look (no write) for a stop request.
            if let Ok(stored) = BatchRecord::decode(&stored) {
                rec.control = record::stronger(rec.control, stored.control);
            }
        }
        if finished {
            if let Some(why) = refused {
                let hosts: Vec<String> = rec.state.ended.keys().cloned().collect();
                crate::audit::Audit::new(root).line(
                    &meta.user,
                    None,
                    &format!("driver refused batch {id} ({}): {why}", meta.function),
                    &hosts,
                    403,
                );
                return Err(EngineError::Untrusted(format!(
                    "batch {id} refused, nothing sent: {why}"
                )));
            }
            return Ok(rec);
        }
        match rec.control {
            Some(Control::Kill) if rec.state.halted.as_deref() != Some(super::machine::KILLED) => {
                events.push(Event::Stop { kill: true })
            }
            Some(Control::Stop) if rec.state.halted.is_none() => events.push(Event::Stop { kill: false }),
            _ => {}
        }
        events.extend(liveness(
            &mut poller,
            root,
            &meta.function,
            &rec,
            &actions.ask,
            &mut results,
        ));
        // Ends arrive the moment they happen; the pause only paces looking
        // at deadlines and stop requests.
        let pause = if events.is_empty() {
            poll_pause(round).min(Duration::from_millis(100))
        } else {
            Duration::ZERO
        };
        let ends = poller.ended(pause);
        if ends.is_empty() && events.is_empty() {
            round += 1;
        }
        for (host, value) in ends {
            if rec.state.active.contains_key(&host) {
                events.push(Event::Returned {
                    host: host.clone(),
                    ok: common::outcome::ok(&meta.function, &value),
                });
                results.insert(host, value);
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
