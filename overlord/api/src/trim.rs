//! Gives memory freed by large calls back to the system, so a long-lived
//! func-api (a relay above all) stays the same size run after run.
//!
//! A call to thousands of hosts over kept connections allocates and frees
//! per-connection buffers (TLS records, each host's line, the answers) from
//! many threads; glibc's allocator keeps what was freed inside its arenas,
//! fragmented. A relay of 5,000 minions had grown from 166 to 263 MiB after
//! 44 runs with nothing more allocated: `malloc_trim(0)` took it to 148. So
//! after a large call (or after enough small ones) the free pages go back.
//!
//! A kept connection holds only its TLS state (calls are made on it by the
//! calling task, `common::rpc::exchange`), so nothing else grows with the
//! number of runs; `make bench-scale` measures RSS over 20 runs after the
//! third, and over 20 more once settled.

use std::sync::atomic::{AtomicUsize, Ordering};

/// A call to this many hosts is followed by a trim.
const LARGE: usize = 1024;

/// Hosts called since the last trim: smaller calls trim once this many.
const ENOUGH: usize = 16 * LARGE;

static SINCE: AtomicUsize = AtomicUsize::new(0);

/// Whether a call to `hosts` hosts that has just ended calls for a trim
/// ([`release`], from a blocking thread).
pub fn due(hosts: usize) -> bool {
    let since = SINCE.fetch_add(hosts, Ordering::Relaxed).saturating_add(hosts);
    if hosts < LARGE && since < ENOUGH {
        return false;
    }
    SINCE.store(0, Ordering::Relaxed);
    true
}

/// Returns the allocator's free pages to the system: it walks the heap, a
/// few milliseconds at hundreds of MiB, so from a blocking thread.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn release() {
    // SAFETY: malloc_trim takes no pointer and only locks and walks the
    // allocator's own arenas; it is safe to call from any thread at any time.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn release() {}

/// Makes every thread allocate from one arena; called before any thread
/// starts. glibc gives each new thread its own arena (up to 8 per core):
/// the runtime's workers and blocking threads, which come and go, then
/// spread one call's short-lived buffers over several arenas, and what
/// was freed in one cannot serve another. With one, a relay's RSS was
/// flat over 60 runs at 10,000 kept connections (±0.2 %) where it swung
/// by +20 % and back; threads keep their own caches (tcache), so the
/// lock is taken on a cache miss only.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn one_arena() {
    // SAFETY: mallopt only sets an allocator parameter; called before the
    // process starts threads.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn one_arena() {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_calls_add_up_and_a_large_one_trims_at_once() {
        SINCE.store(0, Ordering::Relaxed);
        assert!(!due(10));
        assert!(due(LARGE));
        let trims = (0..ENOUGH / 100 + 1).filter(|_| due(100)).count();
        assert_eq!(trims, 1);
        release();
    }
}
