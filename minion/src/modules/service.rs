//! `service`: control and list services through systemd's `systemctl`
//! (Func used SysV `/sbin/service`). Methods return `systemctl`'s exit code
//! as Func returned `service`'s. Without a running systemd the methods fail
//! with a clear error rather than a confusing exit code.

use std::path::Path;
use std::process::Command as Process;

use common::xmlrpc::args::Args;
use common::Value;

use super::module::{Context, Module};
use crate::method::unreachable_method;
use crate::method::{record, strings, ArgInfo, MethodError, MethodInfo, MethodResult};

pub struct Service;

const NAME: ArgInfo = ArgInfo {
    name: "service_name",
    kind: "string",
    optional: false,
    description: "unit name, e.g. sshd",
};

const METHODS: &[MethodInfo] = &[
    MethodInfo {
        name: "start",
        description: "systemctl start; returns its exit code.",
        args: &[NAME],
    },
    MethodInfo {
        name: "stop",
        description: "systemctl stop; returns its exit code.",
        args: &[NAME],
    },
    MethodInfo {
        name: "restart",
        description: "systemctl restart; returns its exit code.",
        args: &[NAME],
    },
    MethodInfo {
        name: "reload",
        description: "systemctl reload; returns its exit code.",
        args: &[NAME],
    },
    MethodInfo {
        name: "status",
        description: "systemctl status: 0 running, 3 stopped, 4 unknown.",
        args: &[NAME],
    },
    MethodInfo {
        name: "get_running",
        description: "[[name, 'running'], ...]",
        args: &[],
    },
    MethodInfo {
        name: "get_enabled",
        description: "[[name, 'enabled'], ...]",
        args: &[],
    },
    MethodInfo {
        name: "inventory",
        description: "{running: [...], enabled: [...], systemd: bool} (a host without systemd has none)",
        args: &[],
    },
    MethodInfo {
        name: "grep",
        description: "Service names containing a word.",
        args: &[ArgInfo {
            name: "word",
            kind: "string",
            optional: false,
            description: "text to look for",
        }],
    },
];

impl Module for Service {
    fn name(&self) -> &'static str {
        "service"
    }
    fn description(&self) -> &'static str {
        "Allows for service control via func."
    }
    fn methods(&self) -> &'static [MethodInfo] {
        METHODS
    }
    fn call(&self, _ctx: &Context<'_>, method: &str, args: Args<'_>) -> MethodResult {
        match method {
            "start" | "stop" | "restart" | "reload" | "status" => {
                args.arity(1, 1)?;
                let name = unit_name(&args.string(0, "service_name")?)?;
                require_systemd()?;
                let mut cmd = Process::new("systemctl");
                if method == "status" {
                    cmd.args(["status", "--no-pager", "--lines=0"]);
                } else {
                    cmd.arg(method);
                }
                let status = cmd
                    .arg("--")
                    .arg(&name)
                    .output()
                    .map_err(|e| MethodError::os(format!("cannot run systemctl: {e}")))?
                    .status;
                Ok(Value::Integer(status.code().unwrap_or(-1)))
            }
            "get_running" => args
                .arity(0, 0)
                .map_err(Into::into)
                .and_then(|_| Ok(pairs(&running()?, "running"))),
            "get_enabled" => args
                .arity(0, 0)
                .map_err(Into::into)
                .and_then(|_| Ok(pairs(&enabled()?, "enabled"))),
            "inventory" => {
                args.arity(0, 0)?;
                // What the host has: without systemd, no services (a
                // container's inventory is no failure); control still is.
                let booted = require_systemd().is_ok();
                let (running, enabled) = match booted {
                    true => (running()?, enabled()?),
                    false => (Vec::new(), Vec::new()),
                };
                Ok(record([
                    ("running", pairs(&running, "running")),
                    ("enabled", pairs(&enabled, "enabled")),
                    ("systemd", Value::Boolean(booted)),
                ]))
            }
            "grep" => {
                args.arity(1, 1)?;
                let word = args.string(0, "word")?.trim().to_lowercase();
                let mut names = enabled()?;
                names.extend(running()?);
                names.sort();
                names.dedup();
                names.retain(|n| n.to_lowercase().contains(&word));
                Ok(record([("service.inventory", strings(names))]))
            }
            _ => unreachable_method(method),
        }
    }
}

/// systemd's own test for "booted with systemd" (`sd_booted`).
fn require_systemd() -> Result<(), MethodError> {
    if Path::new("/run/systemd/system").is_dir() {
        Ok(())
    } else {
        Err(MethodError::new(
            "func.minion.codes.FuncException",
            "systemd is not running on this host (no /run/systemd/system): service control is unavailable",
        ))
    }
}

fn unit_name(name: &str) -> Result<String, MethodError> {
    let ok = !name.is_empty()
        && name.len() <= 256
        && !name.starts_with('-')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"@._:-\\".contains(&b));
    if ok {
        Ok(name.to_string())
    } else {
        Err(MethodError::value(format!(
            "{:?} is not a service name",
            common::paths::shorten(name)
        )))
    }
}

fn list(args: &[&str]) -> Result<Vec<String>, MethodError> {
    require_systemd()?;
    let out = Process::new("systemctl")
        .args(args)
        .args(["--no-legend", "--plain", "--no-pager"])
        .output()
        .map_err(|e| MethodError::os(format!("cannot run systemctl: {e}")))?;
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(|u| u.trim_end_matches(".service").to_string())
        .collect())
}

fn running() -> Result<Vec<String>, MethodError> {
    list(&["list-units", "--type=service", "--state=running"])
}

fn enabled() -> Result<Vec<String>, MethodError> {
    list(&["list-unit-files", "--type=service", "--state=enabled"])
}

fn pairs(names: &[String], state: &str) -> Value {
    Value::Array(names.iter().map(|n| strings([n.as_str(), state])).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unit_names_are_checked() {
        assert!(unit_name("sshd").is_ok() && unit_name("getty@tty1.service").is_ok());
        for bad in ["", "-rf", "a b", "a;b", "$(x)"] {
            assert!(unit_name(bad).is_err(), "{bad}");
        }
    }
}
