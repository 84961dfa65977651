//! `func SPEC list_minions`: the signed minions SPEC names, in natural
//! order like every other listing (m1, m2, m10; no network traffic).

use overlord::engine::{self, Answer, Request};
use overlord::plan::{Plan, PlanError};

pub fn run(plan: &Plan) -> Result<i32, PlanError> {
    let answer = engine::serve(plan, None, Request::ListMinions, &mut engine::Unwatched)?;
    match (&answer, plan.json) {
        (_, true) => crate::display::output::print_doc(plan.out, &answer.document()),
        (Answer::Minions { targets, .. }, false) => {
            for t in targets {
                overlord::outln!("{}", t.name);
            }
        }
        _ => {}
    }
    Ok(answer.exit_code())
}
