//! `hardware`: a hardware profile read straight from `/proc` and `/sys` (Func
//! used smolt; no external tool is needed here): CPU, memory, disks, OS, and
//! optionally PCI devices.

use std::fs;

use common::xmlrpc::{args::Args, int};
use common::Value;

use super::test::unreachable_method;
use super::{record, strings, ArgInfo, Context, MethodInfo, MethodResult, Module};

pub struct Hardware;

const METHODS: &[MethodInfo] = &[
    MethodInfo {
        name: "info",
        description: "CPU, memory, disks, OS (and PCI devices unless with_devices is false).",
        args: &[ArgInfo {
            name: "with_devices",
            kind: "boolean",
            optional: true,
            description: "include PCI devices (default true)",
        }],
    },
    MethodInfo {
        name: "inventory",
        description: "Same as info().",
        args: &[],
    },
    MethodInfo {
        name: "grep",
        description: "info() entries containing a word.",
        args: &[ArgInfo {
            name: "word",
            kind: "string",
            optional: false,
            description: "text to look for",
        }],
    },
];

impl Module for Hardware {
    fn name(&self) -> &'static str {
        "hardware"
    }
    fn description(&self) -> &'static str {
        "Hardware profiler."
    }
    fn methods(&self) -> &'static [MethodInfo] {
        METHODS
    }
    fn call(&self, _ctx: &Context<'_>, method: &str, args: Args<'_>) -> MethodResult {
        match method {
            "info" => {
                args.arity(0, 1)?;
                Ok(info(args.opt_bool(0, "with_devices")?.unwrap_or(true)))
            }
            "inventory" => args.arity(0, 0).map(|_| info(true)).map_err(Into::into),
            "grep" => {
                args.arity(1, 1)?;
                let word = args.string(0, "word")?.trim().to_lowercase();
                let Value::Struct(all) = info(false) else {
                    return Ok(record::<&str>([]));
                };
                let hits: Vec<String> = all
                    .iter()
                    .filter_map(|(k, v)| match v {
                        Value::String(s) => Some(format!("{k}: {s}")),
                        Value::Integer(i) => Some(format!("{k}: {i}")),
                        _ => None,
                    })
                    .filter(|line| line.to_lowercase().contains(&word))
                    .collect();
                Ok(record([("hardware.info", strings(hits))]))
            }
            _ => unreachable_method(method),
        }
    }
}

fn read(path: &str) -> String {
    fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// `key: value` lines of a /proc file.
fn kv(text: &str, key: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == key).then(|| v.trim().to_string())
    })
}

fn info(with_devices: bool) -> Value {
    let cpuinfo = read("/proc/cpuinfo");
    let meminfo = read("/proc/meminfo");
    let num_cpus = cpuinfo
        .lines()
        .filter(|l| l.starts_with("processor"))
        .count()
        .max(1);
    let mib = |key: &str| {
        kv(&meminfo, key)
            .and_then(|v| v.split_whitespace().next()?.parse::<i64>().ok())
            .map(|kib| int(kib / 1024))
            .unwrap_or(Value::Integer(0))
    };
    let os_release = fs::read_to_string("/etc/os-release").unwrap_or_default();
    let os = os_release
        .lines()
        .find_map(|l| l.strip_prefix("PRETTY_NAME="))
        .map(|v| v.trim_matches('"').to_string())
        .unwrap_or_else(|| "unknown".into());
    let uname = nix::sys::utsname::uname().ok();
    let platform = uname
        .as_ref()
        .map(|u| u.machine().to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut fields = vec![
        (
            "cpuModel",
            Value::String(kv(&cpuinfo, "model name").unwrap_or_else(|| "unknown".into())),
        ),
        (
            "cpuVendor",
            Value::String(kv(&cpuinfo, "vendor_id").unwrap_or_else(|| "unknown".into())),
        ),
        (
            "cpuSpeed",
            Value::Integer(
                kv(&cpuinfo, "cpu MHz")
                    .and_then(|v| v.parse::<f64>().ok())
                    .map(|f| f as i32)
                    .unwrap_or(0),
            ),
        ),
        (
            "bogomips",
            Value::String(kv(&cpuinfo, "bogomips").unwrap_or_default()),
        ),
        ("numCpus", int(num_cpus as i64)),
        ("systemMemory", mib("MemTotal")),
        ("systemSwap", mib("SwapTotal")),
        ("kernelVersion", Value::String(read("/proc/sys/kernel/osrelease"))),
        ("os", Value::String(os)),
        ("platform", Value::String(platform)),
        ("disks", disks()),
    ];
    if with_devices {
        fields.push(("devices", pci_devices()));
    }
    record(fields)
}

fn disks() -> Value {
    let mut names: Vec<String> = fs::read_dir("/sys/block")
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| !n.starts_with("loop") && !n.starts_with("ram"))
        .collect();
    names.sort();
    Value::Array(
        names
            .into_iter()
            .map(|name| {
                let sectors = read(&format!("/sys/block/{name}/size"))
                    .parse::<i64>()
                    .unwrap_or(0);
                record([
                    ("name", Value::String(name.clone())),
                    ("sizeBytes", int(sectors.saturating_mul(512))),
                    (
                        "model",
                        Value::String(read(&format!("/sys/block/{name}/device/model"))),
                    ),
                    (
                        "rotational",
                        Value::Boolean(read(&format!("/sys/block/{name}/queue/rotational")) == "1"),
                    ),
                ])
            })
            .collect(),
    )
}

fn pci_devices() -> Value {
    let mut slots: Vec<String> = fs::read_dir("/sys/bus/pci/devices")
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .collect();
    slots.sort();
    Value::Array(
        slots
            .into_iter()
            .map(|slot| {
                let attr = |a: &str| Value::String(read(&format!("/sys/bus/pci/devices/{slot}/{a}")));
                record([
                    ("bus", Value::String("pci".into())),
                    ("slot", Value::String(slot.clone())),
                    ("vendor", attr("vendor")),
                    ("device", attr("device")),
                    ("class", attr("class")),
                ])
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_has_the_basic_keys() {
        let Value::Struct(m) = info(true) else {
            panic!("not a struct")
        };
        for key in [
            "cpuModel",
            "numCpus",
            "systemMemory",
            "kernelVersion",
            "os",
            "platform",
            "disks",
            "devices",
        ] {
            assert!(m.contains_key(key), "{key}");
        }
        assert!(matches!(m["numCpus"], Value::Integer(n) if n >= 1));
        let Value::Struct(m) = info(false) else { panic!() };
        assert!(!m.contains_key("devices"));
    }
}
