//! `system`: the minion's self-description (`listMethods`, `list_methods`,
//! `list_modules`, `inventory`), built-in and drop-in modules alike; the
//! state of every drop-in file (`module_status`, `reload_modules`); and
//! `grep(word)` over every module that has a `grep` method the caller may
//! call itself (an ACL limit on `process.grep` is not escaped through
//! `system.grep`).

use common::xmlrpc::args::Args;
use common::Value;

use super::module::{Context, Module};
use crate::method::unreachable_method;
use crate::method::{record, strings, ArgInfo, MethodInfo, MethodResult};

pub struct System;

const METHODS: &[MethodInfo] = &[
    MethodInfo {
        name: "listMethods",
        description: "Every module.method, sorted.",
        args: &[],
    },
    MethodInfo {
        name: "list_methods",
        description: "Every module.method, sorted.",
        args: &[],
    },
    MethodInfo {
        name: "list_modules",
        description: "Module names, sorted.",
        args: &[],
    },
    MethodInfo {
        name: "inventory",
        description: "{module: [method, ...]}",
        args: &[],
    },
    MethodInfo {
        name: "module_status",
        description:
            "Every drop-in module file: {path: {module, state, detail}}; state is loaded, refused, \
                      broken, shadowed (a built-in has its name) or overridden (a local module has its name).",
        args: &[],
    },
    MethodInfo {
        name: "reload_modules",
        description:
            "Looks at the drop-in module directories now (every call does) and returns module_status.",
        args: &[],
    },
    MethodInfo {
        name: "grep",
        description:
            "Runs grep(word) on every module that has it (and the caller may call) and merges the results.",
        args: &[ArgInfo {
            name: "word",
            kind: "string",
            optional: false,
            description: "text to look for",
        }],
    },
];

impl Module for System {
    fn name(&self) -> &'static str {
        "system"
    }
    fn description(&self) -> &'static str {
        "Lists the minion's modules and methods."
    }
    fn methods(&self) -> &'static [MethodInfo] {
        METHODS
    }
    fn call(&self, ctx: &Context<'_>, method: &str, args: Args<'_>) -> MethodResult {
        let reg = ctx.registry;
        match method {
            "listMethods" | "list_methods" => args
                .arity(0, 0)
                .map(|_| strings(reg.qualified_names()))
                .map_err(Into::into),
            "list_modules" => args
                .arity(0, 0)
                .map(|_| strings(reg.module_names()))
                .map_err(Into::into),
            "inventory" => args.arity(0, 0).map(|_| reg.inventory()).map_err(Into::into),
            "module_status" | "reload_modules" => args
                .arity(0, 0)
                .map(|_| {
                    record(reg.dropins().status.into_iter().map(|s| {
                        let info = record([
                            ("module", Value::String(s.module)),
                            ("state", Value::String(s.state.into())),
                            ("detail", Value::String(s.detail)),
                        ]);
                        (s.shown, info)
                    }))
                })
                .map_err(Into::into),
            "grep" => {
                args.arity(1, 1)?;
                let word = Value::String(args.string(0, "word")?);
                let mut merged = std::collections::BTreeMap::new();
                for module in reg
                    .builtins()
                    .into_iter()
                    .filter(|m| m.name() != "system" && m.methods().iter().any(|x| x.name == "grep"))
                    .filter(|m| ctx.may_call(&format!("{}.grep", m.name())))
                {
                    // A module that cannot answer (no systemd, no ps) is left out, not fatal.
                    if let Ok(Value::Struct(found)) =
                        module.call(ctx, "grep", Args::new("grep", std::slice::from_ref(&word)))
                    {
                        merged.extend(found);
                    }
                }
                for (name, m) in reg.dropins().modules {
                    let method = format!("{name}.grep");
                    if m.method("grep").is_some() && ctx.may_call(&method) {
                        if let Ok(Value::Struct(found)) = reg.call(ctx, &method, std::slice::from_ref(&word))
                        {
                            merged.extend(found);
                        }
                    }
                }
                merged.retain(|_, v| !matches!(v, Value::Array(a) if a.is_empty()));
                Ok(Value::Struct(merged))
            }
            _ => unreachable_method(method),
        }
    }
}
