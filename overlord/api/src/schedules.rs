//! Schedules over the API (DESIGN §14; AWX's schedules): `GET|POST
//! /api/v1/schedules`, `GET|PATCH|DELETE /api/v1/schedules/{name}`. A
//! schedule is `{"name", "request": CALL, "cron": "m h dom mon dow"` or
//! `"every": SECS, "enabled"}`; its owner is the caller, whose rights must
//! allow the request when it is made (403) and bound every run
//! (`scheduler.rs`). An invalid cron line or interval is a 400, a name
//! taken or an owner at its limit (`[api] max_schedules_per_owner`) a 409.
//! A limited token sees and changes only its own schedules; administrators
//! all. Every change is audited.

use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};

use super::auth::{Caller, Proof};
use super::reply::{ApiError, Body, ErrorBody, Path};
use super::state::Api;
use overlord::gate::GateError;
use overlord_schedule::manage::{self, NewSchedule};
use overlord_schedule::{Owner, OwnerToken, Schedule};

/// A new schedule.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ScheduleRequest {
    /// 1 to 64 letters, digits, `-`, `_`, `.`.
    pub name: String,
    /// The call each run makes (the body of `POST /api/v1/calls`; it runs
    /// as a job: async, or a batch with its own driver).
    #[schema(value_type = overlord::gate::CallFields)]
    pub request: serde_json::Value,
    /// Five fields, minute hour day-of-month month day-of-week (local time).
    #[serde(default)]
    pub cron: Option<String>,
    /// Seconds between runs (at least 1).
    #[serde(default)]
    pub every: Option<u64>,
    /// Whether it runs (true when absent).
    #[serde(default)]
    pub enabled: Option<bool>,
    /// The owner is always the caller; when given it must be the caller.
    #[serde(default)]
    pub owner: Option<String>,
    /// Notification targets (`[notify.NAME]` in overlord.conf) its runs are
    /// told to (a target with `for = all` is told of every job anyway).
    #[serde(default)]
    pub notify: Vec<String>,
}

/// A change to a schedule: enabled, or new times.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ScheduleChange {
    #[serde(default)]
    pub enabled: Option<bool>,
    #[serde(default)]
    pub cron: Option<String>,
    #[serde(default)]
    pub every: Option<u64>,
}

/// A schedule as shown.
#[derive(Serialize, utoipa::ToSchema)]
pub struct ScheduleDoc {
    /// `name`, `request`, `cron` or `every`, `enabled`, `owner`, `created`,
    /// `next_run`, `last_run`, `last_job`, `last_outcome` (`ok`, `failed`,
    /// `running`, `skipped`, `not started`, `never run`, …), `last_error`,
    /// `made_up`, `disabled_reason`, `runs`.
    #[serde(flatten)]
    #[schema(value_type = Object)]
    pub doc: serde_json::Value,
}

/// Every schedule the caller may see.
#[derive(Serialize, utoipa::ToSchema)]
pub struct ScheduleList {
    pub schedules: Vec<ScheduleDoc>,
}

/// A schedule's name in a path.
#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Path)]
pub struct ScheduleName {
    #[param(min_length = 1, max_length = 64)]
    #[allow(dead_code)]
    name: String,
}

/// Refuses a notification target that `[notify.NAME]` does not set.
fn known_targets(api: &Api, names: &[String]) -> Result<(), ApiError> {
    let known = |n: &String| {
        api.notifier
            .as_ref()
            .is_some_and(|t| t.targets.iter().any(|t| t.name == *n))
    };
    match names.iter().find(|n| !known(n)) {
        None => Ok(()),
        Some(unknown) => Err(ApiError::bad(format!(
            "notify: no notification target {unknown:?} ([notify.NAME] in overlord.conf)"
        ))),
    }
}

/// The owner a schedule of `caller` gets.
fn owner_of(caller: &Caller) -> Owner {
    let token = match &caller.proof {
        Proof::Token { hash } | Proof::Session { hash, .. } => Some(OwnerToken {
            name: caller.name.clone(),
            check: OwnerToken::check_of(hash),
            admin: caller.rights.admin,
        }),
        Proof::Certificate | Proof::Person { .. } => None,
    };
    let person = match &caller.proof {
        Proof::Person { groups, .. } => Some(overlord_schedule::OwnerPerson {
            groups: groups.clone(),
            admin: caller.rights.admin,
        }),
        _ => None,
    };
    Owner {
        user: caller.user(),
        token,
        person,
    }
}

fn visible(caller: &Caller, s: &Schedule) -> bool {
    caller.rights.admin || s.owner.user == caller.user()
}

/// Schedule `name`, if the caller may see it (else as unknown).
fn load_visible(api: &Api, caller: &Caller, name: &str) -> Result<Schedule, GateError> {
    let s = manage::get(&api.store, name)?;
    match visible(caller, &s) {
        true => Ok(s),
        false => Err(GateError::NotFound(format!(
            "no schedule {}",
            common::paths::shorten(name)
        ))),
    }
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, GateError> + Send + 'static,
) -> Result<T, ApiError> {
    Ok(tokio::task::spawn_blocking(f)
        .await
        .map_err(ApiError::internal)??)
}

fn audited<T>(api: &Api, caller: &Caller, action: String, answer: &Result<T, ApiError>, ok: u16) {
    let status = answer.as_ref().map_or_else(|e| e.status.as_u16(), |_| ok);
    api.audit.line(&caller.user(), caller.from, &action, &[], status);
}

/// `GET /api/v1/schedules`.
#[utoipa::path(get, path = "/api/v1/schedules", tag = "schedules", operation_id = "listSchedules",
    summary = "Schedules (a limited token's own; an administrator's all)",
    responses((status = 200, body = ScheduleList), (status = 401, body = ErrorBody), (status = 503, body = ErrorBody)))]
pub async fn list(caller: Caller, State(api): State<Arc<Api>>) -> Result<Json<ScheduleList>, ApiError> {
    blocking(move || {
        let mine: Vec<Schedule> = manage::list(&api.store)?
            .into_iter()
            .filter(|s| visible(&caller, s))
            .collect();
        let schedules = manage::docs(&api.store, &mine)
            .into_iter()
            .map(|doc| ScheduleDoc { doc })
            .collect();
        Ok(Json(ScheduleList { schedules }))
    })
    .await
}

/// `POST /api/v1/schedules`.
#[utoipa::path(post, path = "/api/v1/schedules", tag = "schedules", operation_id = "addSchedule",
    summary = "Adds a schedule owned by the caller", request_body = ScheduleRequest,
    responses((status = 201, body = ScheduleDoc, headers(("Location" = String, description = "the schedule"))),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 403, description = "the caller may not make the request", body = ErrorBody),
        (status = 404, description = "the request's SPEC names no minion", body = ErrorBody),
        (status = 408, body = ErrorBody), (status = 409, description = "the name is taken, or the owner has as many as it may", body = ErrorBody),
        (status = 413, body = ErrorBody), (status = 415, body = ErrorBody), (status = 503, body = ErrorBody)))]
pub async fn add(
    caller: Caller,
    State(api): State<Arc<Api>>,
    Body(req): Body<ScheduleRequest>,
) -> Result<Response, ApiError> {
    // Where notices go is an administrator's to say (a target may be
    // anyone's mailbox).
    if !req.notify.is_empty() && !caller.rights.admin {
        return Err(ApiError::forbidden(
            "naming notification targets is an administrator's to do",
        ));
    }
    known_targets(&api, &req.notify)?;
    let owner = owner_of(&caller);
    if req.owner.as_ref().is_some_and(|o| *o != owner.user) {
        return Err(ApiError::bad(format!(
            "owner: a schedule's owner is its maker ({})",
            owner.user
        )));
    }
    // A change is work done for the caller: it takes one of its slots.
    let _slot = super::calls::take_slot(&api, &caller)?;
    let action = format!("schedule add {}", common::paths::shorten(&req.name));
    // Its function must exist on a host it targets (checked after the
    // rights, which manage::add judges again and says).
    let (api2, rights, request) = (Arc::clone(&api), caller.rights.clone(), req.request.clone());
    let targeted = blocking(move || {
        let call = overlord_schedule::call_of(&request)?;
        let targets = overlord::gate::rights::authorize_call(&api2.root, &rights, &call)?;
        Ok((call.function(), targets, call.delegate))
    })
    .await;
    if let Ok((function, targets, false)) = targeted {
        let limit = std::time::Duration::from_secs_f64(api.dispatch.timeout_secs);
        let user = caller.user();
        let answers = api
            .pool
            .call_all(
                &targets,
                manage::LIST_METHODS,
                &[],
                limit,
                overlord::caller::OnBehalf {
                    user: Some(&user),
                    request: None,
                },
                |_, _| {},
            )
            .await;
        if let Err(e) = manage::method_known(&function, &answers) {
            let answer: Result<(), ApiError> = Err(e.into());
            audited(&api, &caller, action, &answer, 201);
            return answer.map(|()| StatusCode::CREATED.into_response());
        }
    }
    let (api2, rights) = (Arc::clone(&api), caller.rights.clone());
    let answer = blocking(move || {
        let new = NewSchedule {
            name: req.name,
            request: req.request,
            cron: req.cron,
            every: req.every,
            enabled: req.enabled.unwrap_or(true),
            notify: req.notify,
        };
        let (per_owner, min_every) = (
            api2.settings.max_schedules_per_owner,
            api2.settings.min_every_limited,
        );
        let s = manage::add(&api2.store, &api2.root, new, owner, &rights, per_owner, min_every)?;
        Ok((s.name.clone(), manage::doc(&api2.store, &s)))
    })
    .await;
    audited(&api, &caller, action, &answer, 201);
    let (name, doc) = answer?;
    let mut r = (StatusCode::CREATED, Json(ScheduleDoc { doc })).into_response();
    let location = format!("/api/v1/schedules/{}", overlord::values::url_segment(&name));
    if let Ok(v) = axum::http::HeaderValue::from_str(&location) {
        r.headers_mut().insert(axum::http::header::LOCATION, v);
    }
    Ok(r)
}

/// `GET /api/v1/schedules/{name}`.
#[utoipa::path(get, path = "/api/v1/schedules/{name}", tag = "schedules", operation_id = "getSchedule",
    summary = "A schedule: next run, last run and how it ended", params(ScheduleName),
    responses((status = 200, body = ScheduleDoc), (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 503, body = ErrorBody)))]
pub async fn one(
    caller: Caller,
    State(api): State<Arc<Api>>,
    Path(name): Path<String>,
) -> Result<Json<ScheduleDoc>, ApiError> {
    blocking(move || {
        let s = load_visible(&api, &caller, &name)?;
        Ok(Json(ScheduleDoc {
            doc: manage::doc(&api.store, &s),
        }))
    })
    .await
}

/// `PATCH /api/v1/schedules/{name}`.
#[utoipa::path(patch, path = "/api/v1/schedules/{name}", tag = "schedules", operation_id = "changeSchedule",
    summary = "Enables or disables a schedule, or gives it new times", params(ScheduleName),
    request_body = ScheduleChange,
    responses((status = 200, body = ScheduleDoc), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 408, body = ErrorBody), (status = 413, body = ErrorBody),
        (status = 415, body = ErrorBody), (status = 503, body = ErrorBody)))]
pub async fn change(
    caller: Caller,
    State(api): State<Arc<Api>>,
    Path(name): Path<String>,
    Body(req): Body<ScheduleChange>,
) -> Result<Json<ScheduleDoc>, ApiError> {
    if req.enabled.is_none() && req.cron.is_none() && req.every.is_none() {
        return Err(ApiError::bad("nothing to change: enabled, cron or every"));
    }
    let what = match req.enabled {
        Some(true) => "enable",
        Some(false) => "disable",
        None => "change",
    };
    let _slot = super::calls::take_slot(&api, &caller)?;
    let action = format!("schedule {what} {}", common::paths::shorten(&name));
    let (api2, caller2) = (Arc::clone(&api), caller.clone());
    let answer = blocking(move || {
        let shown = load_visible(&api2, &caller2, &name)?;
        let mut s = None;
        if req.cron.is_some() || req.every.is_some() {
            let when = overlord_schedule::When::parse(req.cron.as_deref(), req.every)?;
            overlord_schedule::check_rate(&shown.owner, &when, api2.settings.min_every_limited)?;
            s = Some(manage::set_times(
                &api2.store,
                &api2.root,
                &name,
                req.cron,
                req.every,
            )?);
        }
        if let Some(enabled) = req.enabled {
            s = Some(manage::set_enabled(&api2.store, &api2.root, &name, enabled)?);
        }
        let s = match s {
            Some(s) => s,
            None => manage::get(&api2.store, &name)?,
        };
        Ok(Json(ScheduleDoc {
            doc: manage::doc(&api2.store, &s),
        }))
    })
    .await;
    audited(&api, &caller, action, &answer, 200);
    answer
}

/// `DELETE /api/v1/schedules/{name}`.
#[utoipa::path(delete, path = "/api/v1/schedules/{name}", tag = "schedules", operation_id = "removeSchedule",
    summary = "Removes a schedule (its jobs stay)", params(ScheduleName),
    responses((status = 204, description = "removed"), (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 503, body = ErrorBody)))]
pub async fn remove(
    caller: Caller,
    State(api): State<Arc<Api>>,
    Path(name): Path<String>,
) -> Result<StatusCode, ApiError> {
    let _slot = super::calls::take_slot(&api, &caller)?;
    let action = format!("schedule remove {}", common::paths::shorten(&name));
    let (api2, caller2) = (Arc::clone(&api), caller.clone());
    let answer = blocking(move || {
        load_visible(&api2, &caller2, &name)?;
        manage::remove(&api2.store, &api2.root, &name)?;
        Ok(StatusCode::NO_CONTENT)
    })
    .await;
    audited(&api, &caller, action, &answer, 204);
    answer
}

/// This group's endpoints, each with its OpenAPI operation.
pub fn routes() -> utoipa_axum::router::OpenApiRouter<Arc<Api>> {
    use utoipa_axum::{router::OpenApiRouter, routes};
    OpenApiRouter::new()
        .routes(routes!(list, add))
        .routes(routes!(one, change, remove))
}
