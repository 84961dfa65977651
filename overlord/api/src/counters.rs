//! The service's counters behind `GET /metrics` (`metrics.rs`): answers
//! by status, calls accepted, jobs and batches started.

use std::collections::BTreeMap;
use std::sync::atomic::AtomicU64;
use std::sync::Mutex;

/// The service's counters.
#[derive(Default)]
pub struct Metrics {
    by_status: Mutex<BTreeMap<u16, u64>>,
    /// `POST /calls` accepted (sync, async or batch).
    pub calls: AtomicU64,
    /// Async jobs and batches started.
    pub jobs: AtomicU64,
}

impl Metrics {
    /// Answers so far, by status.
    pub fn by_status(&self) -> BTreeMap<u16, u64> {
        self.by_status.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Counts an answer.
    pub fn answered(&self, status: u16) {
        *self
            .by_status
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(status)
            .or_default() += 1;
    }
}
