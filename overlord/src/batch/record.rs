//! What a batch persists (in the overlord store's `batches` table, after
//! every step) and the lifecycle event log (`var/log/func/batch-events.log`,
//! one JSON line per event: new, progress, complete, halted, recover).

use std::collections::BTreeMap;
use std::io::Write;

use common::paths::Root;
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
    /// The driving process (pid, start time).
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
}

impl BatchRecord {
    pub fn encode(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }

    pub fn decode(bytes: &[u8]) -> Result<Self, String> {
        serde_json::from_slice(bytes).map_err(|e| format!("unreadable batch record: {e}"))
    }

    /// Whether its driver is gone while the batch is unfinished.
    pub fn orphaned(&self) -> bool {
        !self.complete
            && !self
                .driver
                .is_some_and(|(pid, start)| common::process::alive(pid, start))
    }
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

/// Appends one lifecycle event.
pub fn log_event(root: &Root, id: &str, event: &str, record: &BatchRecord) {
    let line = serde_json::json!({
        "time": crate::store::now(),
        "job_id": id,
        "event": event,
        "counts": record.state.counts(),
        "halted": record.state.halted,
    });
    let _ = common::private::private_dir(&root.log_dir());
    if let Ok(mut f) = common::private::append(&root.log_dir().join("batch-events.log")) {
        // One write per line: appends of small lines do not interleave.
        let _ = f.write_all(format!("{line}\n").as_bytes());
    }
}
