//! A synchronous call through the worker processes and the relays at once
//! (`func --delegate`, `func-transmit`, filters judged through relays): the
//! hosts the routes put behind a relay are handed to it in one signed
//! request, the others go to the workers, and `on_each` sees every host as
//! it ends, whichever way it went.

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
/// through it. Returns every host's value.
pub fn call(
    root: &Root,
    routes: Option<&Routes>,
    spec: &str,
    targets: &[Target],
    action: &Action,
    how: &Dispatch,
    mut on_each: impl FnMut(&str, &Value),
) -> Result<BTreeMap<String, Value>, EngineError> {
    let creds = crate::settings::credentials(root);
    let (direct, relayed) = match routes {
        Some(r) => r.split(targets.iter().map(|t| t.name.clone())),
        None => (Vec::new(), BTreeMap::new()),
    };
    let (Some(routes), false) = (routes, relayed.is_empty()) else {
        return crate::dispatch::call_workers(&creds, targets, action, how, on_each);
    };
    let order = order(spec, action, how)?;
    let direct: std::collections::HashSet<String> = direct.into_iter().collect();
    let direct_targets: Vec<Target> = targets
        .iter()
        .filter(|t| direct.contains(&t.name))
        .cloned()
        .collect();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let (root2, routes2) = (root.clone(), routes.clone());
    let relays = std::thread::spawn(move || {
        super::fanout::block_on(super::fanout::call_now(&root2, &routes2, &order, relayed, tx));
    });
    let mut from_relays = BTreeMap::new();
    let mut results = if direct_targets.is_empty() {
        BTreeMap::new()
    } else {
        crate::dispatch::call_workers(&creds, &direct_targets, action, how, |h, v| {
            on_each(h, v);
            while let Ok((rh, rv)) = rx.try_recv() {
                on_each(&rh, &rv);
                from_relays.insert(rh, rv);
            }
        })?
    };
    while let Some((rh, rv)) = rx.blocking_recv() {
        on_each(&rh, &rv);
        from_relays.insert(rh, rv);
    }
    let _ = relays.join();
    // Relays answer only for the hosts sent to them (checked as they
    // stream); a direct host's own answer is never replaced all the same.
    for (host, value) in from_relays {
        results.entry(host).or_insert(value);
    }
    Ok(results)
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
    })
}
