//! `system`: the minion's self-description (`listMethods`, `list_methods`,
//! `list_modules`, `inventory`) and `grep(word)` over every module that has a
//! `grep` method the caller may call itself (an ACL limit on `process.grep`
//! is not escaped through `system.grep`).

use common::xmlrpc::args::Args;
use common::Value;

use super::test::unreachable_method;
use super::{record, strings, ArgInfo, Context, MethodInfo, MethodResult, Module, Registry};

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
                .map(|_| strings(reg.modules().map(|m| m.name())))
                .map_err(Into::into),
            "inventory" => args
                .arity(0, 0)
                .map(|_| {
                    record(
                        reg.modules()
                            .map(|m| (m.name(), strings(Registry::method_names(m)))),
                    )
                })
                .map_err(Into::into),
            "grep" => {
                args.arity(1, 1)?;
                let word = Value::String(args.string(0, "word")?);
                let mut merged = std::collections::BTreeMap::new();
                for module in reg
                    .modules()
                    .filter(|m| m.name() != "system" && m.methods().iter().any(|x| x.name == "grep"))
                    .filter(|m| ctx.may_call(&format!("{}.grep", m.name())))
                {
                    // A module that cannot answer (no systemd, no ps) is left out, not fatal.
                    if let Ok(Value::Struct(found)) =
                        module.call(ctx, "grep", Args::new("grep", std::slice::from_ref(&word)))
                    {
                        merged.extend(
                            found
                                .into_iter()
                                .filter(|(_, v)| !matches!(v, Value::Array(a) if a.is_empty())),
                        );
                    }
                }
                Ok(Value::Struct(merged))
            }
            _ => unreachable_method(method),
        }
    }
}
