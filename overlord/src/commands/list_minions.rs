//! `func SPEC list_minions`: the signed minions SPEC names, sorted (no
//! network traffic).

use crate::plan::{Plan, PlanError};

pub fn run(plan: &Plan) -> Result<i32, PlanError> {
    let targets = plan.targets()?;
    if plan.json {
        let doc: serde_json::Map<String, serde_json::Value> = targets
            .into_iter()
            .map(|t| (t.name, serde_json::Value::String(t.addr)))
            .collect();
        crate::output::print_doc(plan.out, &doc);
    } else {
        for t in targets {
            crate::outln!("{}", t.name);
        }
    }
    Ok(0)
}
