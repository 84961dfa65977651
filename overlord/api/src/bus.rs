//! The event bus behind `GET /api/v1/events`: every event gets the next id
//! and goes into a bounded backlog (the oldest drops out), which streams
//! read from their last id on — so a client resuming with `Last-Event-ID`
//! gets what it missed without repeats, and a slow client costs no memory
//! of its own. Ids start at the service's start time in microseconds, so
//! they keep increasing across restarts.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tokio::sync::watch;

/// The largest result carried in a `ret` event; a larger one is left out
/// (`"truncated": true`): `GET /api/v1/jobs/{id}` has it.
pub const MAX_RESULT_BYTES: usize = 256 << 10;

/// One event.
#[derive(Debug)]
pub struct Event {
    pub id: u64,
    /// `job/<id>/new`, `job/<id>/ret/<host>`, `batch/<id>/progress`, …
    pub tag: String,
    /// The payload, JSON text.
    pub data: String,
    /// Who may see it: the job's function and all its hosts (shared by
    /// every event of the job).
    pub function: String,
    pub hosts: Arc<[String]>,
}

struct Inner {
    backlog: VecDeque<Arc<Event>>,
    next: u64,
    published: u64,
}

pub struct Bus {
    inner: Mutex<Inner>,
    capacity: usize,
    last: watch::Sender<u64>,
}

impl Bus {
    pub fn new(capacity: usize) -> Self {
        let start = (overlord::store::now() * 1e6) as u64;
        Bus {
            inner: Mutex::new(Inner {
                backlog: VecDeque::new(),
                next: start,
                published: 0,
            }),
            capacity: capacity.max(1),
            last: watch::channel(0).0,
        }
    }

    /// Announces an event; returns its id.
    pub fn publish(
        &self,
        tag: String,
        data: &serde_json::Value,
        function: &str,
        hosts: Arc<[String]>,
    ) -> u64 {
        let data = data.to_string();
        // A tag is one line of the stream (job ids come from SPECs typed
        // anywhere): control characters become '_'.
        let tag: String = tag
            .chars()
            .map(|c| if c.is_control() { '_' } else { c })
            .collect();
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        inner.next += 1;
        inner.published += 1;
        let id = inner.next;
        inner.backlog.push_back(Arc::new(Event {
            id,
            tag,
            data,
            function: function.to_string(),
            hosts,
        }));
        while inner.backlog.len() > self.capacity {
            inner.backlog.pop_front();
        }
        drop(inner);
        self.last.send_replace(id);
        id
    }

    /// Events after `after`, oldest first, at most `max`.
    pub fn since(&self, after: u64, max: usize) -> Vec<Arc<Event>> {
        let inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let start = inner.backlog.partition_point(|e| e.id <= after);
        inner.backlog.iter().skip(start).take(max).cloned().collect()
    }

    /// Events published since the service started.
    pub fn published(&self) -> u64 {
        self.inner.lock().unwrap_or_else(|p| p.into_inner()).published
    }

    /// The newest id (0 before the first event).
    pub fn newest(&self) -> u64 {
        *self.last.borrow()
    }

    /// Wakes when a new event is published.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.last.subscribe()
    }

    /// Events kept now.
    pub fn len(&self) -> usize {
        self.inner.lock().unwrap_or_else(|p| p.into_inner()).backlog.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backlog_is_bounded_and_resumes_without_repeats() {
        let bus = Bus::new(3);
        let ids: Vec<u64> = (0..5)
            .map(|i| {
                bus.publish(
                    format!("t/{i}"),
                    &serde_json::json!({}),
                    "f",
                    Arc::from(Vec::new()),
                )
            })
            .collect();
        assert!(ids.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(bus.len(), 3);
        let after = bus.since(ids[2], 10);
        assert_eq!(after.iter().map(|e| e.id).collect::<Vec<_>>(), &ids[3..]);
        assert_eq!(
            bus.since(0, 10).len(),
            3,
            "a resume from before the backlog gets what is kept"
        );
        assert!(bus.since(ids[4], 10).is_empty());
    }
}
