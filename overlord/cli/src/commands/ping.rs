//! `func SPEC ping`: `test.ping` on every target, one line per host:
//! `[ ok ... ] host` or `[ FAILED ] host`.

use common::Value;

use overlord::plan::{Plan, PlanError};

pub fn run(plan: &Plan) -> Result<i32, PlanError> {
    let action = overlord::calling::call_action("test.ping", Vec::new())?;
    crate::display::call_and_show(plan, "test.ping", action, line, &|v| v)
}

/// `[ ok ... ] host` or `[ FAILED ] host  (why)`.
fn line(_method: &str, host: &str, value: &Value, colour: bool) -> String {
    if *value == Value::Integer(1) {
        return format!("[ ok ... ] {host}\n");
    }
    let why = if common::xmlrpc::is_remote_error(value) {
        crate::display::output::error_line(value)
    } else {
        "unexpected answer".into()
    };
    format!(
        "{} {host}  ({why})\n",
        crate::display::report::red("[ FAILED ]", colour)
    )
}
