//! What one caller may consume on a minion, so that no caller starves the
//! others, the overlord or funcd's own work (the job sweep, result intake).
//!
//! - Methods that run on a blocking thread: at most `max_calls_per_caller`
//!   at once per caller, `max_calls_others` for all non-overlord callers
//!   together, `max_calls_overlord` for the overlord. The runtime's blocking
//!   pool is larger than their sum, so capacity is always left for funcd's
//!   own work. Over a limit the call is answered at once with a
//!   `func.minion.Busy` REMOTE_ERROR: there is no queue to grow.
//! - Request bytes in flight: a budget for all non-overlord callers and one
//!   for the overlord, taken as the body is read; a request that cannot get
//!   its bytes within the body deadline is refused. The ACL is decided from
//!   the method name before the rest of a body is read (`server.rs`).
//! - Connections per source address, before TLS (`common::rpc::accept`).
//! - Async jobs: running jobs and stored bytes (request + result) per
//!   caller (`jobs/`).
//!
//! Every limit is a `minion.conf` key; the defaults are safe for a fleet of
//! thousands without configuration.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use common::config::{ConfigError, Ini};

use crate::acl::Caller;
use crate::method::MethodError;

/// Exception type of a call refused because its caller is over a limit.
pub const BUSY: &str = "func.minion.Busy";

/// The limits of `minion.conf` (`[main]`), with their defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quotas {
    /// Blocking methods running at once for one non-overlord caller.
    pub calls_per_caller: usize,
    /// Blocking methods running at once for all non-overlord callers.
    pub calls_others: usize,
    /// Blocking methods running at once for the overlord.
    pub calls_overlord: usize,
    /// Request bytes in flight for all non-overlord callers together.
    pub request_bytes_others: usize,
    /// Request bytes in flight for the overlord.
    pub request_bytes_overlord: usize,
    /// Connections open at once from one source address (before TLS).
    pub connections_per_address: usize,
    /// Running async jobs of one non-overlord caller.
    pub jobs_per_caller: u64,
    /// Running async jobs of the overlord.
    pub jobs_overlord: u64,
    /// Bytes of kept job requests and results of one non-overlord caller.
    pub job_bytes_per_caller: u64,
    /// Bytes of kept job requests and results of the overlord.
    pub job_bytes_overlord: u64,
}

const MIB: u64 = 1 << 20;

impl Default for Quotas {
    fn default() -> Self {
        Self {
            calls_per_caller: 16,
            calls_others: 64,
            calls_overlord: 256,
            request_bytes_others: 32 * MIB as usize,
            request_bytes_overlord: 64 * MIB as usize,
            connections_per_address: 64,
            jobs_per_caller: 100,
            jobs_overlord: 10_000,
            job_bytes_per_caller: 64 * MIB,
            job_bytes_overlord: 4096 * MIB,
        }
    }
}

/// Threads of funcd's blocking pool: the callers' limits together stay
/// well below it, so the sweep and result intake always find a thread.
pub fn blocking_threads(q: &Quotas) -> usize {
    (q.calls_overlord + q.calls_others + 64).max(512)
}

impl Quotas {
    /// Reads the limits from `[main]`; a missing key keeps its default.
    pub fn load(ini: &Ini) -> Result<Self, ConfigError> {
        let d = Self::default();
        let count = |key: &str, default: usize| -> Result<usize, ConfigError> {
            Ok(ini
                .u64("main", key)?
                .map_or(default, |v| v.clamp(1, 1 << 20) as usize))
        };
        let bytes = |key: &str, default: u64| -> Result<u64, ConfigError> {
            Ok(ini.u64("main", key)?.map_or(default, |v| v.max(1)))
        };
        Ok(Self {
            calls_per_caller: count("max_calls_per_caller", d.calls_per_caller)?,
            calls_others: count("max_calls_others", d.calls_others)?,
            calls_overlord: count("max_calls_overlord", d.calls_overlord)?,
            request_bytes_others: bytes("max_request_bytes_others", d.request_bytes_others as u64)? as usize,
            request_bytes_overlord: bytes("max_request_bytes_overlord", d.request_bytes_overlord as u64)?
                as usize,
            connections_per_address: count("max_connections_per_address", d.connections_per_address)?,
            jobs_per_caller: bytes("max_jobs_per_caller", d.jobs_per_caller)?,
            jobs_overlord: bytes("max_jobs_overlord", d.jobs_overlord)?,
            job_bytes_per_caller: bytes("max_job_bytes_per_caller", d.job_bytes_per_caller)?,
            job_bytes_overlord: bytes("max_job_bytes_overlord", d.job_bytes_overlord)?,
        })
    }

    /// (running jobs, kept bytes) that `who` may have.
    pub fn jobs_of(&self, who: &Caller) -> (u64, u64) {
        match who.overlord {
            true => (self.jobs_overlord, self.job_bytes_overlord),
            false => (self.jobs_per_caller, self.job_bytes_per_caller),
        }
    }
}

/// Counts of blocking calls in progress.
#[derive(Debug, Default)]
struct Running {
    per_caller: HashMap<String, usize>,
    others: usize,
    overlord: usize,
}

/// Admits blocking calls under the limits.
#[derive(Debug)]
pub struct CallGate {
    quotas: Quotas,
    running: Mutex<Running>,
}

/// A blocking call's place; given back when dropped.
#[derive(Debug)]
pub struct CallPermit {
    gate: Arc<CallGate>,
    caller: Option<String>,
}

impl CallGate {
    pub fn new(quotas: Quotas) -> Arc<Self> {
        Arc::new(Self {
            quotas,
            running: Mutex::new(Running::default()),
        })
    }

    /// A place for one blocking call of `who`, or a `Busy` error saying
    /// which limit it is over.
    pub fn enter(self: &Arc<Self>, who: &Caller) -> Result<CallPermit, MethodError> {
        let q = &self.quotas;
        let mut r = self.running.lock().unwrap_or_else(|p| p.into_inner());
        if who.overlord {
            if r.overlord >= q.calls_overlord {
                return Err(busy(format!(
                    "the overlord already runs {} calls at once on this minion (max_calls_overlord)",
                    q.calls_overlord
                )));
            }
            r.overlord += 1;
            return Ok(CallPermit {
                gate: Arc::clone(self),
                caller: None,
            });
        }
        let mine = r.per_caller.get(&who.key).copied().unwrap_or(0);
        if mine >= q.calls_per_caller {
            return Err(busy(format!(
                "{} already runs {mine} calls at once (max_calls_per_caller = {})",
                who.key, q.calls_per_caller
            )));
        }
        if r.others >= q.calls_others {
            return Err(busy(format!(
                "callers other than the overlord already run {} calls at once (max_calls_others)",
                q.calls_others
            )));
        }
        r.others += 1;
        *r.per_caller.entry(who.key.clone()).or_default() += 1;
        Ok(CallPermit {
            gate: Arc::clone(self),
            caller: Some(who.key.clone()),
        })
    }
}

impl Drop for CallPermit {
    fn drop(&mut self) {
        let mut r = self.gate.running.lock().unwrap_or_else(|p| p.into_inner());
        match self.caller.take() {
            None => r.overlord = r.overlord.saturating_sub(1),
            Some(key) => {
                r.others = r.others.saturating_sub(1);
                if let Some(n) = r.per_caller.get_mut(&key) {
                    *n -= 1;
                    if *n == 0 {
                        r.per_caller.remove(&key);
                    }
                }
            }
        }
    }
}

/// A `Busy` error value.
pub fn busy(message: String) -> MethodError {
    MethodError::new(BUSY, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_caller_and_shared_limits_and_the_overlord_apart() {
        let gate = CallGate::new(Quotas {
            calls_per_caller: 2,
            calls_others: 3,
            calls_overlord: 1,
            ..Quotas::default()
        });
        let (a, b, o) = (
            Caller::new("a-1", false),
            Caller::new("b-1", false),
            Caller::new("overlord-1", true),
        );
        let a1 = gate.enter(&a).unwrap();
        let _a2 = gate.enter(&a).unwrap();
        let e = gate.enter(&a).unwrap_err();
        assert!(
            e.kind == BUSY && e.message.contains("max_calls_per_caller"),
            "{e:?}"
        );
        let _b1 = gate.enter(&b).unwrap();
        let e = gate.enter(&b).unwrap_err();
        assert!(e.message.contains("max_calls_others"), "{e:?}");
        let o1 = gate.enter(&o).expect("the overlord has its own capacity");
        assert!(gate.enter(&o).is_err());
        drop((a1, o1));
        gate.enter(&b).expect("a place was given back");
        gate.enter(&o).expect("and the overlord's");
    }

    #[test]
    fn the_pool_leaves_room_for_funcds_own_work() {
        let q = Quotas::default();
        assert!(blocking_threads(&q) > q.calls_overlord + q.calls_others);
    }
}
