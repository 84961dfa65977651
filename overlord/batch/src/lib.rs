//! The batch decision logic as a pure state machine (DESIGN §7): state and
//! events in, actions out, the clock supplied by the caller, no I/O. The
//! drivers (sync in `func`, async in `func __batch`) only do I/O around it.
//!
//! Sliding window (Salt 3008's semantics): at most `size` hosts in flight, a
//! finished host frees its slot after `batch_wait` seconds, FIFO over the
//! sorted host list. Unlike Salt 3008's async driver, a host at its deadline
//! is first asked whether its job still runs (`jobs.find_job`); a running job
//! extends the deadline by another timeout.

use std::collections::{BTreeMap, VecDeque};

use serde::{Deserialize, Serialize};

/// How a host ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum HostEnd {
    Done,
    Failed,
    /// No result by its deadline, and no proof its job still runs.
    Timeout(String),
    /// The call could not be sent.
    Unreachable(String),
    Killed,
    /// Never dispatched: the batch was halted first.
    Abandoned(String),
    /// The minion refused the call: this signed request already ran there
    /// (a host the store put back to pending), so it is not run twice.
    Refused(String),
}

impl HostEnd {
    pub fn name(&self) -> &'static str {
        match self {
            HostEnd::Done => "done",
            HostEnd::Failed => "failed",
            HostEnd::Timeout(_) => "timeout",
            HostEnd::Unreachable(_) => "unreachable",
            HostEnd::Killed => "killed",
            HostEnd::Abandoned(_) => "abandoned",
            HostEnd::Refused(_) => "refused",
        }
    }

    /// Whether this end makes the batch's exit status non-zero.
    pub fn is_failure(&self) -> bool {
        matches!(
            self,
            HostEnd::Failed | HostEnd::Timeout(_) | HostEnd::Unreachable(_) | HostEnd::Refused(_)
        )
    }
}

/// `halted` after `batch stop --kill`.
pub const KILLED: &str = "stopped (kill)";

/// A host in flight.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InFlight {
    pub dispatched: f64,
    pub deadline: f64,
    /// A liveness question is out (asked at the deadline, not answered yet).
    pub asked: bool,
}

/// The whole batch state; persisted after every step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BatchState {
    pub size: usize,
    pub batch_wait: f64,
    pub failhard: bool,
    /// Per-host deadline after dispatch (and after each liveness answer).
    pub timeout: f64,
    pub pending: VecDeque<String>,
    pub active: BTreeMap<String, InFlight>,
    pub ended: BTreeMap<String, HostEnd>,
    /// Cooldowns: each entry holds a slot until its time.
    pub wait: Vec<f64>,
    /// Why no new host is dispatched any more (failhard, stop, kill).
    pub halted: Option<String>,
}

/// What happened since the last step.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// A host's result arrived (`ok`: not an error).
    Returned { host: String, ok: bool },
    /// The call to a host could not be made.
    DispatchFailed { host: String, why: String },
    /// The minion refused the call: the signed request already ran there.
    Refused { host: String, why: String },
    /// The answer to a liveness question.
    Liveness { host: String, answer: Liveness },
    /// `batch stop` (drain) or `batch stop --kill`.
    Stop { kill: bool },
}

#[derive(Debug, Clone, PartialEq)]
pub enum Liveness {
    Running,
    /// The minion says the job is not running (and it left no result).
    Gone,
    /// No answer.
    Silent,
}

/// What the driver must do now.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Actions {
    pub dispatch: Vec<String>,
    pub ask: Vec<String>,
    pub kill: Vec<String>,
    /// Every host has ended.
    pub finished: bool,
}

/// Batch size from `N` or `P%` of `hosts` targets: P% is floored, at least 1.
pub fn size(spec: &str, hosts: usize) -> Result<usize, String> {
    let spec = spec.trim();
    if let Some(pct) = spec.strip_suffix('%') {
        let p: f64 = pct
            .parse()
            .ok()
            .filter(|p: &f64| p.is_finite() && *p > 0.0)
            .ok_or_else(|| format!("batch {spec:?}: a percentage must be a positive number"))?;
        return Ok(((p / 100.0 * hosts as f64).floor() as usize).clamp(1, hosts.max(1)));
    }
    // A window wider than the hosts is all of them (150% of 3 is 3).
    match spec.parse::<usize>() {
        Ok(0) => Err("batch 0: the batch size must be at least 1".into()),
        Ok(n) => Ok(n.min(hosts.max(1))),
        Err(_) => Err(format!("batch {spec:?}: expected a number N or a percentage P%")),
    }
}

impl BatchState {
    /// A new batch over `hosts` (taken in sorted order).
    /// Every host of the batch: pending, in flight and ended.
    pub fn hosts(&self) -> impl Iterator<Item = &String> {
        self.pending
            .iter()
            .chain(self.active.keys())
            .chain(self.ended.keys())
    }

    pub fn new(mut hosts: Vec<String>, size: usize, batch_wait: f64, failhard: bool, timeout: f64) -> Self {
        hosts.sort();
        hosts.dedup();
        Self {
            size: size.max(1),
            batch_wait: batch_wait.max(0.0),
            failhard,
            timeout,
            pending: hosts.into(),
            active: BTreeMap::new(),
            ended: BTreeMap::new(),
            wait: Vec::new(),
            halted: None,
        }
    }

    pub fn finished(&self) -> bool {
        self.pending.is_empty() && self.active.is_empty()
    }

    fn end(&mut self, host: &str, how: HostEnd, now: f64) -> bool {
        if self.active.remove(host).is_none() {
            return false; // not in flight: a duplicate or a stray answer
        }
        if self.batch_wait > 0.0 {
            self.wait.push(now + self.batch_wait);
        }
        let trips = self.failhard && matches!(how, HostEnd::Failed | HostEnd::Unreachable(_));
        self.ended.insert(host.to_string(), how);
        if trips && self.halted.is_none() {
            self.halted = Some("failhard".into());
        }
        true
    }

    /// Applies `events` at time `now` and decides what to do next.
    pub fn step(&mut self, now: f64, events: Vec<Event>) -> Actions {
        let mut actions = Actions::default();
        for event in events {
            match event {
                Event::Returned { host, ok } => {
                    self.end(&host, if ok { HostEnd::Done } else { HostEnd::Failed }, now);
                }
                Event::DispatchFailed { host, why } => {
                    self.end(&host, HostEnd::Unreachable(why), now);
                }
                Event::Refused { host, why } => {
                    self.end(&host, HostEnd::Refused(why), now);
                }
                Event::Liveness { host, answer } => match answer {
                    Liveness::Running => {
                        if let Some(f) = self.active.get_mut(&host) {
                            f.deadline = now + self.timeout;
                            f.asked = false;
                        }
                    }
                    Liveness::Gone => {
                        self.end(
                            &host,
                            HostEnd::Timeout("its job is not running and left no result".into()),
                            now,
                        );
                    }
                    Liveness::Silent => {
                        let why = format!("no result within {}s and no answer to find_job", self.timeout);
                        self.end(&host, HostEnd::Timeout(why), now);
                    }
                },
                Event::Stop { kill } => {
                    if kill {
                        self.halted = Some(KILLED.into());
                        let hosts: Vec<String> = self.active.keys().cloned().collect();
                        for host in hosts {
                            self.end(&host, HostEnd::Killed, now);
                            actions.kill.push(host);
                        }
                    } else if self.halted.is_none() {
                        self.halted = Some("stopped".into());
                    }
                }
            }
        }
        // Deadlines: ask before giving up.
        for (host, f) in self.active.iter_mut() {
            if !f.asked && now >= f.deadline {
                f.asked = true;
                actions.ask.push(host.clone());
            }
        }
        self.wait.retain(|until| *until > now);
        match &self.halted {
            Some(why) => {
                let why = format!("batch halted: {why}");
                while let Some(host) = self.pending.pop_front() {
                    self.ended.insert(host, HostEnd::Abandoned(why.clone()));
                }
            }
            None => {
                let busy = self.active.len() + self.wait.len();
                let free = self.size.saturating_sub(busy);
                for _ in 0..free {
                    let Some(host) = self.pending.pop_front() else {
                        break;
                    };
                    self.active.insert(
                        host.clone(),
                        InFlight {
                            dispatched: now,
                            deadline: now + self.timeout,
                            asked: false,
                        },
                    );
                    actions.dispatch.push(host);
                }
            }
        }
        actions.finished = self.finished();
        actions
    }

    /// Counts per state name, for progress lines.
    pub fn counts(&self) -> BTreeMap<&'static str, usize> {
        // Every key in every state, zero or not: one shape for programs.
        let mut c: BTreeMap<&'static str, usize> = [
            "done",
            "failed",
            "timeout",
            "unreachable",
            "killed",
            "abandoned",
            "refused",
        ]
        .map(|k| (k, 0))
        .into_iter()
        .collect();
        c.insert("pending", self.pending.len());
        c.insert("active", self.active.len());
        for end in self.ended.values() {
            *c.entry(end.name()).or_default() += 1;
        }
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts(n: usize) -> Vec<String> {
        (1..=n).map(|i| format!("h{i:02}")).collect()
    }

    fn ret(h: &str, ok: bool) -> Event {
        Event::Returned { host: h.into(), ok }
    }

    #[test]
    fn sizing_edge_cases() {
        assert_eq!(size("1", 10), Ok(1));
        assert_eq!(
            size("7", 3),
            Ok(3),
            "larger than the fleet: the window holds everyone, and says so"
        );
        assert_eq!(size("100%", 7), Ok(7));
        assert_eq!(size("150%", 4), Ok(4), "never wider than the hosts");
        assert_eq!(size("50%", 5), Ok(2), "floor");
        assert_eq!(size("0.5%", 3), Ok(1), "at least one");
        assert_eq!(size("25%", 33), Ok(8));
        assert!(size("0", 5).is_err());
        for bad in ["0%", "-5", "x", "%", "", "-1%", "nan%"] {
            assert!(size(bad, 5).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn sliding_window_fifo_never_more_than_size_in_flight() {
        let mut s = BatchState::new(hosts(5), 2, 0.0, false, 10.0);
        let a = s.step(0.0, vec![]);
        assert_eq!(a.dispatch, ["h01", "h02"]);
        assert!(s.step(1.0, vec![]).dispatch.is_empty());
        let a = s.step(2.0, vec![ret("h02", true)]);
        assert_eq!(a.dispatch, ["h03"], "a finished host frees its slot at once");
        let a = s.step(3.0, vec![ret("h01", true), ret("h03", false)]);
        assert_eq!(a.dispatch, ["h04", "h05"]);
        assert!(s.active.len() <= 2);
        let a = s.step(4.0, vec![ret("h04", true), ret("h05", true)]);
        assert!(a.finished && a.dispatch.is_empty());
        assert_eq!(s.ended["h03"], HostEnd::Failed);
        assert_eq!(s.counts()["done"], 4);
    }

    #[test]
    fn duplicate_and_stray_returns_change_nothing() {
        let mut s = BatchState::new(hosts(3), 1, 0.0, false, 10.0);
        s.step(0.0, vec![]);
        let a = s.step(1.0, vec![ret("h01", true), ret("h01", false), ret("h03", false)]);
        assert_eq!(a.dispatch, ["h02"]);
        assert_eq!(s.ended["h01"], HostEnd::Done);
        assert!(!s.ended.contains_key("h03"), "h03 was never dispatched");
    }

    #[test]
    fn batch_wait_holds_the_slot() {
        let mut s = BatchState::new(hosts(3), 1, 5.0, false, 100.0);
        s.step(0.0, vec![]);
        assert!(s.step(1.0, vec![ret("h01", true)]).dispatch.is_empty());
        assert!(s.step(5.9, vec![]).dispatch.is_empty());
        assert_eq!(s.step(6.0, vec![]).dispatch, ["h02"]);
    }

    #[test]
    fn failhard_stops_new_dispatches_but_in_flight_hosts_finish() {
        let mut s = BatchState::new(hosts(5), 2, 0.0, true, 10.0);
        s.step(0.0, vec![]);
        let a = s.step(1.0, vec![ret("h01", false)]);
        assert!(a.dispatch.is_empty() && !a.finished);
        assert_eq!(s.halted.as_deref(), Some("failhard"));
        assert!(matches!(s.ended["h05"], HostEnd::Abandoned(_)));
        let a = s.step(2.0, vec![ret("h02", true)]);
        assert!(a.finished);
        assert_eq!(s.ended["h02"], HostEnd::Done);
        // A dispatch failure trips it too; a timeout does not.
        let mut s = BatchState::new(hosts(3), 1, 0.0, true, 10.0);
        s.step(0.0, vec![]);
        s.step(11.0, vec![]);
        let a = s.step(
            11.5,
            vec![Event::Liveness {
                host: "h01".into(),
                answer: Liveness::Silent,
            }],
        );
        assert_eq!(a.dispatch, ["h02"], "timeouts do not trip failhard");
        s.step(
            12.0,
            vec![Event::DispatchFailed {
                host: "h02".into(),
                why: "refused".into(),
            }],
        );
        assert_eq!(s.halted.as_deref(), Some("failhard"));
    }

    #[test]
    fn deadlines_ask_first_and_a_running_job_is_not_timed_out() {
        let mut s = BatchState::new(hosts(2), 2, 0.0, false, 10.0);
        s.step(0.0, vec![]);
        let a = s.step(10.0, vec![]);
        assert_eq!(a.ask, ["h01", "h02"]);
        assert!(s.step(10.5, vec![]).ask.is_empty(), "asked once per deadline");
        s.step(
            11.0,
            vec![
                Event::Liveness {
                    host: "h01".into(),
                    answer: Liveness::Running,
                },
                Event::Liveness {
                    host: "h02".into(),
                    answer: Liveness::Silent,
                },
            ],
        );
        assert!(s.active.contains_key("h01"), "still running: deadline extended");
        assert_eq!(s.active["h01"].deadline, 21.0);
        assert!(
            matches!(s.ended["h02"], HostEnd::Timeout(_)),
            "a hung host is timed out"
        );
        assert_eq!(s.step(21.0, vec![]).ask, ["h01"]);
        let a = s.step(
            22.0,
            vec![Event::Liveness {
                host: "h01".into(),
                answer: Liveness::Gone,
            }],
        );
        assert!(a.finished && matches!(s.ended["h01"], HostEnd::Timeout(_)));
    }

    #[test]
    fn stop_drains_and_stop_kill_kills_in_flight() {
        let mut s = BatchState::new(hosts(4), 2, 0.0, false, 10.0);
        s.step(0.0, vec![]);
        let a = s.step(1.0, vec![Event::Stop { kill: false }]);
        assert!(a.dispatch.is_empty() && a.kill.is_empty() && !a.finished);
        assert!(matches!(s.ended["h03"], HostEnd::Abandoned(_)));
        let a = s.step(2.0, vec![ret("h01", true), ret("h02", true)]);
        assert!(a.finished);
        let mut s = BatchState::new(hosts(4), 2, 0.0, false, 10.0);
        s.step(0.0, vec![]);
        let a = s.step(1.0, vec![Event::Stop { kill: true }]);
        assert_eq!(a.kill, ["h01", "h02"]);
        assert!(a.finished);
        assert_eq!(s.ended["h01"], HostEnd::Killed);
        assert_eq!(s.counts()["abandoned"], 2);
    }

    #[test]
    fn state_round_trips_through_json() {
        let mut s = BatchState::new(hosts(3), 1, 1.0, true, 5.0);
        s.step(0.0, vec![]);
        let text = serde_json::to_string(&s).unwrap();
        assert_eq!(serde_json::from_str::<BatchState>(&text).unwrap(), s);
    }
}
