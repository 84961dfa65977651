//! Failed authentications per client address, so one that keeps failing
//! (guessing tokens, or just filling the audit log) is refused for a while.
//! Only failing attempts are refused: a valid credential is always let in,
//! whatever others behind the same address did.

/// Failed authentications per address: at most `[api]
/// auth_failures_per_minute` a minute, then the address is refused until
/// the minute ends. Bounded: past 10,000 addresses the oldest windows go.
pub struct Failures {
    limit: u32,
    seen: std::sync::Mutex<std::collections::HashMap<std::net::IpAddr, (u32, std::time::Instant)>>,
}

impl Failures {
    const WINDOW: std::time::Duration = std::time::Duration::from_secs(60);
    /// Addresses remembered at most.
    const ADDRESSES: usize = 10_000;

    /// Addresses remembered now.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.seen.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

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
        if seen.len() >= Self::ADDRESSES && !seen.contains_key(&addr) {
            seen.retain(|_, (_, at)| at.elapsed() < Self::WINDOW);
            // Still full (failures from very many addresses this minute):
            // the oldest window goes, so the table never grows past the cap.
            if seen.len() >= Self::ADDRESSES {
                if let Some(oldest) = seen.iter().min_by_key(|(_, (_, at))| *at).map(|(a, _)| *a) {
                    seen.remove(&oldest);
                }
            }
        }
        let entry = seen.entry(addr).or_insert((0, std::time::Instant::now()));
        if entry.1.elapsed() >= Self::WINDOW {
            *entry = (0, std::time::Instant::now());
        }
        entry.0 += 1;
        entry.0 <= self.limit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_stays_bounded_whatever_the_number_of_addresses() {
        let f = Failures::new(3);
        for i in 0..(Failures::ADDRESSES as u32 + 500) {
            f.note(std::net::IpAddr::V6(std::net::Ipv6Addr::from(u128::from(i) + 1)));
        }
        assert!(f.len() <= Failures::ADDRESSES, "{}", f.len());
    }
}
