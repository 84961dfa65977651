//! Notifications (`[notify.NAME]`, DESIGN §14): when a job ends, every
//! target that wants it (`on = failed | finished`; `for = all`, or only
//! runs of schedules naming it) is told once: one JSON document (job id,
//! outcome, counts, function, SPEC, user, schedule, a link to its page)
//! as a signed webhook POST or a mail. The watcher hands each ended job
//! to a bounded queue and never waits; deliveries are claimed in the job's
//! record first (`JobStore::claim_notice`), so several func-api on one
//! store deliver each once; every delivery and failure is an audit line.
//! `GET /api/v1/notifications` lists the targets and each one's last
//! delivery.

pub mod deliver;
pub mod queue;
pub mod settings;

use std::sync::Arc;

use axum::extract::State;
use serde::Serialize;
use tokio::sync::mpsc;

pub use queue::{Delivery, Ended, Notifier};

use super::auth::Caller;
use super::reply::{ApiError, ErrorBody};
use super::state::Api;
use overlord::store::JobStore;
use settings::Target;

/// Deliveries in progress at once.
const AT_ONCE: usize = 16;

/// The notifier's task: reads ended jobs and delivers their notices.
pub async fn run(api: Arc<Api>, mut ended: mpsc::Receiver<Ended>) {
    let http = match reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(std::time::Duration::from_secs(15))
        .build()
    {
        Ok(h) => h,
        Err(e) => {
            tracing::error!(error = %e, "notifications are off: no HTTP client");
            return;
        }
    };
    let slots = Arc::new(tokio::sync::Semaphore::new(AT_ONCE));
    while let Some(job) = ended.recv().await {
        let Some(notifier) = api.notifier.as_ref() else {
            return;
        };
        let named = named_by_schedule(&api, job.schedule.clone()).await;
        let ok = job.failed == 0;
        for target in notifier.targets.iter().filter(|t| t.wants(ok, &named)) {
            let Ok(slot) = Arc::clone(&slots).acquire_owned().await else {
                return;
            };
            let (api, http, target, job) = (Arc::clone(&api), http.clone(), target.clone(), job.clone());
            tokio::spawn(async move {
                tell(&api, &http, &target, &job).await;
                drop(slot);
            });
        }
    }
}

/// The notifications a schedule's run names (none for other jobs).
async fn named_by_schedule(api: &Arc<Api>, schedule: Option<String>) -> Vec<String> {
    let Some(name) = schedule else {
        return Vec::new();
    };
    let store = api.store.clone();
    let doc = tokio::task::spawn_blocking(move || store.schedule_doc(&name)).await;
    match doc {
        Ok(Ok(Some(bytes))) => serde_json::from_slice::<overlord_schedule::Schedule>(&bytes)
            .map(|s| s.notify)
            .unwrap_or_default(),
        _ => Vec::new(),
    }
}

/// Tells `target` of `job`, if this func-api is the first to claim it.
async fn tell(api: &Arc<Api>, http: &reqwest::Client, target: &Target, job: &Ended) {
    let (store, id, name) = (api.store.clone(), job.id.clone(), target.name.clone());
    let claimed = tokio::task::spawn_blocking(move || store.claim_notice(&id, &name)).await;
    match claimed {
        Ok(Ok(true)) => {}
        Ok(Ok(false)) => {
            // Another func-api of the store claimed it first (or the job
            // expired): said, so that nobody wonders.
            let action = format!("notify {} {}: told by another func-api", target.name, job.id);
            api.audit.line("func-api", None, &action, &[], 208);
            return;
        }
        Ok(Err(e)) => {
            tracing::warn!(job = %job.id, target = %target.name, error = %e, "cannot claim the notice");
            let action = format!("notify {} {}: not sent (store: {e})", target.name, job.id);
            api.audit.line("func-api", None, &action, &[], 503);
            return;
        }
        Err(_) => return,
    }
    let doc = document(api, target, job).to_string();
    let outcome = if job.failed == 0 { "ok" } else { "failed" };
    let subject = format!("[func] {} {outcome}: {} on {}", job.id, job.function, job.spec);
    let (sent, tries) = deliver::deliver(http, target, &doc, &subject).await;
    let (status, action) = match &sent {
        Ok(()) => (
            200,
            format!("notify {} {}: delivered (try {tries})", target.name, job.id),
        ),
        Err(e) => (
            502,
            format!(
                "notify {} {}: failed after {tries} tries: {e}",
                target.name, job.id
            ),
        ),
    };
    api.audit.line("func-api", None, &action, &[], status);
    if let Some(n) = api.notifier.as_ref() {
        n.delivered(
            target.name.clone(),
            Delivery {
                job_id: job.id.clone(),
                at: overlord::store::now(),
                ok: sent.is_ok(),
                error: sent.err(),
                tries,
            },
        );
    }
}

/// The notice: job id, outcome, counts, function, SPEC, user, schedule
/// and a link to the job's page.
fn document(api: &Api, target: &Target, job: &Ended) -> serde_json::Value {
    let base = api
        .settings
        .public_url
        .clone()
        .unwrap_or_else(|| format!("https://{}", api.settings.listen));
    serde_json::json!({
        "notification": target.name,
        "job_id": job.id,
        "outcome": if job.failed == 0 { "ok" } else { "failed" },
        "counts": {"hosts": job.hosts, "ok": job.hosts.saturating_sub(job.failed), "failed": job.failed},
        "function": job.function,
        "spec": job.spec,
        "user": job.user,
        "schedule": job.schedule,
        "started": job.started,
        "ended": job.ended,
        "link": format!("{}/jobs/{}", base.trim_end_matches('/'), overlord::values::url_segment(&job.id)),
    })
}

/// One target as `GET /api/v1/notifications` shows it.
#[derive(Serialize, utoipa::ToSchema)]
pub struct TargetDoc {
    pub name: String,
    /// `webhook` or `mail`.
    pub kind: &'static str,
    /// `failed` or `finished`.
    #[schema(value_type = String)]
    pub on: settings::On,
    /// `all`, or `schedules` (only runs of schedules naming it).
    #[serde(rename = "for")]
    #[schema(value_type = String)]
    pub scope: settings::For,
    /// The webhook's URL (without its query) or the mail's recipients.
    pub destination: String,
    /// This func-api's last delivery to it (none yet: absent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last: Option<Delivery>,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct Targets {
    pub targets: Vec<TargetDoc>,
}

/// `GET /api/v1/notifications`.
#[utoipa::path(get, path = "/api/v1/notifications", tag = "operations", operation_id = "listNotifications",
    summary = "The notification targets ([notify.NAME]) and each one's last delivery (admin)",
    responses((status = 200, body = Targets), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody)))]
pub async fn list(caller: Caller, State(api): State<Arc<Api>>) -> Result<axum::Json<Targets>, ApiError> {
    if !caller.rights.admin {
        return Err(ApiError::forbidden(
            "the notification targets are an administrator's to see",
        ));
    }
    let Some(n) = api.notifier.as_ref() else {
        return Ok(axum::Json(Targets { targets: Vec::new() }));
    };
    let last = n.last();
    let targets = n
        .targets
        .iter()
        .map(|t| TargetDoc {
            name: t.name.clone(),
            kind: t.kind(),
            on: t.on,
            scope: t.scope,
            destination: t.destination(),
            last: last.get(&t.name).cloned(),
        })
        .collect();
    Ok(axum::Json(Targets { targets }))
}

/// This group's endpoints, each with its OpenAPI operation.
pub fn routes() -> utoipa_axum::router::OpenApiRouter<Arc<Api>> {
    use utoipa_axum::{router::OpenApiRouter, routes};
    OpenApiRouter::new().routes(routes!(list))
}
