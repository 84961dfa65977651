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
    let timeout = plan.dispatch.timeout_secs;
    let order = crate::relay::Order {
        id: format!("{}-{function}-now", plan.spec),
        spec: plan.spec.clone(),
        function: function.to_string(),
        params,
        user: warm.user.clone(),
        rights: warm.rights.clone(),
        timeout,
        forward: None,
    };
    let direct = warm.direct(std::time::Duration::from_secs_f64(timeout));
    let routes = plan.routes.as_ref();
    let targets = targets.to_vec();
    Ok(crate::reach::call_blocking(
        &direct, &plan.root, routes, &order, targets, on_each,
    ))
}

/// A call action for `method` with `params`.
pub fn call_action(method: &str, params: Vec<Value>) -> Result<Action, PlanError> {
    Action::call(method, params).map_err(|e| PlanError::usage(format!("cannot encode the call: {e}")))
}
