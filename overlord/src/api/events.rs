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
use super::Api;
use crate::groups::Groups;

/// Events sent per wake-up at most.
const BATCH: usize = 256;
/// How often the caller's token is checked again.
const RECHECK: Duration = Duration::from_secs(1);

struct Follow {
    api: Arc<Api>,
    caller: Caller,
    groups: Groups,
    last: u64,
    pending: std::collections::VecDeque<Arc<Event>>,
    wake: tokio::sync::watch::Receiver<u64>,
    ended: bool,
    checked: std::time::Instant,
}

fn visible(caller: &Caller, groups: &Groups, e: &Event) -> bool {
    caller.rights.admin
        || (!e.hosts.is_empty() && e.hosts.iter().any(|h| caller.rights.allows(h, &e.function, groups)))
}

/// `GET /api/v1/events`.
pub async fn stream(caller: Caller, State(api): State<Arc<Api>>, headers: HeaderMap) -> Sse<impl Stream<Item = Result<SseEvent, Infallible>>> {
    let last = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        // A new stream starts with what happens from now on.
        .unwrap_or_else(|| api.bus.newest());
    api.audit.line(&caller.name, "events", &[], 200);
    let state = Follow {
        groups: Groups::load(&api.root.groups_file()),
        wake: api.bus.subscribe(),
        api,
        caller,
        last,
        pending: Default::default(),
        ended: false,
        checked: std::time::Instant::now(),
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
                let event = SseEvent::default().id(e.id.to_string()).event(&e.tag).data(&e.data);
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
    Sse::new(events).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
}
