//! `GET /api/v1/events[?tag=PREFIX]`: Server-Sent Events from the bus.
//! Each event has `id:` (increasing) and `data: {"tag": TAG, "data":
//! PAYLOAD}` (Salt's shape) and no `event:` line, so a browser's
//! `EventSource.onmessage` and every SSE library receive every event;
//! `?tag=` keeps the tags starting with a prefix (`job/<id>/`). A client
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
use overlord::groups::Groups;

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
    judged: Judged,
    skipped: usize,
    /// `?tag=`: only tags starting with it.
    prefix: String,
    _slot: Slot,
}

/// As for the job listing: a limited caller sees the events of jobs and
/// batches whose every host its rights allow with their function.
fn visible(caller: &Caller, groups: &Groups, e: &Event) -> bool {
    caller.rights.allows_all(&e.hosts, &e.function, groups)
}

/// Judgments a stream remembers: the events of one job share their hosts
/// (one `Arc`), so a job of 2,000 hosts is judged once per stream, not
/// once per event and host.
const REMEMBERED: usize = 64;
/// Events skipped in a row before the stream lets others run.
const SKIPS_BEFORE_YIELD: usize = 256;

/// A stream's memory of which jobs' events its caller may see.
#[derive(Default)]
struct Judged {
    recent: std::collections::VecDeque<(Arc<[String]>, String, bool)>,
}

impl Judged {
    /// Whether `e` is visible, judging with `judge` only events of a job
    /// (hosts and function) not judged lately.
    fn visible(&mut self, e: &Event, judge: impl FnOnce(&Event) -> bool) -> bool {
        if let Some((_, _, seen)) = self
            .recent
            .iter()
            .find(|(hosts, function, _)| Arc::ptr_eq(hosts, &e.hosts) && *function == e.function)
        {
            return *seen;
        }
        let seen = judge(e);
        if self.recent.len() >= REMEMBERED {
            self.recent.pop_front();
        }
        self.recent
            .push_back((Arc::clone(&e.hosts), e.function.clone(), seen));
        seen
    }
}

/// `?tag=PREFIX`.
#[derive(serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct EventsQuery {
    /// Only tags starting with this prefix.
    #[param(max_length = 1000)]
    tag: Option<String>,
}

/// One event as sent: `data: {"tag", "data"}` (the payload is JSON text
/// already, placed as it is).
fn sse(id: Option<u64>, tag: &str, data: &str) -> SseEvent {
    let tag = serde_json::Value::String(tag.to_string());
    let event = SseEvent::default().data(format!("{{\"tag\": {tag}, \"data\": {data}}}"));
    match id {
        Some(id) => event.id(id.to_string()),
        None => event,
    }
}

/// `GET /api/v1/events`.
#[utoipa::path(get, path = "/api/v1/events", tag = "events", operation_id = "streamEvents",
    summary = "Server-Sent Events: job/<id>/new|ret/<host>|complete, batch/<id>/new|progress|complete|halted|recover",
    description = "Each event: `id:` and `data: {\"tag\": TAG, \"data\": PAYLOAD}` (no `event:` line).",
    params(EventsQuery, ("Last-Event-ID" = Option<String>, Header, description = "resume after this event")),
    responses((status = 200, description = "an event stream", content_type = "text/event-stream", body = String),
        (status = 400, body = super::reply::ErrorBody), (status = 401, body = super::reply::ErrorBody)))]
pub async fn stream(
    caller: Caller,
    State(api): State<Arc<Api>>,
    headers: HeaderMap,
    super::reply::Query(query): super::reply::Query<EventsQuery>,
) -> Result<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>, ApiError> {
    let prefix = query.tag.unwrap_or_default();
    if prefix.len() > 1000 {
        return Err(ApiError::bad("tag: at most 1000 characters"));
    }
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
    api.audit.line(&caller.user(), caller.from, "events", &[], 200);
    let state = Follow {
        groups: Groups::load(&api.root.groups_file()),
        wake: api.bus.subscribe(),
        api,
        caller,
        last,
        pending: Default::default(),
        ended: false,
        checked: std::time::Instant::now(),
        judged: Judged::default(),
        skipped: 0,
        prefix,
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
                    let bye = sse(None, "auth/expired", "{\"error\": \"token expired or revoked\"}");
                    return Some((Ok(bye), s));
                }
            }
            if let Some(e) = s.pending.pop_front() {
                s.last = e.id;
                let admin = s.caller.rights.admin;
                let (caller, groups) = (&s.caller, &s.groups);
                let wanted = e.tag.starts_with(s.prefix.as_str());
                if !wanted || (!admin && !s.judged.visible(&e, |e| visible(caller, groups, e))) {
                    // A long run of others' events: let other tasks run.
                    s.skipped += 1;
                    if s.skipped % SKIPS_BEFORE_YIELD == 0 {
                        tokio::task::yield_now().await;
                    }
                    continue;
                }
                return Some((Ok(sse(Some(e.id), &e.tag, &e.data)), s));
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The attack: 16 streams of a limited token resuming from the start
    /// of a backlog of three jobs of 2,000 hosts each. Each stream judges
    /// each job once, not each of its 6,000 events (with 2,000 hosts each).
    #[test]
    fn a_job_of_many_hosts_is_judged_once_per_stream() {
        let jobs: Vec<Arc<[String]>> = (0..3)
            .map(|j| (0..2000).map(|h| format!("j{j}h{h}")).collect::<Vec<_>>().into())
            .collect();
        let events: Vec<Event> = (0..6000u64)
            .map(|i| Event {
                id: i,
                tag: format!("job/{}/ret/h", i % 3),
                data: "{}".into(),
                function: "test.ping".into(),
                hosts: Arc::clone(&jobs[(i % 3) as usize]),
            })
            .collect();
        let judged = std::cell::Cell::new(0);
        let mut memory = Judged::default();
        let seen = events
            .iter()
            .filter(|e| {
                memory.visible(e, |e| {
                    judged.set(judged.get() + 1);
                    e.hosts[0].starts_with("j1")
                })
            })
            .count();
        assert_eq!(seen, 2000);
        assert_eq!(judged.get(), 3, "one judgment per job, not per event");
    }
}
