//! `GET /api/v1/minions[?spec=]`: the signed minions a SPEC names (all by
//! default), with their addresses and when each last answered func-api
//! (`last_seen`, epoch seconds, or null), in natural order — for a limited token
//! only those its rights reach; a SPEC that matches none of those is 404, as
//! through every door. `GET /api/v1/minions/{name}/methods`: the
//! minion's modules, their methods and arguments (Func's
//! `get_method_args`), for forms; a limited token sees the methods it may call.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use super::reply::{Path, Query};
use axum::extract::State;
use axum::Json;
use common::Value;
use serde::{Deserialize, Serialize};

use super::auth::Caller;
use super::reply::{ApiError, ErrorBody};
use super::state::Api;
use overlord::engine::{Answer, Request};
use overlord::gate::GateError;
use overlord::targets::{Target, TargetError};

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct Filter {
    /// Func's SPEC: globs separated by `;`, `@group` (every minion when absent).
    spec: Option<String>,
    /// Only minions whose facts satisfy every term (`os=Debian,num_cpus>=2`).
    filter: Option<String>,
    /// Only minions whose facts satisfy at least one term.
    filteror: Option<String>,
    /// Salt's grain target `KEY:GLOB`.
    grain: Option<String>,
}

/// A signed minion.
#[derive(Serialize, utoipa::ToSchema)]
pub struct MinionRow {
    pub name: String,
    /// `host:port` it advertised.
    pub address: String,
    /// When it last answered func-api (epoch seconds).
    pub last_seen: Option<f64>,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct MinionList {
    pub minions: Vec<MinionRow>,
    /// With a fact filter: the minions that could not judge it, with why
    /// (absent when none).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    #[schema(value_type = Object)]
    pub not_judged: BTreeMap<String, serde_json::Value>,
}

/// A minion's modules: `{module: {method: {"args": …, "description": …}}}`.
#[derive(Serialize, utoipa::ToSchema)]
pub struct MinionMethods {
    pub minion: String,
    #[schema(value_type = Object)]
    pub modules: BTreeMap<String, serde_json::Value>,
}

/// `GET /api/v1/minions`.
#[utoipa::path(get, path = "/api/v1/minions", tag = "minions", operation_id = "listMinions",
    summary = "Signed minions a SPEC names (natural order)", params(Filter),
    responses((status = 200, body = MinionList), (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody), (status = 404, description = "the SPEC names no minion", body = ErrorBody)))]
pub async fn list(
    caller: Caller,
    State(api): State<Arc<Api>>,
    Query(f): Query<Filter>,
) -> Result<Json<MinionList>, ApiError> {
    // Without `spec`, the collection (empty while no minion is enrolled);
    // with one, a SPEC as every door reads it: matching nothing the caller
    // may see is the gate's no-match, 404.
    let filter = overlord::gate::filter::Filter::parse(
        f.filter.as_deref(),
        f.filteror.as_deref(),
        f.grain.as_deref(),
        None,
    )
    .map_err(GateError::from)?;
    let asked = f.spec.is_some() || filter.is_some();
    let spec = f.spec.unwrap_or_else(|| "*".into());
    overlord::gate::call::check_spec("spec", &spec)?;
    // The engine names them: for a limited caller only those its rights
    // reach; with a filter, those whose facts hold it (judged by the hosts
    // over the kept connections).
    let (api2, spec2) = (Arc::clone(&api), spec.clone());
    let answer = tokio::task::spawn_blocking(move || -> Result<_, GateError> {
        let mut plan = caller.plan(&api2, &spec2, None, None)?;
        plan.filter = filter;
        caller.serve(&plan, Request::ListMinions)
    })
    .await
    .map_err(ApiError::internal)?;
    let (targets, unjudged) = match answer {
        Ok(Answer::Minions { targets, unjudged }) => (targets, unjudged),
        Ok(_) => {
            return Err(ApiError::internal(
                "the engine answered a listing with something else",
            ))
        }
        // Without `spec`, the collection: empty while no minion is enrolled.
        Err(GateError::Targets(TargetError::NoMatch(_))) if !asked => (Vec::new(), BTreeMap::new()),
        Err(e) => return Err(e.into()),
    };
    let not_judged = unjudged
        .iter()
        .map(|(h, v)| (h.clone(), overlord::values::to_json(v)))
        .collect();
    let minions = targets
        .into_iter()
        .map(|t| MinionRow {
            last_seen: api.pool.last_seen(&t.name),
            name: t.name,
            address: t.addr,
        })
        .collect();
    Ok(Json(MinionList { minions, not_judged }))
}

/// `GET /api/v1/minions/{name}/methods`.
#[utoipa::path(get, path = "/api/v1/minions/{name}/methods", tag = "minions", operation_id = "getMinionMethods",
    summary = "A minion's modules, methods and arguments (get_method_args)",
    params(("name" = String, Path, description = "a minion's name")),
    responses((status = 200, body = MinionMethods), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 404, body = ErrorBody), (status = 502, body = ErrorBody)))]
pub async fn methods(
    caller: Caller,
    State(api): State<Arc<Api>>,
    Path(name): Path<String>,
) -> Result<Json<MinionMethods>, ApiError> {
    overlord::gate::rights::authorize_minion(&api.root, &caller.rights, &name, None)?;
    let groups = overlord::groups::Groups::load(&api.root.groups_file());
    let _slot = super::calls::take_slot(&api, &caller)?;
    let target = Target::enrolled(&api.root, &name);
    let limit = Duration::from_secs_f64(overlord::settings::DEFAULT_TIMEOUT);
    let user = caller.user();
    let modules = api
        .pool
        .call(&target, "system.list_modules", Vec::new(), limit, Some(&user))
        .await;
    let Value::Array(modules) = modules else {
        return Err(ApiError::new(
            axum::http::StatusCode::BAD_GATEWAY,
            format!("{name}: {}", overlord::values::error_text(&modules)),
        ));
    };
    let names: Vec<String> = modules
        .into_iter()
        .filter_map(|m| match m {
            Value::String(s) => Some(s),
            _ => None,
        })
        .take(1000)
        .collect();
    let mut asks = tokio::task::JoinSet::new();
    for module in names {
        let (pool, target, user) = (Arc::clone(&api.pool), target.clone(), user.clone());
        asks.spawn(async move {
            let args = pool
                .call(
                    &target,
                    &format!("{module}.get_method_args"),
                    Vec::new(),
                    limit,
                    Some(&user),
                )
                .await;
            (module, args)
        });
    }
    let mut out = BTreeMap::new();
    while let Some(Ok((module, args))) = asks.join_next().await {
        let mut methods = match overlord::values::to_json(&args) {
            serde_json::Value::Object(m) if !common::xmlrpc::is_remote_error(&args) => m,
            _ => serde_json::Map::new(),
        };
        methods.retain(|method, _| {
            caller
                .rights
                .allows(&name, &format!("{module}.{method}"), &groups)
        });
        if !methods.is_empty() || caller.rights.admin {
            out.insert(module, serde_json::Value::Object(methods));
        }
    }
    Ok(Json(MinionMethods {
        minion: name,
        modules: out,
    }))
}

/// This group's endpoints, each with its OpenAPI operation.
pub fn routes() -> utoipa_axum::router::OpenApiRouter<Arc<Api>> {
    use utoipa_axum::{router::OpenApiRouter, routes};
    OpenApiRouter::new()
        .routes(routes!(list))
        .routes(routes!(methods))
}
