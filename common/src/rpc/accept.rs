//! The accept loop both servers share: at most `max_connections` served at
//! once, at most `per_address` from one source address (more are closed at
//! once, so one address cannot hold the slots everyone else needs), a short
//! back-off when `accept` fails (EMFILE and friends) instead of spinning,
//! and a clean stop when `shutdown` completes. Each connection is handed to
//! `on_connection` with the [`Slot`] it holds until it ends.
//!
//! When every slot is taken, the oldest connection that has not finished
//! its handshake yet is told to go ([`Slot::evicted`]): idle sockets opened
//! from many addresses cannot keep a real client (the overlord) waiting in
//! the backlog until their handshake deadline; established connections are
//! never evicted, except once closed and only lingering (`rpc::idle`).

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};

/// Open connections per source address.
type PerAddress = Arc<Mutex<HashMap<IpAddr, usize>>>;

/// Connections still before their handshake, oldest first, each with the
/// signal that tells it to go.
type Early = Arc<Mutex<BTreeMap<u64, Arc<Notify>>>>;

/// A connection's place: one of `max_connections`, and one of its
/// address's `per_address`. Given back when dropped.
pub struct Slot {
    _permit: OwnedSemaphorePermit,
    addr: IpAddr,
    counts: PerAddress,
    seq: u64,
    early: Early,
    evict: Arc<Notify>,
    /// Still counted in its address's `per_address`.
    counted: AtomicBool,
    /// Tells the accept loop a slot became evictable (a lingering one).
    evictable: Arc<Notify>,
}

impl Slot {
    /// Completes when the accept loop needs this slot for a newer
    /// connection while this one has not finished its handshake.
    pub async fn evicted(&self) {
        self.evict.notified().await
    }

    /// The handshake is done: from now on the slot is never taken back.
    pub fn established(&self) {
        self.early
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&self.seq);
    }

    /// The connection is closed and its socket only lingers for the
    /// client to notice (`rpc::idle`): the slot may be taken back again,
    /// before any connection still in its handshake (it still counts
    /// against its address's `per_address`, so one address cannot pile up
    /// lingering sockets), and an accept loop waiting for a slot is told.
    pub fn lingering(&self) {
        self.early
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(self.seq, Arc::clone(&self.evict));
        self.evictable.notify_one();
    }

    /// A slot of its own, outside any accept loop (for tests).
    pub fn standalone(addr: IpAddr) -> Self {
        let permit = Arc::new(Semaphore::new(1))
            .try_acquire_owned()
            .expect("a fresh semaphore has a permit");
        let counts: PerAddress = Arc::new(Mutex::new(HashMap::from([(addr, 1)])));
        Slot {
            _permit: permit,
            addr,
            counts,
            seq: 0,
            early: Arc::default(),
            evict: Arc::new(Notify::new()),
            counted: AtomicBool::new(true),
            evictable: Arc::new(Notify::new()),
        }
    }
}

impl Slot {
    /// Gives back the place in the address's count (once).
    fn uncount(&self) {
        if !self.counted.swap(false, Ordering::SeqCst) {
            return;
        }
        let mut counts = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = counts.get_mut(&self.addr) {
            *n -= 1;
            if *n == 0 {
                counts.remove(&self.addr);
            }
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.established();
        self.uncount();
    }
}

/// Accepts until `shutdown` completes.
pub async fn accept_loop(
    listener: TcpListener,
    max_connections: usize,
    per_address: usize,
    shutdown: impl Future<Output = ()>,
    mut on_connection: impl FnMut(TcpStream, SocketAddr, Slot),
) {
    let slots = Arc::new(Semaphore::new(max_connections.max(1)));
    let counts: PerAddress = Arc::default();
    let early: Early = Arc::default();
    let evictable = Arc::new(Notify::new());
    let mut seq = 0u64;
    let mut refused_logged = std::time::Instant::now() - Duration::from_secs(60);
    tokio::pin!(shutdown);
    loop {
        if slots.available_permits() == 0 {
            // Full: the oldest connection still before its handshake goes.
            let oldest = early.lock().unwrap_or_else(|p| p.into_inner()).pop_first();
            if let Some((_, evict)) = oldest {
                evict.notify_one();
            }
        }
        let full = slots.available_permits() == 0;
        let permit = tokio::select! {
            _ = &mut shutdown => break,
            // Full, and a slot became evictable meanwhile: evict it above.
            _ = evictable.notified(), if full => continue,
            p = Arc::clone(&slots).acquire_owned() => match p { Ok(p) => p, Err(_) => break },
        };
        let (tcp, peer) = tokio::select! {
            _ = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(conn) => conn,
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let addr = peer.ip().to_canonical();
        {
            let mut c = counts.lock().unwrap_or_else(|p| p.into_inner());
            let n = c.entry(addr).or_default();
            if *n >= per_address.max(1) {
                drop(c);
                if refused_logged.elapsed() >= Duration::from_secs(10) {
                    tracing::warn!(%addr, limit = per_address, "connections from one address over the limit; closing new ones");
                    refused_logged = std::time::Instant::now();
                }
                drop(tcp);
                continue;
            }
            *n += 1;
        }
        seq += 1;
        let evict = Arc::new(Notify::new());
        early
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(seq, Arc::clone(&evict));
        let slot = Slot {
            _permit: permit,
            addr,
            counts: Arc::clone(&counts),
            seq,
            early: Arc::clone(&early),
            evict,
            counted: AtomicBool::new(true),
            evictable: Arc::clone(&evictable),
        };
        on_connection(tcp, peer, slot);
    }
}
