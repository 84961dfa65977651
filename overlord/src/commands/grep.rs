//! `func SPEC grep WORD`: `system.grep(WORD)` on every target — what each
//! minion's modules know that mentions WORD.

use common::Value;

use crate::plan::{Globals, Plan, PlanError};

#[derive(Debug)]
pub struct Grep {
    pub word: String,
}

impl Grep {
    pub fn parse(rest: &[String], globals: &mut Globals) -> Result<Self, PlanError> {
        let words = super::words(rest, globals);
        match words.as_slice() {
            [word] if !word.trim().is_empty() => Ok(Self { word: word.clone() }),
            _ => Err(PlanError::Usage("grep needs exactly one WORD".into())),
        }
    }

    pub fn run(&self, plan: &Plan) -> Result<i32, PlanError> {
        let action = super::call_action("system.grep", vec![Value::String(self.word.clone())])?;
        let results = super::dispatch_to_targets(plan, &action)?;
        Ok(super::print_results(plan, "system.grep", &results))
    }
}
