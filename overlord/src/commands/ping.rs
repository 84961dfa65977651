//! `func SPEC ping`: `test.ping` on every target, one line per host:
//! `[ ok ... ] host` or `[ FAILED ] host`.

use common::Value;

use crate::plan::{Plan, PlanError};

pub fn run(plan: &Plan) -> Result<i32, PlanError> {
    let results = super::dispatch_to_targets(plan, &super::call_action("test.ping", Vec::new())?)?;
    if plan.json {
        return Ok(super::print_results(plan, "test.ping", &results));
    }
    let mut failed = false;
    for (host, value) in &results {
        if *value == Value::Integer(1) {
            crate::outln!("[ ok ... ] {host}");
        } else {
            failed = true;
            let why = if common::xmlrpc::is_remote_error(value) {
                crate::output::error_line(value)
            } else {
                "unexpected answer".into()
            };
            crate::outln!("[ FAILED ] {host}  ({why})");
        }
    }
    Ok(i32::from(failed))
}
