//! `overlord`: Func's module for "minions that are also overlords", which
//! Func's own `func-build-map` asks every minion for (`map_minions`). A
//! funcd is an overlord only where its root also holds a built map (a
//! relay's host, DESIGN §17: `var/lib/func/map`, written by func-build-map
//! there): that map is its answer, as Func's relay answered its part;
//! any other minion has nothing below it and answers `{}`, as Func's did.

use common::xmlrpc::args::Args;
use common::Value;

use super::module::{Context, Module};
use crate::method::{unreachable_method, ArgInfo, MethodError, MethodInfo, MethodResult};

pub struct Overlord;

/// Largest map read (as the overlord's own bound).
const MAX_MAP: u64 = 64 << 20;

const METHODS: &[MethodInfo] = &[MethodInfo {
    name: "map_minions",
    description: "The minions below this one when it is also an overlord (a relay's map); {} otherwise.",
    args: &[ArgInfo {
        name: "get_only_alive",
        kind: "boolean",
        optional: true,
        description: "Func's flag; the map is the one func-build-map last built here",
    }],
}];

impl Module for Overlord {
    fn name(&self) -> &'static str {
        "overlord"
    }
    fn description(&self) -> &'static str {
        "Module for controlling minions that are also overlords."
    }
    fn methods(&self) -> &'static [MethodInfo] {
        METHODS
    }
    fn call(&self, ctx: &Context<'_>, method: &str, args: Args<'_>) -> MethodResult {
        match method {
            "map_minions" => {
                args.arity(0, 1)?;
                args.opt_bool(0, "get_only_alive")?;
                map_minions(ctx)
            }
            _ => unreachable_method(method),
        }
    }
}

fn map_minions(ctx: &Context<'_>) -> MethodResult {
    use std::io::Read as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let path = ctx.root.join("var/lib/func/map");
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits())
        .open(&path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Value::Struct(Default::default())),
        Err(e) => return Err(MethodError::os(format!("{}: {e}", path.display()))),
    };
    let mut text = String::new();
    file.take(MAX_MAP + 1)
        .read_to_string(&mut text)
        .map_err(|e| MethodError::os(format!("{}: {e}", path.display())))?;
    if text.len() as u64 > MAX_MAP {
        return Err(MethodError::value(format!(
            "{} is larger than {MAX_MAP} bytes",
            path.display()
        )));
    }
    let map: serde_json::Value =
        yaml_serde::from_str(&text).map_err(|e| MethodError::value(format!("{}: {e}", path.display())))?;
    Ok(as_value(&map))
}

/// The map (names → what is below them) as XML-RPC structs.
fn as_value(map: &serde_json::Value) -> Value {
    match map {
        serde_json::Value::Object(o) => {
            Value::Struct(o.iter().map(|(k, v)| (k.clone(), as_value(v))).collect())
        }
        _ => Value::Struct(Default::default()),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_map_becomes_nested_structs() {
        let map: serde_json::Value = yaml_serde::from_str("relay1: {web1: {}}\nmail1: {}\n").unwrap();
        let v = super::as_value(&map);
        let common::Value::Struct(top) = v else { panic!() };
        assert!(matches!(&top["mail1"], common::Value::Struct(s) if s.is_empty()));
        assert!(matches!(&top["relay1"], common::Value::Struct(s) if s.contains_key("web1")));
    }
}
