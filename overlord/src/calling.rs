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
    let calling = |ends| warm_call(plan, warm, targets, function, params, ends);
    Ok(crate::reach::collect_blocking(calling, on_each))
}

/// A call now over a long-lived door's kept connections (`warm`, and
/// relays where the plan's routes say), each host's end on `ends`: a task
/// owning all it needs, run on the door's runtime.
pub fn warm_call(
    plan: &Plan,
    warm: &crate::plan::Warm,
    targets: &[crate::targets::Target],
    function: &str,
    params: Vec<Value>,
    ends: crate::reach::Ends,
) -> impl std::future::Future<Output = ()> + Send + 'static {
    let order = crate::relay::Order {
        id: format!("{}-{function}-now", plan.spec),
        spec: plan.spec.clone(),
        function: function.to_string(),
        params,
        user: warm.user.clone(),
        rights: warm.rights.clone(),
        timeout: plan.dispatch.timeout_secs,
        forward: None,
        job_request: None,
    };
    let (warm, root, routes, targets) = (
        warm.clone(),
        plan.root.clone(),
        plan.routes.clone(),
        targets.to_vec(),
    );
    async move {
        let direct = warm.direct(std::time::Duration::from_secs_f64(order.timeout));
        crate::reach::call(&direct, &root, routes.as_ref(), &order, targets, ends).await
    }
}

/// A call action for `method` with `params`.
pub fn call_action(method: &str, params: Vec<Value>) -> Result<Action, PlanError> {
    Action::call(method, params).map_err(|e| PlanError::usage(format!("cannot encode the call: {e}")))
}
