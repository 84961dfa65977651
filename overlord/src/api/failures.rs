//! Failed authentications per client address, so one that keeps failing
//! (guessing tokens, or just filling the audit log) is refused for a while.

/// Failed authentications per address: at most `[api]
/// auth_failures_per_minute` a minute, then the address is refused until
/// the minute ends. Bounded: past 10,000 addresses the oldest windows go.
pub struct Failures {
    limit: u32,
    seen: std::sync::Mutex<std::collections::HashMap<std::net::IpAddr, (u32, std::time::Instant)>>,
}

impl Failures {
    const WINDOW: std::time::Duration = std::time::Duration::from_secs(60);

    pub fn new(limit: u32) -> Self {
        Failures {
            limit: limit.max(1),
            seen: Default::default(),
        }
    }

    /// Whether `addr` is over its limit now.
    pub fn blocked(&self, addr: std::net::IpAddr) -> bool {
        let seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        seen.get(&addr)
            .is_some_and(|(n, at)| *n >= self.limit && at.elapsed() < Self::WINDOW)
    }

    /// Counts a failure of `addr`; whether it is still within the limit
    /// (so worth an audit line).
    pub fn note(&self, addr: std::net::IpAddr) -> bool {
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        if seen.len() >= 10_000 {
            seen.retain(|_, (_, at)| at.elapsed() < Self::WINDOW);
        }
        let entry = seen.entry(addr).or_insert((0, std::time::Instant::now()));
        if entry.1.elapsed() >= Self::WINDOW {
            *entry = (0, std::time::Instant::now());
        }
        entry.0 += 1;
        entry.0 <= self.limit
    }
}
