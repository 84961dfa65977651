//! `GET /api/v1/events`: Server-Sent Events from the bus. Each event has
//! `id:` (increasing), `event:` (the tag) and `data:` (JSON). A client
//! resuming with `Last-Event-ID` gets the events after that id still in the
//! backlog, without repeats. A comment line every 15 s keeps proxies open.
//! The stream ends when the caller's token expires or is revoked (looked at
//! every second). A limited token sees the events of the hosts and
//! functions its rights allow.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use futures_util::Stream;

use super::auth::Caller;
use super::bus::Event;
use super::reply::ApiError;
use super::state::Api;
use crate::groups::Groups;

/// Events sent per wake-up at most.
const BATCH: usize = 256;
/// How often the caller's token is checked again.
const RECHECK: Duration = Duration::from_secs(1);
/// Streams one caller may hold open at once.
pub const STREAMS_PER_CALLER: usize = 16;

/// One of a caller's open streams; given back when the stream ends.
struct Slot {
    api: Arc<Api>,
    name: String,
}

impl Slot {
    fn take(api: &Arc<Api>, name: &str) -> Option<Slot> {
        let mut open = api.streams.lock().unwrap_or_else(|p| p.into_inner());
        let n = open.entry(name.to_string()).or_default();
        if *n >= STREAMS_PER_CALLER {
            return None;
        }
        *n += 1;
        Some(Slot {
            api: Arc::clone(api),
            name: name.to_string(),
        })
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut open = self.api.streams.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = open.get_mut(&self.name) {
            *n -= 1;
            if *n == 0 {
                open.remove(&self.name);
            }
        }
    }
}

struct Follow {
    api: Arc<Api>,
    caller: Caller,
    groups: Groups,
    last: u64,
    pending: std::collections::VecDeque<Arc<Event>>,
    wake: tokio::sync::watch::Receiver<u64>,
    ended: bool,
    checked: std::time::Instant,
    _slot: Slot,
}

/// As for the job listing: a limited caller sees the events of jobs and
/// batches whose every host its rights allow with their function.
fn visible(caller: &Caller, groups: &Groups, e: &Event) -> bool {
    caller.rights.admin
        || (!e.hosts.is_empty()
            && e.hosts
                .iter()
                .all(|h| caller.rights.allows(h, &e.function, groups)))
}

/// `GET /api/v1/events`.
pub async fn stream(
    caller: Caller,
    State(api): State<Arc<Api>>,
    headers: HeaderMap,
) -> Result<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>, ApiError> {
    let slot = Slot::take(&api, &caller.name).ok_or_else(|| {
        ApiError::new(
            axum::http::StatusCode::TOO_MANY_REQUESTS,
            format!("{STREAMS_PER_CALLER} event streams of this caller are open"),
        )
    })?;
    let last = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        // A new stream starts with what happens from now on.
        .unwrap_or_else(|| api.bus.newest());
    api.audit.line(&caller.name, caller.from, "events", &[], 200);
    let state = Follow {
        groups: Groups::load(&api.root.groups_file()),
        wake: api.bus.subscribe(),
        api,
        caller,
        last,
        pending: Default::default(),
        ended: false,
        checked: std::time::Instant::now(),
        _slot: slot,
    };
    let events = futures_util::stream::unfold(state, |mut s| async move {
        loop {
            if s.ended {
                return None;
            }
            if s.checked.elapsed() >= RECHECK {
                s.checked = std::time::Instant::now();
                if !s.caller.still_valid(&s.api) {
                    // The token expired or was revoked: say so, then end.
                    s.ended = true;
                    let bye = SseEvent::default()
                        .event("auth/expired")
                        .data("{\"error\": \"token expired or revoked\"}");
                    return Some((Ok(bye), s));
                }
            }
            if let Some(e) = s.pending.pop_front() {
                s.last = e.id;
                if !visible(&s.caller, &s.groups, &e) {
                    continue;
                }
                let event = SseEvent::default()
                    .id(e.id.to_string())
                    .event(&e.tag)
                    .data(&e.data);
                return Some((Ok(event), s));
            }
            s.pending.extend(s.api.bus.since(s.last, BATCH));
            if !s.pending.is_empty() {
                continue;
            }
            tokio::select! {
                _ = s.wake.changed() => {}
                _ = tokio::time::sleep(RECHECK) => {}
            }
        }
    });
    Ok(Sse::new(events).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))))
}
