//! Whether a host's result is a failure. A `REMOTE_ERROR` always is; beyond
//! that a module states a rule about its own results (`Module::result_rule`
//! on the minion), and this table is what the overlord, which never links
//! the minion, judges by. A minion unit test keeps the two in step.
//!
//! The wire result never changes (Func's `command.run` still answers
//! `[rc, stdout, stderr]`); only the overlord's verdict does: output,
//! summary, exit status, `--failhard`.

use crate::xmlrpc::is_remote_error;
use crate::Value;

/// How a method's results tell failure from success.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResultRule {
    /// Only a `REMOTE_ERROR` is a failure.
    Value,
    /// `[rc, stdout, stderr]`: a non-zero `rc` is a failure too.
    ExitStatus,
}

/// The rule of `method` (`module.method`).
pub fn rule(method: &str) -> ResultRule {
    match method {
        "command.run" => ResultRule::ExitStatus,
        _ => ResultRule::Value,
    }
}

/// Why `value`, a result of `method`, is a failure; `None` for a success.
pub fn failure(method: &str, value: &Value) -> Option<String> {
    if is_remote_error(value) {
        return Some("remote error".into());
    }
    match (rule(method), value) {
        (ResultRule::ExitStatus, Value::Array(items)) => match items.first() {
            Some(Value::Integer(0)) => None,
            Some(Value::Integer(rc)) => Some(format!("exit status {rc}")),
            Some(Value::Long(rc)) if *rc != 0 => Some(format!("exit status {rc}")),
            _ => None,
        },
        _ => None,
    }
}

/// Whether `value`, a result of `method`, is a success.
pub fn ok(method: &str, value: &Value) -> bool {
    failure(method, value).is_none()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_status_fails_command_run_only() {
        let run = |rc| {
            Value::Array(vec![
                Value::Integer(rc),
                Value::String("".into()),
                Value::String("".into()),
            ])
        };
        assert!(ok("command.run", &run(0)));
        assert_eq!(failure("command.run", &run(3)).as_deref(), Some("exit status 3"));
        assert!(ok("test.echo", &run(3)), "other methods' lists are values");
        let err = crate::xmlrpc::remote_error("X", "y", "");
        assert!(!ok("test.ping", &err) && !ok("command.run", &err));
    }
}
