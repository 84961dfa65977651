//! `echo`: Func's module that answers what it is sent, one method per
//! XML-RPC type (funcweb rendered its forms, and Func's own tests call
//! `echo.run_string` through a fact filter). A string, integer or float
//! argument is converted as Python's `str()`, `int()` and `float()` would;
//! the others come back unchanged.

use common::xmlrpc::args::Args;
use common::Value;

use super::module::{Context, Module};
use crate::method::{unreachable_method, ArgInfo, MethodInfo, MethodResult};

pub struct Echo;

/// One method answering its argument `command` of XML-RPC type `$kind`.
macro_rules! echoing {
    ($name:literal, $kind:literal, $description:literal) => {
        MethodInfo {
            name: $name,
            description: $description,
            args: &[ArgInfo {
                name: "command",
                kind: $kind,
                optional: false,
                description: "what to answer back",
            }],
        }
    };
}

const METHODS: &[MethodInfo] = &[
    echoing!("run_string", "string", "Returns back a string."),
    echoing!("run_int", "int", "Returns back an integer."),
    echoing!("run_float", "float", "Returns back a float."),
    echoing!(
        "run_options",
        "string",
        "Returns back the option chosen, as a string."
    ),
    echoing!("run_list", "list", "Returns back a list."),
    echoing!("run_hash", "hash", "Returns back a hash."),
    echoing!("run_boolean", "boolean", "Returns back a boolean."),
];

impl Module for Echo {
    fn name(&self) -> &'static str {
        "echo"
    }
    fn description(&self) -> &'static str {
        "Answers back what each of its methods is sent"
    }
    fn methods(&self) -> &'static [MethodInfo] {
        METHODS
    }
    fn is_instant(&self, _method: &str) -> bool {
        true
    }
    fn call(&self, _ctx: &Context<'_>, method: &str, args: Args<'_>) -> MethodResult {
        if !METHODS.iter().any(|m| m.name == method) {
            return unreachable_method(method);
        }
        args.arity(1, 1)?;
        Ok(match method {
            "run_string" | "run_options" => Value::String(args.string(0, "command")?),
            "run_int" => common::xmlrpc::int(args.i64(0, "command")?),
            "run_float" => Value::Double(args.f64(0, "command")?),
            _ => args.all()[0].clone(),
        })
    }
}
