//! `fact`: Func's facts module — `list_fact_modules`, `list_fact_methods`,
//! `show_fact_module`, `show_fact_method`, `call_fact`, `grep` — and
//! `items()`, every fact by its tag as one struct (Salt's `grains.items`).
//! The facts themselves: `crate::facts`.

use std::collections::{BTreeMap, BTreeSet};

use common::xmlrpc::args::Args;
use common::Value;

use super::module::{Context, Module};
use crate::facts::{builtin, Facts};
use crate::method::unreachable_method;
use crate::method::{record, strings, ArgInfo, MethodInfo, MethodResult};

pub struct Fact;

const NAME: ArgInfo = ArgInfo {
    name: "name",
    kind: "string",
    optional: false,
    description: "a fact's module.method or tag",
};

const METHODS: &[MethodInfo] = &[
    MethodInfo {
        name: "list_fact_modules",
        description: "The fact modules: built-in (hardware, os, network) and each facts.d file.",
        args: &[],
    },
    MethodInfo {
        name: "list_fact_methods",
        description: "Every fact's module.method and tag; with abort_on_conflict, {\"__conflict__\": {tag: [methods]}} when a tag is given twice.",
        args: &[ArgInfo {
            name: "abort_on_conflict",
            kind: "boolean",
            optional: true,
            description: "report tags that more than one fact claims (default false)",
        }],
    },
    MethodInfo {
        name: "show_fact_module",
        description: "{name, description, version} of a fact module ({} if none).",
        args: &[ArgInfo {
            name: "module_name",
            kind: "string",
            optional: false,
            description: "a fact module",
        }],
    },
    MethodInfo {
        name: "show_fact_method",
        description: "{name, description, tag, usage} of a fact ({} if none).",
        args: &[NAME],
    },
    MethodInfo {
        name: "call_fact",
        description: "A fact's value now ({} if none).",
        args: &[NAME],
    },
    MethodInfo {
        name: "grep",
        description: "Facts whose 'tag: value' contains a word (any case).",
        args: &[ArgInfo {
            name: "word",
            kind: "string",
            optional: false,
            description: "text to look for",
        }],
    },
    MethodInfo {
        name: "items",
        description: "Every fact by its tag (Salt's grains.items); local facts that cannot be read under __errors__.",
        args: &[],
    },
];

impl Module for Fact {
    fn name(&self) -> &'static str {
        "fact"
    }
    fn description(&self) -> &'static str {
        "Facts about this minion, for targeting (--filter, -G) and inventory."
    }
    fn methods(&self) -> &'static [MethodInfo] {
        METHODS
    }
    fn call(&self, ctx: &Context<'_>, method: &str, args: Args<'_>) -> MethodResult {
        let facts = || Facts::read(ctx.root);
        let empty = || Value::Struct(BTreeMap::new());
        match method {
            "list_fact_modules" => {
                args.arity(0, 0)?;
                let mut names: BTreeSet<String> =
                    builtin::MODULES.iter().map(|(m, _)| m.to_string()).collect();
                names.extend(facts().methods.into_iter().map(|m| m.module));
                Ok(strings(names))
            }
            "list_fact_methods" => {
                args.arity(0, 1)?;
                Ok(list_fact_methods(
                    &facts(),
                    args.opt_bool(0, "abort_on_conflict")?.unwrap_or(false),
                ))
            }
            "show_fact_module" => {
                args.arity(1, 1)?;
                let name = args.string(0, "module_name")?;
                Ok(self.show_fact_module(name, facts))
            }
            "show_fact_method" => {
                args.arity(1, 1)?;
                let name = args.string(0, "name")?;
                let all = facts();
                Ok(match all.get(&name) {
                    Some(m) => record([
                        ("name", Value::String(m.name.clone())),
                        ("description", Value::String(m.description.clone())),
                        ("tag", Value::String(m.tag.clone())),
                        ("usage", Value::String(format!("--filter '{}=VALUE'", m.tag))),
                    ]),
                    None => empty(),
                })
            }
            "call_fact" => {
                args.arity(1, 1)?;
                let name = args.string(0, "name")?;
                Ok(facts().get(&name).map_or_else(empty, |m| m.value.clone()))
            }
            "grep" => {
                args.arity(1, 1)?;
                let word = args.string(0, "word")?.to_lowercase();
                let Value::Struct(items) = facts().items() else {
                    return Ok(empty());
                };
                let hits: Vec<String> = items
                    .iter()
                    .map(|(k, v)| format!("{k}: {}", shown(v)))
                    .filter(|line| line.to_lowercase().contains(&word))
                    .collect();
                Ok(record([("fact.items", strings(hits))]))
            }
            "items" => {
                args.arity(0, 0)?;
                Ok(facts().items())
            }
            _ => unreachable_method(method),
        }
    }
}

impl Fact {
    /// `show_fact_module`: a built-in module, or one of `etc/func/facts.d`'s.
    fn show_fact_module(&self, name: String, facts: impl Fn() -> Facts) -> Value {
        let empty = || Value::Struct(BTreeMap::new());
        if let Some((_, description)) = builtin::MODULES.iter().find(|(m, _)| *m == name) {
            return record([
                ("name", Value::String(name)),
                ("description", Value::String(description.to_string())),
                ("version", Value::String(self.version().into())),
            ]);
        }
        let all = facts();
        match all.methods.iter().find(|m| m.module == name) {
            Some(m) => record([
                ("name", Value::String(name)),
                ("description", Value::String(m.description.clone())),
                ("version", Value::String(self.version().into())),
            ]),
            None => empty(),
        }
    }
}

/// `list_fact_methods`: every method name and tag, or with
/// `abort_on_conflict` the tags claimed twice (`{"__conflict__": …}`).
fn list_fact_methods(all: &Facts, abort_on_conflict: bool) -> Value {
    let mut claims: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for m in &all.methods {
        claims.entry(&m.tag).or_default().push(&m.name);
    }
    let conflicts: BTreeMap<&str, Vec<&str>> =
        claims.into_iter().filter(|(_, names)| names.len() > 1).collect();
    if abort_on_conflict && !conflicts.is_empty() {
        let conflict = conflicts.into_iter().map(|(tag, names)| (tag, strings(names)));
        return record([("__conflict__", record(conflict))]);
    }
    let names: BTreeSet<&str> = all
        .methods
        .iter()
        .flat_map(|m| [m.name.as_str(), m.tag.as_str()])
        .collect();
    strings(names)
}

/// A fact's value on one line.
fn shown(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Integer(i) => i.to_string(),
        Value::Long(l) => l.to_string(),
        Value::Double(d) => d.to_string(),
        Value::Boolean(b) => b.to_string(),
        Value::Array(items) => items.iter().map(shown).collect::<Vec<_>>().join(", "),
        other => format!("{other:?}"),
    }
}
