//! `func SPEC show hardware [KEYS...]`: `hardware.info` per target, all of
//! it or only the named keys.

use std::collections::BTreeMap;

use common::Value;

use crate::plan::{Plan, PlanError};

#[derive(Debug)]
pub struct Show {
    pub keys: Vec<String>,
}

impl Show {

    pub fn run(&self, plan: &Plan) -> Result<i32, PlanError> {
        let action = super::call_action("hardware.info", vec![Value::Boolean(false)])?;
        let mut results = super::dispatch_to_targets(plan, &action)?;
        if !self.keys.is_empty() {
            for value in results.values_mut() {
                if let Value::Struct(all) = value {
                    let picked: BTreeMap<String, Value> = all
                        .iter()
                        .filter(|(k, _)| self.keys.contains(k))
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect();
                    *value = Value::Struct(picked);
                }
            }
        }
        Ok(super::print_results(plan, "hardware.info", &results))
    }
}
