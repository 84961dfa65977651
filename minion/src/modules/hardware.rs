//! `hardware`: a hardware profile read straight from `/proc` and `/sys` (Func
//! used smolt; no external tool is needed here).
//!
//! `info` and `inventory` answer in Func's shape, which scripts written for
//! Func parse: smolt's keys, every value a string (`numCpus` "2",
//! `systemMemory` in MB as "1985"), what cannot be known "Unknown", devices
//! as `VendorID`, `DeviceID`, `SubsysVendorID`, `Bus`, `Driver`, `Type`,
//! `Description`. The typed profile (numbers, disks, PCI slots and classes)
//! is `details`.

use std::fs;

use common::xmlrpc::{args::Args, int};
use common::Value;

use super::module::{Context, Module};
use crate::method::unreachable_method;
use crate::method::{record, strings, ArgInfo, MethodInfo, MethodResult};

pub struct Hardware;

const WITH_DEVICES: ArgInfo = ArgInfo {
    name: "with_devices",
    kind: "boolean",
    optional: true,
    description: "include PCI devices (default true)",
};

const METHODS: &[MethodInfo] = &[
    MethodInfo {
        name: "info",
        description:
            "Func's hardware profile: smolt's keys, string values (and devices unless with_devices is false).",
        args: &[WITH_DEVICES],
    },
    MethodInfo {
        name: "inventory",
        description: "info() with devices, without bogomips (it changes on laptops).",
        args: &[],
    },
    MethodInfo {
        name: "details",
        description:
            "The typed profile: CPU, memory in MiB, disks, OS (and PCI devices unless with_devices is false).",
        args: &[WITH_DEVICES],
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
                Ok(func_info(args.opt_bool(0, "with_devices")?.unwrap_or(true)))
            }
            "inventory" => args
                .arity(0, 0)
                .map(|_| match func_info(true) {
                    Value::Struct(mut m) => {
                        m.remove("bogomips");
                        Value::Struct(m)
                    }
                    other => other,
                })
                .map_err(Into::into),
            "details" => {
                args.arity(0, 1)?;
                Ok(info(args.opt_bool(0, "with_devices")?.unwrap_or(true)))
            }
            "grep" => {
                args.arity(1, 1)?;
                let word = args.string(0, "word")?.trim().to_lowercase();
                let Value::Struct(all) = func_info(false) else {
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

use crate::facts::builtin::{kv, read};

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

/// A value or Func's "Unknown".
fn known(text: String) -> Value {
    Value::String(if text.trim().is_empty() {
        "Unknown".into()
    } else {
        text
    })
}

/// The default runlevel as smolt gave it: "5" graphical, "3" multi-user.
fn default_runlevel() -> String {
    let target = fs::read_link("/etc/systemd/system/default.target")
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default();
    match () {
        _ if target.contains("graphical") => "5".into(),
        _ if target.contains("multi-user") => "3".into(),
        _ if target.contains("rescue") => "1".into(),
        _ => fs::read_to_string("/etc/inittab")
            .ok()
            .and_then(|t| {
                t.lines()
                    .find(|l| l.contains(":initdefault:"))
                    .and_then(|l| l.split(':').nth(1))
                    .map(str::to_string)
            })
            .unwrap_or_default(),
    }
}

/// smolt's form factor from the DMI chassis type.
fn formfactor() -> String {
    match read("/sys/class/dmi/id/chassis_type").parse::<u32>().unwrap_or(0) {
        3 | 4 | 5 | 6 | 7 | 15 | 16 => "Desktop",
        8..=10 | 14 => "Laptop",
        11 => "Handheld",
        17 | 23 | 28 => "Server",
        _ => "Unknown",
    }
    .into()
}

/// Func's `hardware.info`: smolt's keys, every value a string.
fn func_info(with_devices: bool) -> Value {
    let Value::Struct(typed) = info(false) else {
        return record::<&str>([]);
    };
    let text = |k: &str| match typed.get(k) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Integer(i)) => i.to_string(),
        Some(Value::Long(l)) => l.to_string(),
        _ => String::new(),
    };
    let enforce = read("/sys/fs/selinux/enforce");
    let mut fields = vec![
        ("os", known(text("os"))),
        ("defaultRunlevel", known(default_runlevel())),
        ("bogomips", known(text("bogomips"))),
        ("cpuVendor", known(text("cpuVendor"))),
        ("cpuModel", known(text("cpuModel"))),
        ("numCpus", known(text("numCpus"))),
        ("cpuSpeed", known(text("cpuSpeed"))),
        ("systemMemory", known(text("systemMemory"))),
        ("systemSwap", known(text("systemSwap"))),
        ("kernelVersion", known(text("kernelVersion"))),
        ("language", known(std::env::var("LANG").unwrap_or_default())),
        ("platform", known(text("platform"))),
        ("systemVendor", known(read("/sys/class/dmi/id/sys_vendor"))),
        ("systemModel", known(read("/sys/class/dmi/id/product_name"))),
        ("formfactor", Value::String(formfactor())),
        (
            "selinux_enabled",
            Value::String(if enforce.is_empty() { "False" } else { "True" }.into()),
        ),
        (
            "selinux_enforce",
            Value::String(
                match enforce.as_str() {
                    "1" => "Enforcing",
                    "0" => "Permissive",
                    _ => "Not enforcing",
                }
                .into(),
            ),
        ),
    ];
    if with_devices {
        fields.push(("devices", func_devices()));
    }
    record(fields)
}

/// The PCI slots in /sys, sorted (`0000:00:1f.2`, ...).
fn pci_slots() -> Vec<String> {
    let mut slots: Vec<String> = fs::read_dir("/sys/bus/pci/devices")
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .collect();
    slots.sort();
    slots
}

/// Devices as smolt described them to Func.
fn func_devices() -> Value {
    Value::Array(
        pci_slots()
            .into_iter()
            .map(|slot| {
                let dir = format!("/sys/bus/pci/devices/{slot}");
                let hex = |a: &str| read(&format!("{dir}/{a}")).trim_start_matches("0x").to_string();
                let driver = fs::read_link(format!("{dir}/driver"))
                    .ok()
                    .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
                    .unwrap_or_else(|| "Unknown".into());
                record([
                    ("VendorID", known(hex("vendor"))),
                    ("DeviceID", known(hex("device"))),
                    ("SubsysVendorID", known(hex("subsystem_vendor"))),
                    ("Bus", Value::String("pci".into())),
                    ("Driver", Value::String(driver)),
                    ("Type", Value::String(pci_type(&hex("class")).into())),
                    ("Description", known(String::new())),
                ])
            })
            .collect(),
    )
}

/// smolt's device type from the PCI class code.
fn pci_type(class: &str) -> &'static str {
    match class.get(..2).unwrap_or("") {
        "01" => "STORAGE",
        "02" => "NETWORK",
        "03" => "VIDEO",
        "04" => "AUDIO",
        "06" => "BRIDGE",
        "0c" => "SERIAL",
        _ => "OTHER",
    }
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
    Value::Array(
        pci_slots()
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
    fn info_has_funcs_keys_all_strings() {
        let Value::Struct(m) = func_info(true) else {
            panic!("not a struct")
        };
        for key in [
            "os",
            "defaultRunlevel",
            "bogomips",
            "cpuVendor",
            "cpuModel",
            "numCpus",
            "cpuSpeed",
            "systemMemory",
            "systemSwap",
            "kernelVersion",
            "language",
            "platform",
            "systemVendor",
            "systemModel",
            "formfactor",
            "selinux_enabled",
            "selinux_enforce",
        ] {
            assert!(
                matches!(m.get(key), Some(Value::String(s)) if !s.is_empty()),
                "{key}: {:?}",
                m.get(key)
            );
        }
        let Value::Array(devices) = &m["devices"] else {
            panic!("devices")
        };
        for d in devices {
            let Value::Struct(d) = d else { panic!("device") };
            for key in [
                "VendorID",
                "DeviceID",
                "SubsysVendorID",
                "Bus",
                "Driver",
                "Type",
                "Description",
            ] {
                assert!(matches!(d.get(key), Some(Value::String(_))), "{key}");
            }
        }
    }

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
