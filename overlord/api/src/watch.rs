//! The watcher: follows every unfinished job and batch in the store —
//! whichever front end started it, the `func` CLI included — records each
//! host's result the moment it ends, and announces it on the bus.
//!
//! - New jobs are found when the store changes (the embedded store's file
//!   time and size, looked at every 200 ms; PostgreSQL's notifications):
//!   `new`.
//! - For each host of an unfinished job that is running on its minion, a
//!   task long-polls `jobs.wait_job` over the warm pool and the result is
//!   recorded in the store, so a `--nopoll` job ends without anyone running
//!   `job_status`. Batch jobs are left to their drivers, which record,
//!   unless a driver hands its starts here (a warm func): then its hosts
//!   are followed as a job's are, and the driver reads their ends.
//! - Whoever recorded a host's result (this watcher, a `func job_status`,
//!   a batch driver), the change is seen in the store: `ret/<host>`, and
//!   `complete` once every host is finished.
//! - Batch lifecycle events are read from the store's event log as the
//!   drivers append them: `batch/<id>/<event>` with Salt's payloads.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use common::Value;
use serde_json::json;

use super::bus::MAX_RESULT_BYTES;
use super::state::Api;
use overlord::jobs::{decode_result, encode_result};
use overlord::store::{HostState, HostUpdate, JobMeta, JobRecord, JobStore};
use overlord::targets::Target;

/// How often the store's file is looked at.
const TICK: Duration = Duration::from_millis(200);
/// How often while a warm batch is followed: its driver records each
/// wave's starts there, and its hosts are followed from then on (a wave
/// of short jobs would otherwise wait for the tick to be followed, and the
/// next wave on them: half the machine idle, at 200 hosts a batch of
/// `test.ping` took twice as long as the driver following them itself).
const WARM_TICK: Duration = Duration::from_millis(10);
/// Jobs looked at per page when scanning.
const PAGE: usize = 200;
/// A job whose start is this much older than the newest seen is not new.
const SLACK: f64 = 120.0;

/// The running watcher.
pub struct Watcher {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Watcher {
    pub fn stop(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Starts watching (call inside the service's runtime).
pub fn start(api: Arc<Api>) -> Watcher {
    let stop = Arc::new(AtomicBool::new(false));
    let rt = tokio::runtime::Handle::current();
    let flag = Arc::clone(&stop);
    let thread = std::thread::Builder::new()
        .name("func-api-watch".into())
        .spawn(move || State::new(api, rt).run(&flag))
        .ok();
    Watcher { stop, thread }
}

struct Tracked {
    function: String,
    hosts: Arc<[String]>,
    finished: BTreeSet<String>,
    failed: BTreeSet<String>,
    batch: bool,
    /// A batch whose driver hands its starts here (its hosts followed here).
    warm: bool,
    started: f64,
    /// Long-polls in progress, per host.
    polls: HashMap<String, tokio::task::AbortHandle>,
}

struct State {
    api: Arc<Api>,
    rt: tokio::runtime::Handle,
    tracked: HashMap<String, Tracked>,
    /// Finished jobs seen lately (id → start), so they are not new again.
    seen: HashMap<String, f64>,
    newest: f64,
    stamp: Option<(SystemTime, u64)>,
    changes: overlord::store::ChangeWatch,
    ends_tx: mpsc::Sender<(String, String, Value)>,
    ends_rx: mpsc::Receiver<(String, String, Value)>,
    batch_log: u64,
    /// When the service started (epoch seconds).
    since: f64,
    /// The store failed a scan or a write of results: scan again at the
    /// next tick, whether or not it announces a change (it may come back
    /// without one: a PostgreSQL restart), so no host is left unasked.
    rescan: bool,
    /// When the store's failure was last said (once a minute).
    said: Option<std::time::Instant>,
}

impl State {
    fn new(api: Arc<Api>, rt: tokio::runtime::Handle) -> Self {
        let (ends_tx, ends_rx) = mpsc::channel();
        let batch_log = api.store.batch_events(None).map_or(0, |(_, end)| end);
        let since = api.started;
        State {
            changes: overlord::store::ChangeWatch::new(&api.store),
            api,
            rt,
            tracked: HashMap::new(),
            seen: HashMap::new(),
            newest: 0.0,
            stamp: None,
            ends_tx,
            ends_rx,
            batch_log,
            since,
            rescan: false,
            said: None,
        }
    }

    fn run(mut self, stop: &AtomicBool) {
        // What is unfinished now is followed; history is not announced.
        let mut first = true;
        let mut events_read = std::time::Instant::now();
        while !stop.load(Ordering::Relaxed) {
            let recorded = self.record_ends();
            let stamp = self.changes.stamp();
            if first || recorded || stamp != self.stamp || self.rescan {
                match self.scan(first) {
                    Ok(()) => {
                        first = false;
                        self.stamp = stamp;
                        if self.rescan {
                            tracing::info!("watcher: the job store answers again; following every job");
                        }
                        self.rescan = false;
                        self.said = None;
                    }
                    Err(e) => self.store_failed(&e),
                }
            }
            // The events' log at the usual pace, however fast the store is looked at.
            if events_read.elapsed() >= TICK {
                self.batch_events();
                events_read = std::time::Instant::now();
            }
        }
        for t in self.tracked.values() {
            for poll in t.polls.values() {
                poll.abort();
            }
        }
    }

    /// The store failed: said once a minute; everything is asked again once
    /// it answers.
    fn store_failed(&mut self, e: &dyn std::fmt::Display) {
        self.rescan = true;
        if self
            .said
            .is_none_or(|t| t.elapsed() >= std::time::Duration::from_secs(60))
        {
            tracing::warn!(error = %e, "watcher: job store; results are asked again once it answers");
            self.said = Some(std::time::Instant::now());
        }
    }

    /// Waits a tick for hosts that ended and records them; whether any were.
    fn record_ends(&mut self) -> bool {
        let mut ends: HashMap<String, Vec<(String, HostUpdate)>> = HashMap::new();
        let tick = match self.tracked.values().any(|t| t.warm) {
            true => WARM_TICK,
            false => TICK,
        };
        if let Ok(end) = self.ends_rx.recv_timeout(tick) {
            let mut take = |(job, host, value): (String, String, Value)| {
                let update = HostUpdate::Finished {
                    result_xml: encode_result(value),
                };
                ends.entry(job).or_default().push((host, update));
            };
            take(end);
            while let Ok(end) = self.ends_rx.try_recv() {
                take(end);
            }
        }
        let any = !ends.is_empty();
        for (job, changes) in ends {
            // Only hosts still running there: a result someone else
            // recorded meanwhile stays.
            let still: Vec<(String, HostUpdate)> = match self.api.store.load(&job) {
                Ok(Some(rec)) => changes
                    .into_iter()
                    .filter(|(h, _)| rec.hosts.get(h).is_some_and(|e| e.state == HostState::Dispatched))
                    .collect(),
                Ok(None) => Vec::new(),
                Err(e) => {
                    self.store_failed(&e);
                    if let Some(t) = self.tracked.get_mut(&job) {
                        t.polls.clear();
                    }
                    continue;
                }
            };
            if let Some(t) = self.tracked.get_mut(&job) {
                for (h, _) in &still {
                    t.polls.remove(h);
                }
            }
            if !still.is_empty() {
                if let Err(e) = self.api.store.update(&job, &still, false) {
                    self.store_failed(&e);
                    if let Some(t) = self.tracked.get_mut(&job) {
                        t.polls.clear();
                    }
                }
            }
        }
        any
    }

    /// Finds new jobs, then brings every followed job up to date.
    fn scan(&mut self, first: bool) -> Result<(), overlord::store::StoreError> {
        let api = Arc::clone(&self.api);
        let store = &api.store;
        let mut cursor = None;
        let mut found: Vec<JobMeta> = Vec::new();
        'pages: loop {
            let page = store.list_page(PAGE, cursor.as_ref())?;
            let Some(last) = page.last() else { break };
            cursor = Some((last.started, last.id.clone()));
            for meta in page {
                if !first && meta.started < self.newest - SLACK {
                    break 'pages;
                }
                if self.tracked.contains_key(&meta.id) || self.seen.contains_key(&meta.id) {
                    continue;
                }
                found.push(meta);
            }
        }
        for meta in found.into_iter().rev() {
            self.newest = self.newest.max(meta.started);
            // History is what began before the service did: a job started
            // while the first scan was on its way is new, whenever that
            // scan ran.
            let first = first && meta.started < self.since;
            if first && meta.ended.is_some() {
                self.seen.insert(meta.id.clone(), meta.started);
                continue;
            }
            self.follow(meta, !first);
        }
        let horizon = self.newest - 2.0 * SLACK;
        self.seen.retain(|_, started| *started >= horizon);
        let ids: Vec<String> = self.tracked.keys().cloned().collect();
        for chunk in ids.chunks(PAGE) {
            let records = store.load_many(chunk)?;
            let present: BTreeSet<&str> = records.iter().map(|r| r.meta.id.as_str()).collect();
            for gone in chunk.iter().filter(|id| !present.contains(id.as_str())) {
                // Expired or deleted: nothing more will come.
                if let Some(t) = self.tracked.remove(gone) {
                    t.polls.values().for_each(tokio::task::AbortHandle::abort);
                }
            }
            for rec in records {
                self.update(rec);
            }
        }
        Ok(())
    }

    /// Starts following a job (announcing it if `announce`).
    fn follow(&mut self, meta: JobMeta, announce: bool) {
        let hosts: Arc<[String]> = match self.api.store.load(&meta.id) {
            Ok(Some(rec)) => rec.hosts.keys().cloned().collect(),
            _ => return,
        };
        if announce {
            let data = json!({"function": meta.function, "hosts": &hosts[..]});
            self.api.bus.publish(
                format!("job/{}/new", meta.id),
                &data,
                &meta.function,
                Arc::clone(&hosts),
            );
        }
        self.tracked.insert(
            meta.id.clone(),
            Tracked {
                function: meta.function,
                hosts,
                finished: BTreeSet::new(),
                failed: BTreeSet::new(),
                batch: meta.batch,
                warm: false,
                started: meta.started,
                polls: HashMap::new(),
            },
        );
    }

    /// Announces what changed in a followed job and starts long-polls for
    /// its running hosts.
    fn update(&mut self, mut rec: JobRecord) {
        let id = rec.meta.id.clone();
        if !rec.meta.dispatched && !rec.meta.batch && overlord::jobs::driver_gone(&rec.meta) {
            let lost = common::xmlrpc::remote_error(
                "func.overlord.DriverDied",
                "the job's dispatch driver ended before calling this host",
                "",
            );
            if overlord::jobs::abandon_pending(&self.api.store, &rec, lost).is_ok() {
                match self.api.store.load(&id) {
                    Ok(Some(r)) => rec = r,
                    _ => return,
                }
            }
        }
        let Some(t) = self.tracked.get_mut(&id) else {
            return;
        };
        publish_ends(&self.api, t, &rec);
        if t.finished.len() >= t.hosts.len() || rec.meta.ended.is_some() {
            let failed: Vec<&String> = t.failed.iter().collect();
            let data = json!({"ok": failed.is_empty(), "failed": failed});
            if let Some(n) = &self.api.notifier {
                // Only a host that finished well is ok: one that never
                // finished (the job ended without it) failed too.
                let ok = t
                    .hosts
                    .iter()
                    .filter(|h| t.finished.contains(*h) && !t.failed.contains(*h))
                    .count();
                n.ended(
                    &self.api.audit,
                    super::notify::Ended::of(&rec.meta, t.hosts.len(), ok),
                );
            }
            self.api.bus.publish(
                format!("job/{id}/complete"),
                &data,
                &t.function,
                Arc::clone(&t.hosts),
            );
            if let Some(t) = self.tracked.remove(&id) {
                t.polls.values().for_each(tokio::task::AbortHandle::abort);
                self.seen.insert(id, t.started);
            }
            return;
        }
        // A batch is its driver's to follow, unless the driver hands its
        // starts here (a warm func: `overlord::batch::warm`).
        if t.batch && !self.warm_batch(&id) {
            return;
        }
        if let Some(t) = self.tracked.get_mut(&id) {
            t.warm = t.batch;
        }
        self.follow_in_flight(&rec);
    }

    /// Whether batch `id`'s driver leaves following its hosts to this
    /// service (its record says so; an unreadable one is the driver's).
    fn warm_batch(&self, id: &str) -> bool {
        let stored = self.api.store.batch(id).ok().flatten();
        stored
            .and_then(|bytes| overlord::batch::record::BatchRecord::decode(&bytes).ok())
            .is_some_and(|r| r.warm && !r.complete)
    }

    /// Follows each host of `rec` still running: a long-poll on the pool
    /// per minion job, one follower per relay job for hosts behind a relay.
    fn follow_in_flight(&mut self, rec: &JobRecord) {
        let id = rec.meta.id.clone();
        let Some(t) = self.tracked.get_mut(&id) else {
            return;
        };
        // Hosts behind a relay: one follower per relay job (keyed by it).
        let mut relayed: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (host, job) in rec.in_flight() {
            if overlord::relay::parse_job_ref(job).is_some() {
                if !t.polls.contains_key(job) {
                    relayed.entry(job.to_string()).or_default().push(host.to_string());
                }
                continue;
            }
            if t.polls.contains_key(host) {
                continue;
            }
            let target = Target::enrolled(&self.api.root, host);
            let (pool, tx) = (Arc::clone(&self.api.pool), self.ends_tx.clone());
            let (jid, host_name, mjob) = (id.clone(), host.to_string(), job.to_string());
            let task = self.rt.spawn(async move {
                let value = pool.wait_end(&target, &mjob).await;
                let _ = tx.send((jid, host_name, value));
            });
            t.polls.insert(host.to_string(), task.abort_handle());
        }
        for (job, hosts) in relayed {
            let (root, tx, jid, rjob) = (
                self.api.root.clone(),
                self.ends_tx.clone(),
                id.clone(),
                job.clone(),
            );
            let task = self.rt.spawn(follow_relay_job(root, jid, rjob, hosts, tx));
            t.polls.insert(job, task.abort_handle());
        }
    }

    /// Announces batch lifecycle events logged since the last look.
    fn batch_events(&mut self) {
        let (lines, next) = match self.api.store.batch_events(Some(self.batch_log)) {
            Ok(found) => found,
            Err(e) => {
                tracing::warn!(error = %e, "watcher: batch events");
                return;
            }
        };
        self.batch_log = next;
        for ev in lines {
            let (Some(id), Some(event)) = (ev["job_id"].as_str(), ev["event"].as_str()) else {
                continue;
            };
            let (function, hosts): (String, Arc<[String]>) = match self.tracked.get(id) {
                Some(t) => (t.function.clone(), Arc::clone(&t.hosts)),
                None => match self.api.store.load(id) {
                    Ok(Some(r)) => (r.meta.function.clone(), r.hosts.keys().cloned().collect()),
                    _ => (String::new(), Arc::from(Vec::new())),
                },
            };
            let (tag, data) = salt_batch_event(id, event, &ev);
            self.api.bus.publish(tag, &data, &function, hosts);
        }
    }
}

/// A batch log line as Salt 3008's event: progress `{total, completed,
/// active, pending, failed, iter}`, halted `{reason, abandoned_active,
/// abandoned_pending}`; the others carry the counts.
pub fn salt_batch_event(id: &str, event: &str, ev: &serde_json::Value) -> (String, serde_json::Value) {
    let c = &ev["counts"];
    let n = |k: &str| c[k].as_u64().unwrap_or(0);
    let ended = [
        "done",
        "failed",
        "timeout",
        "unreachable",
        "refused",
        "killed",
        "abandoned",
    ];
    let completed: u64 = ended.iter().map(|k| n(k)).sum();
    let failed: u64 = ended.iter().skip(1).map(|k| n(k)).sum();
    let total = completed + n("active") + n("pending");
    let tag = match event {
        // A sync batch stopped by Ctrl-C is halted, as Salt would say.
        "interrupted" => "halted",
        other => other,
    };
    let data = match tag {
        "halted" => json!({
            "reason": ev["halted"].as_str().unwrap_or(if event == "interrupted" { "interrupted" } else { "stopped" }),
            "abandoned_active": n("active"),
            "abandoned_pending": n("pending"),
        }),
        _ => json!({
            "total": total, "completed": completed, "active": n("active"),
            "pending": n("pending"), "failed": failed, "iter": ev["iter"].as_u64().unwrap_or(completed),
            "counts": c,
        }),
    };
    (format!("batch/{id}/{tag}"), data)
}

/// Follows relay job `job` (`relay:NAME:ID`) for `hosts` of job `id`: each
/// host's result is sent as it arrives; a relay not reached is asked
/// again after a pause (the job's own end, or its kill, ends this).
async fn follow_relay_job(
    root: common::paths::Root,
    id: String,
    job: String,
    mut hosts: Vec<String>,
    ends: mpsc::Sender<(String, String, Value)>,
) {
    let first = std::time::Duration::from_millis(200);
    let mut pauses = overlord::jobs::follow::pauses(first);
    while !hosts.is_empty() {
        let asks = hosts.iter().map(|h| (h.clone(), job.clone())).collect();
        let got = overlord::relay::collect(&root, asks, 20.0).await;
        let mut reached = false;
        for (host, answer) in got {
            match answer {
                Ok(Some(value)) => {
                    reached = true;
                    hosts.retain(|h| *h != host);
                    let _ = ends.send((id.clone(), host, value));
                }
                Ok(None) => reached = true,
                Err(_) => {}
            }
        }
        if reached {
            pauses = overlord::jobs::follow::pauses(first);
        } else {
            let pause = pauses.next().unwrap_or(overlord::jobs::follow::MAX_PAUSE);
            tokio::time::sleep(pause).await;
        }
    }
}

/// Publishes `job/ID/ret/HOST` for each host of `rec` newly finished.
fn publish_ends(api: &Api, t: &mut Tracked, rec: &JobRecord) {
    let id = &rec.meta.id;
    for (host, entry) in &rec.hosts {
        if entry.state != HostState::Finished || t.finished.contains(host) {
            continue;
        }
        t.finished.insert(host.clone());
        if let Some(poll) = t.polls.remove(host) {
            poll.abort();
        }
        let value = entry
            .result_xml
            .as_deref()
            .map(decode_result)
            .unwrap_or(Value::Nil);
        let ok = common::outcome::failure(&t.function, &value).is_none();
        if !ok {
            t.failed.insert(host.clone());
        }
        let result = overlord::values::to_json(&value);
        let data = if result.to_string().len() > MAX_RESULT_BYTES {
            json!({"result": null, "ok": ok, "truncated": true})
        } else {
            json!({"result": result, "ok": ok})
        };
        api.bus.publish(
            format!("job/{id}/ret/{host}"),
            &data,
            &t.function,
            Arc::clone(&t.hosts),
        );
    }
}
