//! Who is asking: `Authorization: Bearer TOKEN`, else the browser's
//! session cookie (from `POST /api/v1/login`), else a client certificate
//! with the overlord mark (an admin). Nothing valid: 401, before any body
//! is read. The caller is checked again while an event stream is open, so
//! the stream ends when its token expires or is revoked.

use std::collections::BTreeMap;

use overlord::engine::Unwatched;
use std::sync::Arc;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::StatusCode;

use super::reply::ApiError;
use super::sessions::Holder;
use super::state::{Api, Peer};
use super::tokens::{self, Rights};

/// The session cookie's name.
pub const COOKIE: &str = "func_session";
/// The header the web UI sends with every change it makes.
pub const CSRF_HEADER: &str = "x-func-csrf";

/// An authenticated caller.
#[derive(Debug, Clone)]
pub struct Caller {
    /// The token's name, or `cert:<CN>`.
    pub name: String,
    pub rights: Rights,
    /// How to check again that the caller is still let in.
    pub proof: Proof,
    /// The address it connects from.
    pub from: Option<std::net::IpAddr>,
}

#[derive(Debug, Clone)]
pub enum Proof {
    Token {
        hash: String,
    },
    Session {
        id: String,
        hash: String,
    },
    /// A person's session begun by single sign-on (`oidc/`), and the
    /// groups it was in then.
    Person {
        id: String,
        groups: Vec<String>,
    },
    Certificate,
}

impl Caller {
    /// This caller as a job records it: its user, and its rights signed
    /// with the request (DESIGN §9; `None`: an administrator).
    pub fn engine_caller(&self) -> overlord::jobs::start::Caller {
        overlord::jobs::start::Caller {
            user: self.user(),
            rights: self.signed_rights(),
            schedule: None,
        }
    }

    /// Asks the engine's one entry as this caller (blocking: call it from
    /// `spawn_blocking`), with the service's plan and job store.
    pub fn ask(
        &self,
        api: &Api,
        request: overlord::engine::Request,
    ) -> Result<overlord::engine::Answer, overlord::gate::GateError> {
        self.ask_for(api, request, self.user())
    }

    /// [`Self::ask`] on behalf of `user` (what a job or a kill records, and
    /// the minions are told), judged with this caller's rights.
    pub fn ask_for(
        &self,
        api: &Api,
        request: overlord::engine::Request,
        user: String,
    ) -> Result<overlord::engine::Answer, overlord::gate::GateError> {
        let who = overlord::jobs::start::Caller {
            user,
            ..self.engine_caller()
        };
        serve_as(
            &plan_for(api, "", (None, None), &who)?,
            who,
            request,
            &mut Unwatched,
        )
    }

    /// A call (`Request::Call`) as this caller (see [`call_as`]).
    pub fn call(
        &self,
        api: &Api,
        call: overlord::gate::Call,
        resolved: Option<Vec<overlord::targets::Target>>,
    ) -> Result<(overlord::engine::Ready, BTreeMap<String, common::Value>), overlord::gate::GateError> {
        call_as(api, self.engine_caller(), call, resolved)
    }

    /// The engine's plan for this caller's request naming `spec` (see [`plan_for`]).
    pub fn plan(
        &self,
        api: &Api,
        spec: &str,
        forks: Option<usize>,
        timeout: Option<f64>,
    ) -> Result<overlord::plan::Plan, overlord::gate::GateError> {
        plan_for(api, spec, (forks, timeout), &self.engine_caller())
    }

    /// Asks the engine with `plan` (made by [`Self::plan`]), as this caller.
    pub fn serve(
        &self,
        plan: &overlord::plan::Plan,
        request: overlord::engine::Request,
    ) -> Result<overlord::engine::Answer, overlord::gate::GateError> {
        let mut who = self.engine_caller();
        if let Some(warm) = &plan.warm {
            who.user = warm.user.clone();
        }
        serve_as(plan, who, request, &mut Unwatched)
    }

    /// The job `id` names: itself, or for `last` this caller's newest job
    /// (blocking). The id is read as every door reads one.
    pub fn job_id(&self, api: &Api, id: &str) -> Result<String, overlord::gate::GateError> {
        use overlord::gate::GateError;
        if !overlord::gate::JobRef::parse(id)?.is_last() {
            return Ok(id.to_string());
        }
        overlord::store::Store::newest_of(&api.store, &self.user())
            .map_err(|e| GateError::Engine(e.into()))?
            .ok_or_else(|| GateError::NotFound("no job of this caller".into()))
    }

    /// Who it is as `overlord::principal` spells it (`api:NAME`, or
    /// `cert:CN`): the user its jobs are recorded for, named to the minions
    /// and in the audit trail.
    pub fn user(&self) -> String {
        match self.proof {
            Proof::Certificate | Proof::Person { .. } => self.name.clone(),
            _ => format!("api:{}", self.name),
        }
    }

    /// What it may do, as a job's or a relay request's signed rights
    /// (`None`: an administrator).
    pub fn signed_rights(&self) -> Option<Vec<String>> {
        self.rights.signed()
    }

    /// Whether it is still let in (its token neither expired nor revoked).
    pub fn still_valid(&self, api: &Api) -> bool {
        match &self.proof {
            Proof::Certificate => true,
            Proof::Token { hash } => api
                .tokens
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .find(hash)
                .is_some(),
            Proof::Person { id, .. } => api
                .sessions
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get(id)
                .is_some(),
            Proof::Session { id, hash } => {
                api.sessions
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .get(id)
                    .is_some()
                    && api
                        .tokens
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .find(hash)
                        .is_some()
            }
        }
    }
}

fn unauthorized(why: &str) -> ApiError {
    ApiError::new(StatusCode::UNAUTHORIZED, why)
}

/// An address over its failures' limit.
pub fn too_many_failures() -> ApiError {
    ApiError::new(
        StatusCode::TOO_MANY_REQUESTS,
        "too many failed attempts from this address: try again in a minute",
    )
}

/// The value of cookie `name` in the request's Cookie headers.
pub fn cookie<'a>(headers: &'a axum::http::HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(axum::http::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

/// Whether a request carries credentials that let it in (a known token,
/// a live session, the overlord's certificate), judged from its head only
/// and without counting failures: the server keeps the connection of such
/// a caller for good, while anonymous ones stay evictable.
pub fn credentialed(api: &Api, headers: &axum::http::HeaderMap, overlord: bool) -> bool {
    if overlord {
        return true;
    }
    if let Some(token) = headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")))
    {
        let hash = tokens::hash(token.trim());
        return api
            .tokens
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .find(&hash)
            .is_some();
    }
    cookie(headers, COOKIE).is_some_and(|id| {
        api.sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(id)
            .is_some()
    })
}

/// Finds the caller of a request.
pub fn authenticate(api: &Api, parts: &Parts) -> Result<Caller, ApiError> {
    let from = parts.extensions.get::<Peer>().map(|p| p.addr.ip().to_canonical());
    // An address that keeps failing gets 429 for its failures for a while
    // (guessing is hopeless; this bounds the log); a valid credential from
    // it is still let in (others behind the same address may have failed).
    let failed = |why: &str| {
        if let Some(a) = from {
            if api.failures.blocked(a) {
                return too_many_failures();
            }
            if api.failures.note(a) {
                api.audit.line("?", Some(a), "authenticate", &[], 401);
            }
        }
        unauthorized(why)
    };
    if let Some(value) = parts.headers.get(axum::http::header::AUTHORIZATION) {
        let token = value
            .to_str()
            .ok()
            .and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")))
            .map(str::trim)
            .ok_or_else(|| failed("Authorization must be \"Bearer TOKEN\""))?;
        let hash = tokens::hash(token);
        let found = api.tokens.lock().unwrap_or_else(|p| p.into_inner()).find(&hash);
        let token = found.ok_or_else(|| failed("unknown, expired or revoked token"))?;
        return Ok(Caller {
            name: token.name,
            rights: rights_of(token.admin, token.allow),
            proof: Proof::Token { hash },
            from,
        });
    }
    if let Some(id) = cookie(&parts.headers, COOKIE) {
        // A cookie goes along with requests other sites make the browser
        // send; a change needs a header only our own page's script sets
        // (no other site can, without a CORS preflight we never allow).
        if parts.method != axum::http::Method::GET && !parts.headers.contains_key(CSRF_HEADER) {
            return Err(ApiError::forbidden(format!(
                "a session's changes need the {CSRF_HEADER} header"
            )));
        }
        let session = api.sessions.lock().unwrap_or_else(|p| p.into_inner()).get(id);
        let hash = match session.ok_or_else(|| failed("session ended: log in again"))? {
            Holder::Token(hash) => hash,
            Holder::Person { user, groups } => return person(api, id, user, &groups, from),
        };
        let found = api.tokens.lock().unwrap_or_else(|p| p.into_inner()).find(&hash);
        let token = found.ok_or_else(|| unauthorized("session's token expired or revoked: log in again"))?;
        return Ok(Caller {
            name: token.name,
            rights: rights_of(token.admin, token.allow),
            proof: Proof::Session {
                id: id.to_string(),
                hash,
            },
            from,
        });
    }
    if let Some(cn) = parts.extensions.get::<Peer>().and_then(|p| p.overlord.clone()) {
        return Ok(Caller {
            name: format!("cert:{cn}"),
            rights: Rights::admin(),
            proof: Proof::Certificate,
            from,
        });
    }
    Err(unauthorized(
        "credentials needed: Authorization: Bearer TOKEN (func-api token create)",
    ))
}

/// A person's session: the rights of its groups as `[roles]` gives them now.
fn person(
    api: &Api,
    id: &str,
    user: String,
    groups: &[String],
    from: Option<std::net::IpAddr>,
) -> Result<Caller, ApiError> {
    let rights = api.sso.as_ref().and_then(|sso| sso.roles.rights_of(groups));
    let rights = rights.ok_or_else(|| {
        unauthorized("no group of this session is given rights any more ([roles]): sign in again")
    })?;
    Ok(Caller {
        name: user,
        rights,
        proof: Proof::Person {
            id: id.to_string(),
            groups: groups.to_vec(),
        },
        from,
    })
}

fn rights_of(admin: bool, rules: Vec<tokens::Rule>) -> Rights {
    Rights { admin, rules }
}

impl FromRequestParts<Arc<Api>> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, api: &Arc<Api>) -> Result<Self, Self::Rejection> {
        authenticate(api, parts)
    }
}

/// The engine's plan for a request of `who` naming `spec` (with `forks`
/// and `timeout`): the service's job store, and its kept connections used
/// for `who` (its name to the minions, its rights).
pub fn plan_for(
    api: &Api,
    spec: &str,
    (forks, timeout): (Option<usize>, Option<f64>),
    who: &overlord::jobs::start::Caller,
) -> Result<overlord::plan::Plan, overlord::gate::GateError> {
    // The service's dispatch settings (overlord.conf read once), with the
    // request's own forks and timeout.
    let mut dispatch = api.dispatch.clone();
    dispatch.forks = forks.unwrap_or(dispatch.forks);
    dispatch.timeout_secs = timeout.unwrap_or(dispatch.timeout_secs);
    let mut plan = overlord::plan::Plan::with_dispatch(api.root.clone(), spec, dispatch, timeout)?;
    plan.held_store = Some(api.store.clone());
    // Its calls are its own: never handed to a func-api (itself).
    plan.dispatch.handoff = false;
    plan.warm = Some(overlord::plan::Warm {
        pool: Arc::clone(&api.pool),
        user: who.user.clone(),
        rights: who.rights.clone(),
    });
    Ok(plan)
}

/// Asks the engine's one entry with `plan` for `who` (blocking: call it
/// from `spawn_blocking`); `watch` sees each host's end as it comes.
pub fn serve_as(
    plan: &overlord::plan::Plan,
    who: overlord::jobs::start::Caller,
    request: overlord::engine::Request,
    watch: &mut dyn overlord::engine::Watch,
) -> Result<overlord::engine::Answer, overlord::gate::GateError> {
    Ok(overlord::engine::serve(plan, Some(who), request, watch)?)
}

/// A call (`Request::Call`) for `who` (a token's caller, or a schedule's
/// owner), with a plan for it: its SPEC, `exclude`, fact filter,
/// delegation, timeout and forks. The answer, and the hosts that could not
/// judge the filter (not called). The gate authorized it before
/// (`gate::rights::authorize_call`); `resolved`: the names it resolved
/// then, not resolved again. A call now is left ready for the caller to
/// await on the service's runtime (`engine::Ready::finish`).
pub fn call_as(
    api: &Api,
    who: overlord::jobs::start::Caller,
    call: overlord::gate::Call,
    resolved: Option<Vec<overlord::targets::Target>>,
) -> Result<(overlord::engine::Ready, BTreeMap<String, common::Value>), overlord::gate::GateError> {
    let mut plan = plan_for(api, &call.spec, (call.forks, call.timeout), &who)?;
    plan.resolved = resolved;
    plan.exclude = call.exclude.clone();
    plan.filter = call.filter.as_deref().cloned();
    if call.delegate {
        plan.delegate_with(None)?;
    }
    let ready = overlord::engine::prepare(
        &plan,
        Some(who),
        overlord::engine::Request::Call(call),
        &mut Unwatched,
    )?;
    Ok((ready, plan.unjudged()))
}
