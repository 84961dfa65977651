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

/// A call action for `method` with `params`.
pub fn call_action(method: &str, params: Vec<Value>) -> Result<Action, PlanError> {
    Action::call(method, params).map_err(|e| PlanError::usage(format!("cannot encode the call: {e}")))
}
