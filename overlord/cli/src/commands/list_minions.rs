//! `func SPEC list_minions`: the signed minions SPEC names, in natural
//! order like every other listing (m1, m2, m10; no network traffic).

use overlord::plan::{Plan, PlanError};

pub fn run(plan: &Plan) -> Result<i32, PlanError> {
    let mut targets = plan.targets()?;
    targets.sort_by(|a, b| crate::display::report::natural_cmp(&a.name, &b.name));
    if plan.json {
        let doc: serde_json::Map<String, serde_json::Value> = targets
            .into_iter()
            .map(|t| (t.name, serde_json::Value::String(t.addr)))
            .collect();
        crate::display::output::print_doc(plan.out, &doc);
    } else {
        for t in targets {
            overlord::outln!("{}", t.name);
        }
    }
    Ok(0)
}
