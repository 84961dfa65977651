//! Calling minions from a front end: a call action for `module.method`,
//! dispatch to the plan's targets through the worker processes, and each
//! host shown the moment it ends (`report.rs`). Used by the commands that
//! call minions; it knows no command.

use std::collections::BTreeMap;

use common::Value;

use crate::job::Action;
use crate::plan::{Plan, PlanError};

/// Calls `action` on the plan's targets and shows each host the moment
/// it ends (`report.rs`: blocks rendered by `render`, a progress line naming
/// the hosts awaited, a summary on stderr); `--json` prints one document at
/// the end. `transform` may reshape a result before it is shown. Returns
/// the exit status.
pub fn call_and_show(
    plan: &Plan,
    method: &str,
    action: &Action,
    render: crate::report::Render,
    transform: &dyn Fn(Value) -> Value,
) -> Result<i32, PlanError> {
    let targets = plan.targets()?;
    // Hosts that could not judge a filter end now, failed, with why.
    let unjudged = plan.unjudged();
    let names = targets
        .iter()
        .map(|t| t.name.clone())
        .chain(unjudged.keys().cloned());
    let mut report = crate::report::Report::new(plan, method, names, render);
    let mut shown = BTreeMap::new();
    for (host, error) in unjudged {
        report.host(&host, &error);
        shown.insert(host, error);
    }
    dispatch_to(plan, &targets, action, |host, value| {
        let value = transform(value.clone());
        report.host(host, &value);
        shown.insert(host.to_string(), value);
    })?;
    if plan.json {
        crate::outln!("{}", crate::output::results_as(plan.out, &shown));
    }
    Ok(i32::from(!report.finish()))
}

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
    Action::call(method, params).map_err(|e| PlanError::Usage(format!("cannot encode the call: {e}")))
}
