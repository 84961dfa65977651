//! Calling minions from a front end: a call action for `module.method`,
//! dispatch to the plan's targets through the worker processes, and each
//! host shown the moment it ends (`report.rs`). Used by the commands that
//! call minions; it knows no command.

use std::collections::BTreeMap;

use common::Value;

use crate::job::Action;
use crate::plan::{Plan, PlanError};

/// Dispatches `action` to `targets`; `on_each` sees every host as it ends.
pub fn dispatch_to(
    plan: &Plan,
    targets: &[crate::targets::Target],
    action: &Action,
    on_each: impl FnMut(&str, &Value),
) -> Result<BTreeMap<String, Value>, PlanError> {
    plan.check_credentials()?;
    plan.detail(targets);
    Ok(crate::relay::routed::call(
        &plan.root,
        plan.routes.as_ref(),
        &plan.spec,
        targets,
        action,
        &plan.dispatch,
        on_each,
    )?)
}

/// Calls `function(params)` now on `targets`: over a long-lived door's
/// kept connections (`plan.warm`, for its caller) or through the worker
/// processes, and relays where the plan's routes say; `on_each` sees every
/// host as it ends.
pub fn call(
    plan: &Plan,
    targets: &[crate::targets::Target],
    function: &str,
    params: Vec<Value>,
    on_each: impl FnMut(&str, &Value),
) -> Result<BTreeMap<String, Value>, PlanError> {
    let Some(warm) = &plan.warm else {
        let action = call_action(function, params)?;
        return dispatch_to(plan, targets, &action, on_each);
    };
    let order = warm_order(plan, warm, function, params);
    let direct = warm.direct(std::time::Duration::from_secs_f64(order.timeout));
    let routes = plan.routes.as_ref();
    let targets = targets.to_vec();
    Ok(crate::reach::call_blocking(
        &direct, &plan.root, routes, &order, targets, on_each,
    ))
}

/// [`call`] for a caller that looks only at the whole answer, not at each
/// host as it ends: over kept connections it runs wholly on the door's
/// runtime ([`warm`]).
pub fn call_quietly(
    plan: &Plan,
    targets: &[crate::targets::Target],
    function: &str,
    params: Vec<Value>,
) -> Result<BTreeMap<String, Value>, PlanError> {
    match warm(plan, targets, function, &params) {
        Some(calling) => crate::reach::on_door_task(async move { Ok(calling.await) }),
        None => call(plan, targets, function, params, |_, _| {}),
    }
}

/// A call now over a long-lived door's kept connections (`plan.warm`, and
/// relays where the plan's routes say) as a task owning all it needs, to
/// be run on the door's runtime; `None` without kept connections.
pub fn warm(
    plan: &Plan,
    targets: &[crate::targets::Target],
    function: &str,
    params: &[Value],
) -> Option<impl std::future::Future<Output = BTreeMap<String, Value>> + Send + 'static> {
    let warm = plan.warm.clone()?;
    let order = warm_order(plan, &warm, function, params.to_vec());
    let (root, routes, targets) = (plan.root.clone(), plan.routes.clone(), targets.to_vec());
    Some(async move {
        let direct = warm.direct(std::time::Duration::from_secs_f64(order.timeout));
        crate::reach::call_collect(&direct, &root, routes.as_ref(), &order, targets).await
    })
}

/// The order of a call now over a long-lived door's kept connections.
fn warm_order(
    plan: &Plan,
    warm: &crate::plan::Warm,
    function: &str,
    params: Vec<Value>,
) -> crate::relay::Order {
    crate::relay::Order {
        id: format!("{}-{function}-now", plan.spec),
        spec: plan.spec.clone(),
        function: function.to_string(),
        params,
        user: warm.user.clone(),
        rights: warm.rights.clone(),
        timeout: plan.dispatch.timeout_secs,
        forward: None,
    }
}

/// A call action for `method` with `params`.
pub fn call_action(method: &str, params: Vec<Value>) -> Result<Action, PlanError> {
    Action::call(method, params).map_err(|e| PlanError::usage(format!("cannot encode the call: {e}")))
}
