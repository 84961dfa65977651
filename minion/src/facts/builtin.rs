//! The facts funcd knows of itself, read from the system (os-release,
//! uname, `/proc`, `/sys`, systemd's files, the network interfaces) and
//! never by running a program. Each has Func's `module.method` name and,
//! where Func had one, its tag (`os`, `runlevel`, `cpuvendor`, `cpumodel`,
//! `kernel`); the others are named as Salt's grains that mean the same
//! (`os_family`, `osrelease`, `fqdn`, `num_cpus`, `mem_total`, `ipv4`,
//! `virtual`, `arch`), so a Salt user's `-G 'os_family:Debian'` works.

use std::fs;

use common::xmlrpc::int;
use common::Value;

/// A built-in fact: Func's module and method, its tag, what it is, and how
/// it is read.
pub struct Builtin {
    pub module: &'static str,
    pub method: &'static str,
    pub tag: &'static str,
    pub description: &'static str,
    pub read: fn() -> Value,
}

/// Func's fact modules and what they describe.
pub const MODULES: &[(&str, &str)] = &[
    (
        "hardware",
        "CPU, memory, run level, architecture and virtualization",
    ),
    ("os", "The operating system: name, family, release, kernel"),
    ("network", "The host's names and addresses"),
];

pub const FACTS: &[Builtin] = &[
    Builtin {
        module: "hardware",
        method: "run_level",
        tag: "runlevel",
        description: "The default run level (5 graphical, 3 multi-user, 1 rescue)",
        read: run_level,
    },
    Builtin {
        module: "hardware",
        method: "cpu_vendor",
        tag: "cpuvendor",
        description: "The CPU's vendor (/proc/cpuinfo vendor_id)",
        read: cpu_vendor,
    },
    Builtin {
        module: "hardware",
        method: "cpu_model",
        tag: "cpumodel",
        description: "The CPU's model name",
        read: cpu_model,
    },
    Builtin {
        module: "hardware",
        method: "num_cpus",
        tag: "num_cpus",
        description: "Logical CPUs",
        read: num_cpus,
    },
    Builtin {
        module: "hardware",
        method: "mem_total",
        tag: "mem_total",
        description: "Memory in MiB",
        read: mem_total,
    },
    Builtin {
        module: "hardware",
        method: "arch",
        tag: "arch",
        description: "The machine's architecture (uname -m)",
        read: arch,
    },
    Builtin {
        module: "hardware",
        method: "virtual",
        tag: "virtual",
        description: "physical, or the hypervisor or container it runs in (kvm, VMware, VirtualBox, xen, HyperV, docker, lxc, podman, container)",
        read: virtual_kind,
    },
    Builtin {
        module: "os",
        method: "os_name",
        tag: "os",
        description: "The distribution's name (Debian, Ubuntu, Fedora, CentOS, RedHat, ...)",
        read: os_name,
    },
    Builtin {
        module: "os",
        method: "os_family",
        tag: "os_family",
        description: "The distribution's family (Debian, RedHat, Suse, Arch, ...)",
        read: os_family,
    },
    Builtin {
        module: "os",
        method: "os_release",
        tag: "osrelease",
        description: "The distribution's release (os-release VERSION_ID)",
        read: os_release,
    },
    Builtin {
        module: "os",
        method: "kernel",
        tag: "kernel",
        description: "The running kernel's release (uname -r)",
        read: kernel,
    },
    Builtin {
        module: "network",
        method: "fqdn",
        tag: "fqdn",
        description: "The host's fully qualified name",
        read: fqdn,
    },
    Builtin {
        module: "network",
        method: "ipv4",
        tag: "ipv4",
        description: "Every IPv4 address of the host's interfaces",
        read: ipv4,
    },
];

/// A small file's text, trimmed ("" when it cannot be read).
pub fn read(path: &str) -> String {
    fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// `KEY: value` of a /proc file.
pub fn kv(text: &str, key: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == key).then(|| v.trim().to_string())
    })
}

fn text_or_unknown(text: Option<String>) -> Value {
    Value::String(text.filter(|t| !t.is_empty()).unwrap_or_else(|| "unknown".into()))
}

fn run_level() -> Value {
    let target = fs::read_link("/etc/systemd/system/default.target")
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default();
    let level = if target.contains("graphical") {
        Some(5)
    } else if target.contains("multi-user") {
        Some(3)
    } else if target.contains("rescue") {
        Some(1)
    } else {
        fs::read_to_string("/etc/inittab").ok().and_then(|t| {
            t.lines()
                .find(|l| l.contains(":initdefault:"))
                .and_then(|l| l.split(':').nth(1)?.trim().parse().ok())
        })
    };
    // systemd without a default.target link boots multi-user.
    let level = level.or_else(|| std::path::Path::new("/run/systemd/system").exists().then_some(3));
    level.map_or_else(|| Value::String("unknown".into()), |l: i64| int(l))
}

fn cpu_vendor() -> Value {
    text_or_unknown(kv(&read("/proc/cpuinfo"), "vendor_id"))
}

fn cpu_model() -> Value {
    let info = read("/proc/cpuinfo");
    // ARM names its model elsewhere.
    text_or_unknown(kv(&info, "model name").or_else(|| kv(&info, "Model")))
}

fn num_cpus() -> Value {
    let n = std::thread::available_parallelism().map_or(1, |n| n.get());
    let listed = read("/proc/cpuinfo")
        .lines()
        .filter(|l| l.starts_with("processor"))
        .count();
    int(listed.max(n) as i64)
}

fn mem_total() -> Value {
    let kib = kv(&read("/proc/meminfo"), "MemTotal")
        .and_then(|v| v.split_whitespace().next()?.parse::<i64>().ok())
        .unwrap_or(0);
    int(kib / 1024)
}

fn uname_field(f: impl Fn(&nix::sys::utsname::UtsName) -> String) -> Value {
    text_or_unknown(nix::sys::utsname::uname().ok().map(|u| f(&u)))
}

fn arch() -> Value {
    uname_field(|u| u.machine().to_string_lossy().into_owned())
}

fn kernel() -> Value {
    uname_field(|u| u.release().to_string_lossy().into_owned())
}

/// What the host runs in, from the files that say it.
fn virtual_kind() -> Value {
    let container = read("/run/systemd/container");
    if !container.is_empty() {
        return Value::String(container);
    }
    if std::path::Path::new("/.dockerenv").exists() {
        return Value::String("docker".into());
    }
    if std::path::Path::new("/run/.containerenv").exists() {
        return Value::String("podman".into());
    }
    let environ = fs::read("/proc/1/environ").unwrap_or_default();
    if environ.split(|b| *b == 0).any(|v| v.starts_with(b"container=")) {
        return Value::String("container".into());
    }
    let dmi = format!(
        "{} {} {}",
        read("/sys/class/dmi/id/sys_vendor"),
        read("/sys/class/dmi/id/product_name"),
        read("/sys/class/dmi/id/bios_vendor")
    );
    let hypervisor = read("/sys/hypervisor/type");
    let kind = match () {
        _ if dmi.contains("VMware") => "VMware",
        _ if dmi.contains("VirtualBox") || dmi.contains("innotek") => "VirtualBox",
        _ if dmi.contains("Microsoft Corporation") && dmi.contains("Virtual") => "HyperV",
        _ if dmi.contains("QEMU") || dmi.contains("KVM") || dmi.contains("Amazon EC2") => "kvm",
        _ if dmi.contains("Google") => "kvm",
        _ if hypervisor == "xen" || dmi.contains("Xen") => "xen",
        _ if read("/proc/cpuinfo")
            .lines()
            .any(|l| l.starts_with("flags") && l.contains(" hypervisor")) =>
        {
            "kvm"
        }
        _ => "physical",
    };
    Value::String(kind.into())
}

/// os-release's `KEY=value` (quotes removed).
fn os_field(key: &str) -> Option<String> {
    let text = fs::read_to_string("/etc/os-release")
        .or_else(|_| fs::read_to_string("/usr/lib/os-release"))
        .ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix('='))
        .map(|v| v.trim().trim_matches('"').trim_matches('\'').to_string())
}

/// Salt's name of a distribution's os-release ID.
fn distro_name(id: &str) -> Option<&'static str> {
    Some(match id {
        "debian" => "Debian",
        "ubuntu" => "Ubuntu",
        "raspbian" => "Raspbian",
        "linuxmint" => "Mint",
        "fedora" => "Fedora",
        "centos" => "CentOS",
        "rhel" => "RedHat",
        "rocky" => "Rocky",
        "almalinux" => "AlmaLinux",
        "ol" => "OEL",
        "amzn" => "Amazon",
        "opensuse" | "opensuse-leap" | "opensuse-tumbleweed" => "SUSE",
        "sles" => "SUSE",
        "arch" => "Arch",
        "alpine" => "Alpine",
        "gentoo" => "Gentoo",
        _ => return None,
    })
}

fn os_name() -> Value {
    let id = os_field("ID").unwrap_or_default();
    let name = distro_name(&id)
        .map(str::to_string)
        .or_else(|| os_field("NAME").and_then(|n| n.split_whitespace().next().map(str::to_string)));
    text_or_unknown(name)
}

fn os_family() -> Value {
    let id = os_field("ID").unwrap_or_default();
    let like = os_field("ID_LIKE").unwrap_or_default();
    let family = std::iter::once(id.as_str())
        .chain(like.split_whitespace())
        .find_map(|d| match d {
            "debian" | "ubuntu" => Some("Debian"),
            "rhel" | "fedora" | "centos" => Some("RedHat"),
            "suse" | "opensuse" | "sles" => Some("Suse"),
            "arch" => Some("Arch"),
            "alpine" => Some("Alpine"),
            "gentoo" => Some("Gentoo"),
            _ => None,
        });
    text_or_unknown(family.map(str::to_string))
}

fn os_release() -> Value {
    text_or_unknown(os_field("VERSION_ID"))
}

fn fqdn() -> Value {
    let host = nix::unistd::gethostname()
        .map(|h| h.to_string_lossy().into_owned())
        .unwrap_or_default();
    if host.contains('.') {
        return Value::String(host);
    }
    // /etc/hosts names the host's full name beside its short one.
    let hosts = fs::read_to_string("/etc/hosts").unwrap_or_default();
    let full = hosts.lines().find_map(|l| {
        let names: Vec<&str> = l.split('#').next()?.split_whitespace().skip(1).collect();
        if !names.contains(&host.as_str()) {
            return None;
        }
        names
            .iter()
            .find(|n| n.starts_with(&format!("{host}.")))
            .map(|n| n.to_string())
    });
    text_or_unknown(full.or(Some(host)))
}

fn ipv4() -> Value {
    let mut addrs: Vec<String> = nix::ifaddrs::getifaddrs()
        .map(|all| {
            all.filter_map(|i| i.address?.as_sockaddr_in().map(|a| a.ip().to_string()))
                .collect()
        })
        .unwrap_or_default();
    addrs.sort();
    addrs.dedup();
    Value::Array(addrs.into_iter().map(Value::String).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_fact_reads_without_a_shell_and_has_a_unique_name() {
        let mut names = std::collections::BTreeSet::new();
        for f in FACTS {
            let v = (f.read)();
            assert!(!matches!(v, Value::Nil), "{}", f.tag);
            assert!(names.insert(f.tag), "{} twice", f.tag);
            assert!(names.insert(Box::leak(format!("{}.{}", f.module, f.method).into_boxed_str())));
            assert!(MODULES.iter().any(|(m, _)| *m == f.module), "{}", f.module);
        }
        assert!(matches!(num_cpus(), Value::Integer(n) if n >= 1));
        assert!(matches!(mem_total(), Value::Integer(n) if n > 0));
        let Value::Array(ips) = ipv4() else { panic!() };
        assert!(ips.contains(&Value::String("127.0.0.1".into())), "{ips:?}");
    }
}
