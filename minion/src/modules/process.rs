//! `process`: process listing (`info` via `ps`, as Func), memory use per
//! process (`mem`, from `/proc/<pid>/smaps_rollup`), signals (`kill`, `pkill`)
//! and `loadavg`. Signals never go to pid ≤ 1 (0 and -1 would reach a whole
//! process group or every process; 1 is init).

use std::process::Command as Cmd;

use common::xmlrpc::args::Args;
use common::Value;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use super::module::{Context, Module};
use crate::method::unreachable_method;
use crate::method::{strings, ArgInfo, MethodError, MethodInfo, MethodResult};

pub struct Process;

const WORD: ArgInfo = ArgInfo {
    name: "word",
    kind: "string",
    optional: false,
    description: "text to look for",
};

const METHODS: &[MethodInfo] = &[
    MethodInfo {
        name: "info",
        description: "`ps` output split into fields per process.",
        args: &[ArgInfo {
            name: "flags",
            kind: "string",
            optional: true,
            description: "ps flags (default -auxh)",
        }],
    },
    MethodInfo {
        name: "mem",
        description: "Func's per-program memory (ps_mem): [private, shared, RAM used, program] as \"39.4 MiB\", smallest first, then the total.",
        args: &[],
    },
    MethodInfo {
        name: "mem_kib",
        description: "[private KiB, shared KiB, total KiB, command] per process as numbers, largest first.",
        args: &[],
    },
    MethodInfo {
        name: "kill",
        description: "Sends a signal to a pid; returns 0.",
        args: &[
            ArgInfo {
                name: "pid",
                kind: "int",
                optional: false,
                description: "process id (> 1)",
            },
            ArgInfo {
                name: "signal",
                kind: "string",
                optional: true,
                description: "TERM, KILL, HUP, 9, ... (default TERM)",
            },
        ],
    },
    MethodInfo {
        name: "pkill",
        description: "Signals every process whose name is exactly `name`; 0 if any, 1 if none.",
        args: &[
            ArgInfo {
                name: "name",
                kind: "string",
                optional: false,
                description: "process name",
            },
            ArgInfo {
                name: "level",
                kind: "string",
                optional: true,
                description: "signal, e.g. -9 (default TERM)",
            },
        ],
    },
    MethodInfo {
        name: "loadavg",
        description: "The fields of /proc/loadavg.",
        args: &[],
    },
    MethodInfo {
        name: "grep",
        description: "Processes whose ps line contains a word.",
        args: &[WORD],
    },
];

impl Module for Process {
    fn name(&self) -> &'static str {
        "process"
    }
    fn description(&self) -> &'static str {
        "Process related reporting and control."
    }
    fn methods(&self) -> &'static [MethodInfo] {
        METHODS
    }
    fn call(&self, _ctx: &Context<'_>, method: &str, args: Args<'_>) -> MethodResult {
        match method {
            "info" => {
                args.arity(0, 1)?;
                let flags = args.opt_string(0, "flags")?.unwrap_or_else(|| "-auxh".into());
                Ok(Value::Array(ps(&flags)?.into_iter().map(strings).collect()))
            }
            "mem" => args.arity(0, 0).map(|_| func_mem()).map_err(Into::into),
            "mem_kib" => args.arity(0, 0).map(|_| mem()).map_err(Into::into),
            "kill" => {
                args.arity(1, 2)?;
                let pid = args.i64(0, "pid")?;
                let signal = parse_signal(&args.opt_string(1, "signal")?.unwrap_or_else(|| "TERM".into()))?;
                send(pid, signal)?;
                Ok(Value::Integer(0))
            }
            "pkill" => {
                args.arity(1, 2)?;
                let name = args.string(0, "name")?;
                let level = args
                    .opt_string(1, "level")?
                    .filter(|l| !l.is_empty())
                    .unwrap_or_else(|| "TERM".into());
                let signal = parse_signal(&level)?;
                let mut hit = false;
                for pid in pids_named(&name) {
                    hit |= send(pid, signal).is_ok();
                }
                Ok(Value::Integer(if hit { 0 } else { 1 }))
            }
            "loadavg" => {
                args.arity(0, 0)?;
                let text = std::fs::read_to_string("/proc/loadavg")
                    .map_err(|e| MethodError::os(format!("/proc/loadavg: {e}")))?;
                Ok(strings(text.split_whitespace()))
            }
            "grep" => {
                args.arity(1, 1)?;
                let word = args.string(0, "word")?.trim().to_lowercase();
                let lines: Vec<String> = ps("-auxh")?
                    .into_iter()
                    .map(|f| f.join(" "))
                    .filter(|l| l.to_lowercase().contains(&word))
                    .collect();
                Ok(crate::method::record([("process.info", strings(lines))]))
            }
            _ => unreachable_method(method),
        }
    }
}

/// Runs `ps FLAGS`; each line split on white space into at most 11 fields,
/// so the command (the last column of `ps aux`) keeps its spaces.
fn ps(flags: &str) -> Result<Vec<Vec<String>>, MethodError> {
    let valid = !flags.is_empty()
        && flags.len() <= 32
        && flags
            .trim_start_matches('-')
            .bytes()
            .all(|b| b.is_ascii_alphabetic());
    if !valid {
        return Err(MethodError::value(format!(
            "ps flags must be letters, optionally after '-': {:?}",
            common::paths::shorten(flags)
        )));
    }
    let out = Cmd::new("ps")
        .arg(flags)
        .output()
        .map_err(|e| MethodError::os(format!("cannot run ps: {e}")))?;
    if !out.status.success() {
        return Err(MethodError::os(format!(
            "ps {flags} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| split_fields(l, 11))
        .collect())
}

fn split_fields(line: &str, max: usize) -> Vec<String> {
    let mut fields = Vec::new();
    let mut rest = line.trim_start();
    while !rest.is_empty() {
        if fields.len() + 1 == max {
            fields.push(rest.trim_end().to_string());
            break;
        }
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        fields.push(rest[..end].to_string());
        rest = rest[end..].trim_start();
    }
    fields
}

/// `TERM`, `SIGTERM`, `-15`, `15` → the signal.
fn parse_signal(text: &str) -> Result<Signal, MethodError> {
    let t = text.trim().trim_start_matches('-').to_ascii_uppercase();
    let parsed = match t.parse::<i32>() {
        Ok(n) => Signal::try_from(n).ok(),
        Err(_) => {
            let name = if t.starts_with("SIG") {
                t.clone()
            } else {
                format!("SIG{t}")
            };
            name.parse::<Signal>().ok()
        }
    };
    parsed.ok_or_else(|| MethodError::value(format!("unknown signal {:?}", common::paths::shorten(text))))
}

fn send(pid: i64, signal: Signal) -> Result<(), MethodError> {
    let pid = i32::try_from(pid).ok().filter(|p| *p > 1).ok_or_else(|| {
        MethodError::value(format!(
            "refusing to signal pid {pid}: only single processes above 1"
        ))
    })?;
    kill(Pid::from_raw(pid), signal).map_err(|e| MethodError::os(format!("kill {pid}: {e}")))
}

fn proc_pids() -> impl Iterator<Item = i32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
}

fn pids_named(name: &str) -> Vec<i64> {
    let me = std::process::id() as i32;
    proc_pids()
        .filter(|pid| *pid != me)
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim_end() == name)
        })
        .map(i64::from)
        .collect()
}

/// Memory per process from `smaps_rollup` (readable for our own processes,
/// or all of them as root); unreadable processes are skipped.
/// Memory as `du -h` and Func's ps_mem print it: KiB → "%.1f KiB/MiB/GiB".
fn human(kib: f64) -> String {
    let mut num = kib;
    let mut powers = ["Ki", "Mi", "Gi", "Ti"].into_iter();
    let mut power = powers.next().unwrap_or("Ki");
    while num >= 1000.0 {
        match powers.next() {
            Some(next) => {
                num /= 1024.0;
                power = next;
            }
            None => break,
        }
    }
    format!("{num:.1} {power}B")
}

/// Func's `process.mem` (ps_mem): per program (the executable's name when
/// the command name is its prefix), private plus its share of shared
/// memory from PSS, `name (N)` for N processes, smallest first, then a
/// last row `["", "", "", total]`. funcd itself is left out, as Func did.
fn func_mem() -> Value {
    use std::collections::BTreeMap;
    let me = std::process::id();
    let mut programs: BTreeMap<String, (i64, i64, u32)> = BTreeMap::new();
    for pid in proc_pids().filter(|p| *p as u32 != me) {
        let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")) else {
            continue;
        };
        let field = |key: &str| -> i64 {
            text.lines()
                .filter(|l| l.starts_with(key))
                .filter_map(|l| l.split_whitespace().nth(1)?.parse::<i64>().ok())
                .sum()
        };
        let Ok(comm) = std::fs::read_to_string(format!("/proc/{pid}/comm")) else {
            continue;
        };
        let comm = comm.trim_end().to_string();
        // Kernel threads have no executable: left out, as ps_mem does.
        let Ok(exe) = std::fs::read_link(format!("/proc/{pid}/exe")) else {
            continue;
        };
        let exe = exe
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let name = if exe.starts_with(&comm) { exe } else { comm };
        let private = field("Private_Clean:") + field("Private_Dirty:");
        let shared = (field("Pss:") - private).max(0);
        let entry = programs.entry(name).or_default();
        entry.0 += private;
        entry.1 += shared;
        entry.2 += 1;
    }
    let mut rows: Vec<(String, i64, i64, u32)> = programs
        .into_iter()
        .map(|(name, (private, shared, n))| (name, private, shared, n))
        .filter(|(_, p, s, _)| p + s > 0)
        .collect();
    rows.sort_by_key(|(_, p, s, _)| p + s);
    let total: i64 = rows.iter().map(|(_, p, s, _)| p + s).sum();
    let mut out: Vec<Value> = rows
        .into_iter()
        .map(|(name, private, shared, n)| {
            let program = if n > 1 { format!("{name} ({n})") } else { name };
            strings([
                human(private as f64),
                human(shared as f64),
                human((private + shared) as f64),
                program,
            ])
        })
        .collect();
    out.push(strings([
        String::new(),
        String::new(),
        String::new(),
        human(total as f64),
    ]));
    Value::Array(out)
}

fn mem() -> Value {
    let mut rows: Vec<(i64, i64, String)> = proc_pids()
        .filter_map(|pid| {
            let text = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).ok()?;
            let field = |key: &str| -> i64 {
                text.lines()
                    .filter(|l| l.starts_with(key))
                    .filter_map(|l| l.split_whitespace().nth(1)?.parse::<i64>().ok())
                    .sum()
            };
            let private = field("Private_Clean:") + field("Private_Dirty:");
            let shared = field("Shared_Clean:") + field("Shared_Dirty:");
            let cmd = std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .ok()?
                .trim_end()
                .to_string();
            Some((private, shared, cmd))
        })
        .collect();
    rows.sort_by_key(|(p, s, _)| -(p + s));
    Value::Array(
        rows.into_iter()
            .map(|(p, s, cmd)| {
                Value::Array(vec![
                    common::xmlrpc::int(p),
                    common::xmlrpc::int(s),
                    common::xmlrpc::int(p + s),
                    Value::String(cmd),
                ])
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signals_and_fields() {
        assert_eq!(parse_signal("TERM").unwrap(), Signal::SIGTERM);
        assert_eq!(parse_signal("-9").unwrap(), Signal::SIGKILL);
        assert_eq!(parse_signal("sighup").unwrap(), Signal::SIGHUP);
        assert!(parse_signal("NOPE").is_err());
        for bad in [0, -1, 1, i64::MAX] {
            assert!(send(bad, Signal::SIGTERM).is_err(), "{bad}");
        }
        assert_eq!(
            split_fields("root  1  0.0 /sbin/init  splash", 4),
            vec!["root", "1", "0.0", "/sbin/init  splash"]
        );
        assert!(ps("-aux; rm -rf /").is_err());
    }

    #[test]
    fn mem_has_funcs_shape() {
        assert_eq!(human(40345.6), "39.4 MiB");
        assert_eq!(human(999.0), "999.0 KiB");
        assert_eq!(human(2.0 * 1024.0 * 1024.0), "2.0 GiB");
        let Value::Array(rows) = func_mem() else {
            panic!("list")
        };
        assert!(rows.len() >= 2, "at least one program and the total");
        for row in &rows {
            let Value::Array(cells) = row else { panic!("row") };
            assert_eq!(cells.len(), 4);
            assert!(cells.iter().all(|c| matches!(c, Value::String(_))));
        }
        let Value::Array(first) = &rows[0] else { panic!() };
        assert!(
            matches!(&first[2], Value::String(s) if s.ends_with("iB")),
            "{first:?}"
        );
        let Value::Array(last) = rows.last().unwrap() else {
            panic!()
        };
        assert_eq!(last[0], Value::String(String::new()));
    }

    #[test]
    fn kill_and_pkill_reach_a_real_child() {
        let mut child = std::process::Command::new("sleep").arg("30").spawn().unwrap();
        send(i64::from(child.id()), Signal::SIGKILL).unwrap();
        assert!(child.wait().unwrap().code().is_none());
        assert!(pids_named("no-such-process-name-xyz").is_empty());
    }
}
