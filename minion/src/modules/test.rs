//! `test`: Func's example module, used to check a minion end to end.

use common::xmlrpc::args::{describe, Args};
use common::Value;

use super::module::{Context, Module};
use crate::method::unreachable_method;
use crate::method::ArgInfo;
use crate::method::{MethodError, MethodInfo, MethodResult};

/// Longest `test.sleep`: a test method must not hold a thread for long.
pub const MAX_SLEEP: u64 = 300;

pub struct Test;

const METHODS: &[MethodInfo] = &[
    MethodInfo {
        name: "ping",
        description: "Returns 1.",
        args: &[],
    },
    MethodInfo {
        name: "add",
        description: "Adds two numbers, or concatenates two strings or lists.",
        args: &[
            ArgInfo {
                name: "numb1",
                kind: "int",
                optional: false,
                description: "first operand",
            },
            ArgInfo {
                name: "numb2",
                kind: "int",
                optional: false,
                description: "second operand",
            },
        ],
    },
    MethodInfo {
        name: "echo",
        description: "Returns its argument unchanged.",
        args: &[ArgInfo {
            name: "data",
            kind: "any",
            optional: false,
            description: "any value",
        }],
    },
    MethodInfo {
        name: "sleep",
        description: "Sleeps t seconds, returns the time it woke.",
        args: &[ArgInfo {
            name: "t",
            kind: "int",
            optional: false,
            description: "seconds",
        }],
    },
    MethodInfo {
        name: "explode",
        description: "Always fails.",
        args: &[],
    },
    MethodInfo {
        name: "explode_no_string",
        description: "Always fails, with an empty message.",
        args: &[],
    },
    MethodInfo {
        name: "bigint",
        description: "Returns 2**32 (sent as <i8>).",
        args: &[],
    },
];

impl Module for Test {
    fn name(&self) -> &'static str {
        "test"
    }
    fn description(&self) -> &'static str {
        "Just a very simple example module"
    }
    fn methods(&self) -> &'static [MethodInfo] {
        METHODS
    }
    fn is_instant(&self, method: &str) -> bool {
        method != "sleep"
    }
    fn call(&self, _ctx: &Context<'_>, method: &str, args: Args<'_>) -> MethodResult {
        match method {
            "ping" => args.arity(0, 0).map(|_| Value::Integer(1)).map_err(Into::into),
            "add" => {
                args.arity(2, 2)?;
                add(&args.all()[0], &args.all()[1])
            }
            "echo" => {
                args.arity(1, 1)?;
                Ok(args.all()[0].clone())
            }
            "sleep" => {
                args.arity(1, 1)?;
                let t = args.i64(0, "t")?;
                let secs = u64::try_from(t)
                    .map_err(|_| MethodError::value(format!("sleep length must not be negative, got {t}")))?;
                if secs > MAX_SLEEP {
                    return Err(MethodError::value(format!(
                        "sleep length {secs} s is over the {MAX_SLEEP} s test.sleep allows"
                    )));
                }
                std::thread::sleep(std::time::Duration::from_secs(secs));
                Ok(Value::Double(now()))
            }
            "explode" => Err(MethodError::new("exceptions.Exception", "khhhhhhaaaaaan!!!!!!")),
            "explode_no_string" => Err(MethodError::new("exceptions.Exception", "")),
            "bigint" => args
                .arity(0, 0)
                .map(|_| common::xmlrpc::int(1 << 32))
                .map_err(Into::into),
            _ => unreachable_method(method),
        }
    }
}

/// Python's `+` on the XML-RPC types it supports.
fn add(a: &Value, b: &Value) -> MethodResult {
    let as_f64 = |v: &Value| match v {
        Value::Integer(i) => Some(f64::from(*i)),
        Value::Long(l) => Some(*l as f64),
        Value::Double(d) => Some(*d),
        _ => None,
    };
    let as_i64 = |v: &Value| match v {
        Value::Integer(i) => Some(i64::from(*i)),
        Value::Long(l) => Some(*l),
        _ => None,
    };
    let number = |s: &str| -> Option<Value> {
        let t = s.trim();
        t.parse::<i64>()
            .map(common::xmlrpc::int)
            .ok()
            .or_else(|| t.parse::<f64>().ok().filter(|f| f.is_finite()).map(Value::Double))
    };
    match (a, b) {
        // The CLI sends every argument as a string (DESIGN §4): numeric
        // strings are added as numbers, other strings concatenate.
        (Value::String(x), Value::String(y)) => match (number(x), number(y)) {
            (Some(nx), Some(ny)) => add(&nx, &ny),
            _ => Ok(Value::String(format!("{x}{y}"))),
        },
        (Value::Array(x), Value::Array(y)) => Ok(Value::Array(x.iter().chain(y).cloned().collect())),
        _ => {
            if let (Some(x), Some(y)) = (as_i64(a), as_i64(b)) {
                return x
                    .checked_add(y)
                    .map(common::xmlrpc::int)
                    .ok_or_else(|| MethodError::new("OverflowError", "integer sum does not fit in 64 bits"));
            }
            match (as_f64(a), as_f64(b)) {
                (Some(x), Some(y)) => Ok(Value::Double(x + y)),
                _ => Err(MethodError::new(
                    "TypeError",
                    format!(
                        "unsupported operand type(s) for +: '{}' and '{}'",
                        describe(a),
                        describe(b)
                    ),
                )),
            }
        }
    }
}

/// Seconds since the epoch, as Python's `time.time()`.
pub fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_follows_python() {
        assert_eq!(
            add(&Value::String("1".into()), &Value::String(" 2".into())).unwrap(),
            Value::Integer(3)
        );
        assert_eq!(
            add(&Value::String("1.5".into()), &Value::String("2".into())).unwrap(),
            Value::Double(3.5)
        );
        assert_eq!(
            add(&Value::String("1".into()), &Value::String("x".into())).unwrap(),
            Value::String("1x".into())
        );
        assert_eq!(
            add(&Value::Integer(1), &Value::Integer(5)).unwrap(),
            Value::Integer(6)
        );
        assert_eq!(
            add(&Value::String("foo".into()), &Value::String("bar".into())).unwrap(),
            Value::String("foobar".into())
        );
        assert_eq!(
            add(&Value::Integer(i32::MAX), &Value::Integer(1)).unwrap(),
            Value::Long(i64::from(i32::MAX) + 1)
        );
        assert_eq!(
            add(&Value::Integer(1), &Value::Double(0.5)).unwrap(),
            Value::Double(1.5)
        );
        assert_eq!(
            add(&Value::String("a".into()), &Value::Integer(1))
                .unwrap_err()
                .kind,
            "TypeError"
        );
        assert_eq!(
            add(&Value::Long(i64::MAX), &Value::Integer(1)).unwrap_err().kind,
            "OverflowError"
        );
    }
}
