//! `func SPEC show hardware [KEYS...]`: `hardware.info` per target, all of
//! it or only the named keys.

use std::collections::BTreeMap;

use common::Value;

use overlord::plan::{Plan, PlanError};

#[derive(Debug)]
pub struct Show {
    pub keys: Vec<String>,
}

impl Show {
    pub fn run(&self, plan: &Plan) -> Result<i32, PlanError> {
        let action = overlord::calling::call_action("hardware.info", vec![Value::Boolean(false)])?;
        let pick = |value: Value| match value {
            Value::Struct(all) if !self.keys.is_empty() => Value::Struct(
                all.into_iter()
                    .filter(|(k, _)| self.keys.contains(k))
                    .collect::<BTreeMap<String, Value>>(),
            ),
            other => other,
        };
        crate::display::call_and_show(
            plan,
            "hardware.info",
            action,
            crate::display::report::block,
            &pick,
        )
    }
}
