//! `func SPEC grep WORD`: `system.grep(WORD)` on every target — what each
//! minion's modules know that mentions WORD.

use common::Value;

use overlord::plan::{Plan, PlanError};

#[derive(Debug)]
pub struct Grep {
    pub word: String,
}

impl Grep {
    pub fn new(word: String) -> Result<Self, PlanError> {
        match word.trim().is_empty() {
            true => Err(PlanError::usage("grep needs a WORD that is not empty".into())),
            false => Ok(Self { word }),
        }
    }

    pub fn run(&self, plan: &Plan) -> Result<i32, PlanError> {
        let action = overlord::calling::call_action("system.grep", vec![Value::String(self.word.clone())])?;
        crate::display::call_and_show(plan, "system.grep", action, crate::display::report::block, &|v| v)
    }
}
