//! What a batch persists (in the overlord store's `batches` table, after
//! every step) and its lifecycle events (new, progress, complete, halted,
//! recover), logged through the store.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::machine::BatchState;

/// A stop requested by `func batch stop` (the driver applies it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Control {
    Stop,
    Kill,
}

/// One batch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BatchRecord {
    pub state: BatchState,
    /// The minion job id of every dispatched host.
    pub minion_jobs: BTreeMap<String, String>,
    /// `sync` (driven by the `func` that started it) or `async`.
    pub mode: String,
    /// The process that holds the batch (pid, start time): its creator
    /// until it hands it to the driver it spawned, then that driver. Only
    /// `claim` changes it, in one store transaction.
    pub driver: Option<(u32, u64)>,
    pub control: Option<Control>,
    pub created: f64,
    pub updated: f64,
    /// The batch has ended (every host has a final state).
    pub complete: bool,
    /// Its sync driver stopped on Ctrl-C (hosts in flight kept running);
    /// `func batch recover` resumes it.
    #[serde(default)]
    pub interrupted: bool,
    /// A driver has started driving it (so the next one recovers it).
    #[serde(default)]
    pub started: bool,
    /// The host its holder runs on (`None`: this host, as records made
    /// before leases). A holder on another host cannot be looked at: its
    /// lease tells whether it lives.
    #[serde(default)]
    pub holder_host: Option<String>,
    /// Until when the holder's lease holds (epoch seconds): the driver
    /// renews it as it saves; past it, another overlord may take the batch.
    #[serde(default)]
    pub lease_until: Option<f64>,
    /// Its driver hands its starts to the root's func-api, whose watcher
    /// follows the started hosts and records their ends (`warm.rs`).
    #[serde(default)]
    pub warm: bool,
}

pub use common::process::overlord_host as this_host;

/// A process as both stores name it: pid and start time.
pub type Proc = (u32, u64);

/// This process.
pub fn this_process() -> Proc {
    let me = std::process::id();
    (me, common::process::start_time(me).unwrap_or(0))
}

/// What a claim of a batch found.
#[derive(Debug)]
pub enum Claim {
    /// The batch is now held by the claimant: the record as claimed, and
    /// whether a driver had started it before (the claimant resumes it).
    Taken { record: Box<BatchRecord>, resumed: bool },
    /// Another live process holds it.
    Held(Proc),
    /// It has ended: nothing to take.
    Complete,
    /// No such batch (or an unreadable record).
    Missing,
}

impl BatchRecord {
    pub fn encode(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }

    pub fn decode(bytes: &[u8]) -> Result<Self, String> {
        serde_json::from_slice(bytes).map_err(|e| format!("unreadable batch record: {e}"))
    }

    /// Whether `me` may take the batch: it holds it already, it was handed
    /// over by `parent` (the process that spawned `me`, while it still
    /// holds it), or its holder is gone. A live holder keeps it.
    pub fn claimable_by(&self, me: Proc, parent: Option<Proc>) -> bool {
        match self.driver {
            None => true,
            Some(holder) => {
                (self.held_here() && (holder == me || Some(holder) == parent)) || !self.holder_alive()
            }
        }
    }

    /// Whether its holder runs on this host.
    pub fn held_here(&self) -> bool {
        self.holder_host.as_deref().is_none_or(|h| h == this_host())
    }

    /// Whether its holder lives: on this host, its process; elsewhere, its lease.
    pub fn holder_alive(&self) -> bool {
        match self.driver {
            None => false,
            Some((pid, start)) if self.held_here() => common::process::alive(pid, start),
            Some(_) => self.lease_until.is_some_and(|until| until > crate::store::now()),
        }
    }

    /// Whether its driver is gone while the batch is unfinished.
    pub fn orphaned(&self) -> bool {
        !self.complete && !self.holder_alive()
    }

    /// Holds the batch for `me` on this host, with a lease of `lease` seconds.
    pub fn hold(&mut self, me: Proc, lease: f64) {
        self.driver = Some(me);
        self.holder_host = Some(this_host().to_string());
        self.lease_until = Some(crate::store::now() + lease);
    }
}

/// Takes the stored batch `bytes` for `me` if `claimable_by` allows:
/// the new bytes to store (if taken) and what was found. Run inside one
/// store write transaction (`Store::change_batch`), so two claimants are
/// ordered and the second sees the first as a live holder.
pub fn claim(
    bytes: &[u8],
    me: Proc,
    parent: Option<Proc>,
    driving: bool,
    lease: f64,
) -> (Option<Vec<u8>>, Claim) {
    let Ok(mut rec) = BatchRecord::decode(bytes) else {
        return (None, Claim::Missing);
    };
    if rec.complete {
        return (None, Claim::Complete);
    }
    if !rec.claimable_by(me, parent) {
        return (None, Claim::Held(rec.driver.unwrap_or((0, 0))));
    }
    let resumed = rec.started || !rec.state.active.is_empty() || !rec.state.ended.is_empty();
    rec.hold(me, lease);
    if driving {
        rec.interrupted = false;
        rec.started = true;
    }
    (
        Some(rec.encode()),
        Claim::Taken {
            record: Box::new(rec),
            resumed,
        },
    )
}

/// Hands a batch held by `from` to `to` (the driver `from` just spawned).
/// A batch `to` already claimed, or anyone else holds, is left alone.
pub fn hand_over(bytes: &[u8], from: Proc, to: Proc, lease: f64) -> Option<Vec<u8>> {
    let mut rec = BatchRecord::decode(bytes).ok()?;
    if rec.driver != Some(from) || !rec.held_here() {
        return None;
    }
    rec.hold(to, lease);
    Some(rec.encode())
}

/// Two stop requests as one: a kill wins over a drain.
pub fn stronger(a: Option<Control>, b: Option<Control>) -> Option<Control> {
    match (a, b) {
        (Some(Control::Kill), _) | (_, Some(Control::Kill)) => Some(Control::Kill),
        (a, b) => a.or(b),
    }
}

/// Keeps a stop request stored meanwhile when the driver saves its record.
pub fn merge_control(stored: &[u8], new: &[u8]) -> Vec<u8> {
    match (BatchRecord::decode(stored), BatchRecord::decode(new)) {
        (Ok(old), Ok(mut fresh)) => {
            fresh.control = stronger(old.control, fresh.control);
            fresh.encode()
        }
        _ => new.to_vec(),
    }
}

/// Appends one lifecycle event to the store's event log; a failure to log
/// is said, not fatal (the batch itself is saved).
pub fn log_event(store: &dyn crate::store::JobStore, id: &str, event: &str, record: &BatchRecord) {
    let line = serde_json::json!({
        "time": crate::store::now(),
        "job_id": id,
        "event": event,
        "counts": record.state.counts(),
        "halted": record.state.halted,
    });
    if let Err(e) = store.log_batch_event(id, &line) {
        crate::log::line(&format!("batch {id}: event {event} not logged: {e}"));
    }
}
