//! How a long-lived reader (func-api's watcher) learns that the job store
//! changed, whatever the backend: the embedded store's file time and size
//! (looked at without opening it); for PostgreSQL, a thread that `LISTEN`s
//! and counts the notifications every overlord's writes send.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use super::backend::Store;

/// A stamp that changes when the store does ([`ChangeWatch::stamp`]).
pub type Stamp = (SystemTime, u64);

/// Watches one store for changes.
pub enum ChangeWatch {
    File(std::path::PathBuf),
    Notified(Arc<AtomicU64>),
    Never,
}

impl ChangeWatch {
    /// Starts watching `store` (for PostgreSQL, a listening thread).
    pub fn new(store: &Store) -> Self {
        match store {
            Store::Redb(s) => ChangeWatch::File(s.path().to_path_buf()),
            Store::Postgres(pg) => {
                let count = Arc::new(AtomicU64::new(0));
                let (pg, seen) = (Arc::clone(pg), Arc::clone(&count));
                let _ = std::thread::Builder::new().name("store-listen".into()).spawn(move || {
                    let mut listener = None;
                    loop {
                        match pg.wait_change(&mut listener, Duration::from_secs(5)) {
                            Ok(true) => {
                                seen.fetch_add(1, Ordering::Relaxed);
                            }
                            Ok(false) => {}
                            Err(e) => {
                                tracing::warn!(error = %e, "store: cannot listen for changes; trying again");
                                // Changes may have been missed: look again.
                                seen.fetch_add(1, Ordering::Relaxed);
                                std::thread::sleep(Duration::from_secs(1));
                            }
                        }
                    }
                });
                ChangeWatch::Notified(count)
            }
            Store::Broken(_) => ChangeWatch::Never,
        }
    }

    /// A value that differs from the last one when the store changed
    /// (`None`: nothing to read yet).
    pub fn stamp(&self) -> Option<Stamp> {
        match self {
            ChangeWatch::File(path) => {
                let m = std::fs::metadata(path).ok()?;
                Some((m.modified().ok()?, m.len()))
            }
            ChangeWatch::Notified(n) => Some((SystemTime::UNIX_EPOCH, n.load(Ordering::Relaxed))),
            ChangeWatch::Never => None,
        }
    }
}
