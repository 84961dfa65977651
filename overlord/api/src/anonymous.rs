//! The bound on requests without credentials in progress (the login, the
//! web UI's files, refusals): 64 at once over all peers, 8 from one
//! address, so one address holding logins whose bodies never come (each up
//! to the login's 5 s) cannot take every place from the others.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

/// Requests without credentials in progress at once, over all peers.
pub const TOTAL: usize = 64;
/// The same, from one address.
pub const PER_ADDRESS: usize = 8;

/// The places, over all peers and per address.
#[derive(Default)]
pub struct Anonymous {
    busy: Mutex<(usize, HashMap<IpAddr, usize>)>,
}

/// A place taken; given back when dropped.
pub struct Place {
    of: Arc<Anonymous>,
    addr: IpAddr,
}

impl Anonymous {
    /// A place for a request from `addr`, if one is free.
    pub fn take(self: &Arc<Self>, addr: IpAddr) -> Option<Place> {
        let mut busy = self.busy.lock().unwrap_or_else(|p| p.into_inner());
        let (total, per) = &mut *busy;
        let mine = per.entry(addr).or_default();
        if *total >= TOTAL || *mine >= PER_ADDRESS {
            if *mine == 0 {
                per.remove(&addr);
            }
            return None;
        }
        *mine += 1;
        *total += 1;
        Some(Place {
            of: Arc::clone(self),
            addr,
        })
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        let mut busy = self.of.busy.lock().unwrap_or_else(|p| p.into_inner());
        let (total, per) = &mut *busy;
        *total = total.saturating_sub(1);
        if let Some(n) = per.get_mut(&self.addr) {
            *n -= 1;
            if *n == 0 {
                per.remove(&self.addr);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_address_cannot_take_every_place() {
        let a = Arc::new(Anonymous::default());
        let one: IpAddr = "127.0.0.2".parse().unwrap();
        let held: Vec<Place> = (0..20).filter_map(|_| a.take(one)).collect();
        assert_eq!(held.len(), PER_ADDRESS);
        let other: IpAddr = "127.0.0.3".parse().unwrap();
        assert!(a.take(other).is_some(), "another address still gets a place");
        drop(held);
        let again: Vec<Place> = (0..20).filter_map(|_| a.take(one)).collect();
        assert_eq!(again.len(), PER_ADDRESS, "places come back when given back");
    }
}
