//! `command`: run a shell command (`run` → `[rc, stdout, stderr]`) or check
//! that an executable exists. Output is captured up to a cap per stream so a
//! chatty command cannot exhaust memory; control characters are made safe for
//! XML by the codec.

use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::process::{Command as Process, Stdio};

use common::xmlrpc::args::Args;
use common::Value;

use super::module::{Context, Module};
use crate::method::unreachable_method;
use crate::method::{ArgInfo, MethodError, MethodInfo, MethodResult};

/// Most bytes kept of each of stdout and stderr.
pub const OUTPUT_CAP: usize = 8 << 20;

pub struct Command;

const METHODS: &[MethodInfo] = &[
    MethodInfo {
        name: "run",
        description:
            "Runs a command with /bin/sh; returns [rc, stdout, stderr] (rc is -N when killed by signal N).",
        args: &[
            ArgInfo {
                name: "command",
                kind: "string",
                optional: false,
                description: "shell command line",
            },
            ArgInfo {
                name: "env",
                kind: "hash",
                optional: true,
                description: "extra environment variables",
            },
        ],
    },
    MethodInfo {
        name: "exists",
        description: "Whether the path is an executable file.",
        args: &[ArgInfo {
            name: "command",
            kind: "string",
            optional: false,
            description: "absolute path",
        }],
    },
];

impl Module for Command {
    fn name(&self) -> &'static str {
        "command"
    }
    fn description(&self) -> &'static str {
        "Works with shell commands."
    }
    fn methods(&self) -> &'static [MethodInfo] {
        METHODS
    }
    /// `run` answers `[rc, stdout, stderr]`: a non-zero rc is a failed host.
    fn result_rule(&self, method: &str) -> common::outcome::ResultRule {
        match method {
            "run" => common::outcome::ResultRule::ExitStatus,
            _ => common::outcome::ResultRule::Value,
        }
    }
    fn call(&self, _ctx: &Context<'_>, method: &str, args: Args<'_>) -> MethodResult {
        match method {
            "run" => {
                args.arity(1, 2)?;
                let command = args.string(0, "command")?;
                let env = match args.opt(1) {
                    None => Vec::new(),
                    Some(Value::Struct(m)) => m
                        .iter()
                        .map(|(k, v)| {
                            Args::new("run", std::slice::from_ref(v))
                                .string(0, k)
                                .map(|v| (k.clone(), v))
                        })
                        .collect::<Result<Vec<_>, _>>()?,
                    Some(_) => {
                        return Err(MethodError::new(
                            "TypeError",
                            "run(): argument 'env' must be a struct",
                        ))
                    }
                };
                run(&command, &env)
            }
            "exists" => {
                args.arity(1, 1)?;
                let path = args.string(0, "command")?;
                let executable = std::fs::metadata(&path)
                    .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
                    .unwrap_or(false);
                Ok(Value::Boolean(executable))
            }
            _ => unreachable_method(method),
        }
    }
}

fn run(command: &str, env: &[(String, String)]) -> MethodResult {
    if command.contains('\0') {
        return Err(MethodError::value("command contains a NUL byte"));
    }
    let mut child = Process::new("/bin/sh")
        .arg("-c")
        .arg(command)
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| MethodError::os(format!("cannot start /bin/sh: {e}")))?;
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let err_reader = std::thread::spawn(move || stderr.map(read_capped).unwrap_or_default());
    let out = stdout.map(read_capped).unwrap_or_default();
    let err = err_reader.join().unwrap_or_default();
    let status = child
        .wait()
        .map_err(|e| MethodError::os(format!("waiting for the command failed: {e}")))?;
    let rc = status.code().unwrap_or_else(|| -status.signal().unwrap_or(0));
    Ok(Value::Array(vec![
        Value::Integer(rc),
        Value::String(out),
        Value::String(err),
    ]))
}

/// Reads a stream to its end, keeping at most [`OUTPUT_CAP`] bytes.
fn read_capped(mut stream: impl Read) -> String {
    let mut kept = Vec::new();
    let mut buf = [0u8; 64 * 1024];
    let mut dropped = 0usize;
    loop {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = OUTPUT_CAP.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
                dropped += n.saturating_sub(room);
            }
        }
    }
    let mut text = String::from_utf8_lossy(&kept).into_owned();
    if dropped > 0 {
        text.push_str(&format!("\n[funcd: {dropped} more bytes of output dropped]"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_returns_rc_stdout_stderr_and_env() {
        let v = run("printf foo; printf bar >&2; exit 3", &[]).unwrap();
        assert_eq!(
            v,
            Value::Array(vec![
                Value::Integer(3),
                Value::String("foo".into()),
                Value::String("bar".into())
            ])
        );
        let v = run("echo $BLIPPYFOO", &[("BLIPPYFOO".into(), "awesome".into())]).unwrap();
        assert!(matches!(&v, Value::Array(a) if a[1] == Value::String("awesome\n".into())));
        let v = run("kill -9 $$", &[]).unwrap();
        assert!(matches!(&v, Value::Array(a) if a[0] == Value::Integer(-9)));
    }

    #[test]
    fn huge_output_is_capped() {
        let v = run("head -c 9000000 /dev/zero", &[]).unwrap();
        let Value::Array(a) = v else { panic!() };
        let Value::String(out) = &a[1] else { panic!() };
        assert!(out.len() < OUTPUT_CAP + 100 && out.contains("more bytes of output dropped"));
    }
}
