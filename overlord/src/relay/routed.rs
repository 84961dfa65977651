//! A synchronous call through the worker processes and the relays at once
//! (`func --delegate`, `func-transmit`, filters judged through relays), by
//! `reach` (the one split): the hosts the routes put behind a relay are
//! handed to it in one signed request, the others go to the workers, and
//! `on_each` sees every host as it ends, whichever way it went.

use std::collections::BTreeMap;

use common::paths::Root;
use common::Value;

use super::fanout::Order;
use super::map::Routes;
use crate::dispatch::Dispatch;
use crate::error::EngineError;
use crate::job::Action;
use crate::targets::Target;

/// Calls `action` on `targets`; those `routes` put behind a relay go
/// through it (`reach::call_blocking`, the one split). Returns every
/// host's value.
pub fn call(
    root: &Root,
    routes: Option<&Routes>,
    spec: &str,
    targets: &[Target],
    action: &Action,
    how: &Dispatch,
    on_each: impl FnMut(&str, &Value),
) -> Result<BTreeMap<String, Value>, EngineError> {
    let credentials = crate::settings::credentials(root);
    let relayed = routes.is_some_and(|r| !r.split(targets.iter().map(|t| t.name.clone())).1.is_empty());
    let call = matches!(action, Action::Call { request: None, .. });
    let workers = crate::reach::Workers {
        credentials,
        how: how.clone(),
        request: None,
    };
    // A warm func: the root's func-api calls the direct hosts (a call only).
    let handed = match (how.handoff && call, targets.is_empty()) {
        (true, false) => {
            super::local::Handed::to_announced(root, workers.clone(), spec, how.timeout_secs, how.verbose)
        }
        _ => None,
    };
    // Called from here after all: the addresses a warm func left unread.
    let read;
    let targets = match handed {
        Some(_) => targets,
        None => {
            let behind = |h: &str| routes.is_some_and(|r| r.relay_of(h).is_some());
            read = crate::targets::read_addresses(root, targets.to_vec(), behind);
            &read[..]
        }
    };
    if !relayed && handed.is_none() {
        return crate::dispatch::call_workers(&workers.credentials, targets, action, how, on_each);
    }
    let order = order(spec, action, how)?;
    let direct: &dyn crate::reach::Direct = match &handed {
        Some(handed) => handed,
        None => &workers,
    };
    Ok(crate::reach::call_blocking(
        direct,
        root,
        routes,
        &order,
        targets.to_vec(),
        on_each,
    ))
}

/// The order of a call action (only calls go through relays).
fn order(spec: &str, action: &Action, how: &Dispatch) -> Result<Order, EngineError> {
    let Action::Call { call_xml, .. } = action else {
        return Err(EngineError::Record(
            "only calls go through relays (copyfile does not: leave out --delegate)".into(),
        ));
    };
    let limits = common::xmlrpc::Limits {
        max_body: usize::MAX,
        max_depth: common::xmlrpc::DEFAULT_MAX_DEPTH,
        max_values: usize::MAX,
    };
    let call = common::xmlrpc::decode_call(call_xml.as_bytes(), &limits)
        .map_err(|e| EngineError::Record(format!("the call: {e}")))?;
    Ok(Order {
        id: format!("{spec}-{}-now", call.method),
        spec: spec.to_string(),
        function: call.method,
        params: call.params,
        user: crate::principal::cli_user(),
        rights: None,
        timeout: how.timeout_secs,
        forward: None,
        job_request: None,
    })
}
