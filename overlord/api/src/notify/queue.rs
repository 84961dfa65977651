//! What the watcher hands the notifier: each ended job, on a bounded queue
//! it never waits on; and what the notifier remembers of its deliveries.
//! Kept apart from the notifier's task (`mod.rs`), which needs the
//! service's state, so that the state can hold this.

use std::collections::HashMap;
use std::sync::Mutex;

use serde::Serialize;
use tokio::sync::mpsc;

use super::settings::Target;
use overlord::store::JobMeta;

/// Ended jobs waiting to be looked at, at most (more are dropped, said).
const QUEUE: usize = 10_000;

/// A job that ended, as the watcher saw it: only what a notice says (its
/// arguments stay in the store).
#[derive(Debug, Clone)]
pub struct Ended {
    pub id: String,
    pub function: String,
    pub spec: String,
    pub user: String,
    pub schedule: Option<String>,
    pub started: f64,
    pub ended: Option<f64>,
    pub hosts: usize,
    pub failed: usize,
}

impl Ended {
    /// Job `meta` over `hosts` hosts, `ok` of which ended well.
    pub fn of(meta: &JobMeta, hosts: usize, ok: usize) -> Self {
        Ended {
            id: meta.id.clone(),
            function: meta.function.clone(),
            spec: meta.spec.clone(),
            user: meta.user.clone(),
            schedule: meta.schedule.clone(),
            started: meta.started,
            ended: meta.ended,
            hosts,
            failed: hosts.saturating_sub(ok),
        }
    }
}

/// The last delivery to a target.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Delivery {
    pub job_id: String,
    /// When it ended (epoch seconds).
    pub at: f64,
    pub ok: bool,
    /// Why it failed (after every try).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub tries: usize,
}

/// The targets and their queue.
pub struct Notifier {
    pub targets: Vec<Target>,
    queue: mpsc::Sender<Ended>,
    /// The queue's reading end, until the notifier's task takes it.
    ended: Mutex<Option<mpsc::Receiver<Ended>>>,
    last: Mutex<HashMap<String, Delivery>>,
}

impl Notifier {
    /// The targets of `[notify.*]`, and their queue.
    pub fn new(targets: Vec<Target>) -> Self {
        let (queue, ended) = mpsc::channel(QUEUE);
        Notifier {
            targets,
            queue,
            ended: Mutex::new(Some(ended)),
            last: Mutex::new(HashMap::new()),
        }
    }

    /// The queue's reading end, for the notifier's task (`run`): once.
    pub fn take_queue(&self) -> Option<mpsc::Receiver<Ended>> {
        self.ended.lock().unwrap_or_else(|p| p.into_inner()).take()
    }

    /// Hands an ended job to the notifier; never waits (a full queue drops
    /// it, said in the log and the audit trail).
    pub fn ended(&self, audit: &overlord::audit::Audit, ended: Ended) {
        if self.targets.is_empty() {
            return;
        }
        let id = ended.id.clone();
        if self.queue.try_send(ended).is_err() {
            tracing::error!(job = %id, "notification queue full: this job's notices are dropped");
            audit.line(
                "func-api",
                None,
                &format!("notify {id}: dropped (queue full)"),
                &[],
                503,
            );
        }
    }
}

impl Notifier {
    /// Remembers the last delivery to target `name`.
    pub fn delivered(&self, name: String, delivery: Delivery) {
        self.last
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(name, delivery);
    }

    /// The last delivery to each target.
    pub fn last(&self) -> HashMap<String, Delivery> {
        self.last.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}
