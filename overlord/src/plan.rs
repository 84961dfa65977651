//! `func`'s command line, parsed once into a [`Plan`]: the root, the
//! resolved targets (for commands that call minions), dispatch settings and
//! the command with its own validated options. Nothing is sent before the
//! plan is complete, and every usage problem is reported with exit status 2.
//!
//! Global options come before SPEC (`--root`, `-t`, `-e`, `--json`,
//! `--forks`); `call`'s own options may stand before or after MODULE METHOD,
//! and everything after `--` is a method argument.

use common::config::Ini;
use common::paths::Root;
use common::tls::Credentials;

use crate::dispatch::Dispatch;
use crate::store::Store;
use crate::targets::{self, Target};

/// Default per-host timeout when neither `-t` nor `socket_timeout` is set.
pub const DEFAULT_TIMEOUT: f64 = 30.0;
/// Hosts in flight at once inside one worker.
pub const WORKER_CONCURRENCY: usize = 64;

/// A usage problem (exit 2) or a failure before dispatch (exit 1).
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("{0}")]
    Usage(String),
    #[error("{0}")]
    Targets(#[from] targets::TargetError),
    #[error("{0}")]
    Config(String),
}

impl PlanError {
    pub fn exit_code(&self) -> i32 {
        match self {
            PlanError::Usage(_) => 2,
            _ => 1,
        }
    }
}

/// Global options.
#[derive(Debug, Clone)]
pub struct Globals {
    pub root: Root,
    pub timeout: Option<f64>,
    pub exclude: Option<String>,
    pub json: bool,
    pub forks: Option<usize>,
}

/// Everything `func` will do.
#[derive(Debug)]
pub struct Plan {
    pub root: Root,
    pub spec: String,
    pub exclude: Option<String>,
    pub json: bool,
    pub dispatch: Dispatch,
    /// Literal names that matched no minion, noted by [`Plan::targets`].
    pub missing: std::cell::RefCell<Vec<String>>,
    /// `-t` as given (a deadline for `--wait` and async polling).
    pub timeout: Option<f64>,
    pub command: crate::commands::Command,
}

impl Plan {
    /// Resolves the SPEC now (used by the commands that call minions). A
    /// literal name that matches no minion is reported on stderr and
    /// remembered, so the exit status is 1 although the others still run.
    pub fn targets(&self) -> Result<Vec<Target>, PlanError> {
        let certs = self.root.signed_certs_dir();
        if let Err(e) = std::fs::read_dir(&certs) {
            let why = match e.kind() {
                std::io::ErrorKind::NotFound => "does not exist".to_string(),
                _ => e.to_string(),
            };
            return Err(PlanError::Config(format!(
                "no minions found below the root {}: {} {why}. The overlord works below the certmaster's root: pass --root DIR (or set FUNC_ROOT) to it",
                self.root.dir().display(),
                certs.display()
            )));
        }
        let (found, missing) = targets::resolve_reporting(&self.root, &self.spec, self.exclude.as_deref())?;
        for name in &missing {
            eprintln!(
                "func: no minion named {name:?}{} (`func '*' list_minions` lists them); the others still run",
                targets::comma_hint(name)
            );
        }
        self.missing.borrow_mut().extend(missing);
        Ok(found)
    }

    /// Fails once, clearly, when the overlord's key, certificate, CA or CRL
    /// cannot be used (instead of the same error for every host).
    pub fn check_credentials(&self) -> Result<(), PlanError> {
        common::tls::client_config(&self.credentials()).map(|_| ()).map_err(|e| {
            PlanError::Config(format!(
                "{e}. These are the overlord's credentials below the root {}: run func as a user who can read them (usually root), or pass --root DIR (or FUNC_ROOT) for the certmaster's root",
                self.root.dir().display()
            ))
        })
    }

    /// Literal names of the SPEC that matched no minion (after `targets`).
    pub fn missing(&self) -> Vec<String> {
        self.missing.borrow().clone()
    }

    /// The overlord's credentials below the root.
    pub fn credentials(&self) -> Credentials {
        credentials(&self.root)
    }

    /// The overlord's job store below the root.
    pub fn store(&self) -> Store {
        store(&self.root)
    }
}

/// The overlord's credentials below `root`.
pub fn credentials(root: &Root) -> Credentials {
    Credentials {
        key: root.overlord_key(),
        cert: root.overlord_cert(),
        ca: root.ca_cert(),
        crl: Some(root.ca_crl()),
    }
}

/// `max_response_size` of overlord.conf: the largest answer accepted from
/// one minion (default 64 MiB); a larger one fails that host.
pub fn max_response(root: &Root) -> usize {
    Ini::load(&root.overlord_conf())
        .ok()
        .and_then(|ini| ini.u64("main", "max_response_size").ok().flatten())
        .map_or(common::rpc::client::MAX_RESPONSE, |v| v.max(1024) as usize)
}

/// The job store below `root`, with `keep_jobs` from overlord.conf.
pub fn store(root: &Root) -> Store {
    let keep = Ini::load(&root.overlord_conf())
        .ok()
        .and_then(|ini| ini.f64("main", "keep_jobs").ok().flatten())
        .filter(|k| k.is_finite() && *k >= 0.0)
        .unwrap_or(crate::store::DEFAULT_KEEP_JOBS);
    Store::new(root.status_dir().join("overlord.redb"), keep)
}

/// Commands that take no SPEC: `job_status ID`; `jobs` and `batch` when
/// followed by one of their subcommands (otherwise they are minion names).
fn top_level(args: &[String]) -> Option<&'static str> {
    match (args.first()?.as_str(), args.get(1).map(String::as_str)) {
        ("job_status", _) => Some("job_status"),
        ("jobs", Some(sub)) if crate::commands::jobs::SUBCOMMANDS.contains(&sub) => Some("jobs"),
        ("batch", Some(sub)) if crate::commands::batch::SUBCOMMANDS.contains(&sub) => Some("batch"),
        _ => None,
    }
}

/// Parses `args` (without the program name).
pub fn parse(args: &[String], env_root: Option<String>) -> Result<Plan, PlanError> {
    let mut globals = Globals {
        root: Root::new(env_root.unwrap_or_else(|| "/".into())),
        timeout: None,
        exclude: None,
        json: false,
        forks: None,
    };
    let mut i = 0;
    while i < args.len() && args[i].starts_with('-') && args[i] != "-" {
        let (flag, inline) = split_flag(&args[i]);
        let mut value = || -> Result<String, PlanError> {
            if let Some(v) = inline.clone() {
                return Ok(v);
            }
            i += 1;
            args.get(i)
                .cloned()
                .ok_or_else(|| PlanError::Usage(format!("{flag} needs a value")))
        };
        match flag.as_str() {
            "--root" => globals.root = Root::new(value()?),
            "-t" | "--timeout" => globals.timeout = Some(positive(&flag, &value()?)?),
            "-e" | "--exclude" => globals.exclude = Some(value()?),
            "--json" | "-j" => globals.json = true,
            "--forks" => globals.forks = Some(count(&flag, &value()?)?),
            "-h" | "--help" => return Err(PlanError::Usage(USAGE.into())),
            other => return Err(PlanError::Usage(format!("unknown option {other}\n{USAGE}"))),
        }
        i += 1;
    }
    let (spec, command) = match top_level(&args[i..]) {
        Some(name) => (
            String::new(),
            crate::commands::Command::parse(name, &args[i + 1..], &mut globals)?,
        ),
        None => {
            let spec = args
                .get(i)
                .cloned()
                .ok_or_else(|| PlanError::Usage(USAGE.into()))?;
            let name = args
                .get(i + 1)
                .cloned()
                .ok_or_else(|| PlanError::Usage(format!("missing command after {spec:?}\n{USAGE}")))?;
            let command = crate::commands::Command::parse(&name, &args[i + 2..], &mut globals)?;
            (spec, command)
        }
    };
    let conf = Ini::load(&globals.root.overlord_conf()).map_err(|e| PlanError::Config(e.to_string()))?;
    let conf_timeout = conf
        .f64("main", "socket_timeout")
        .map_err(|e| PlanError::Config(e.to_string()))?
        .filter(|t| *t > 0.0);
    let default_forks = std::thread::available_parallelism().map(usize::from).unwrap_or(1);
    Ok(Plan {
        dispatch: Dispatch {
            forks: globals.forks.unwrap_or(default_forks),
            timeout_secs: globals.timeout.or(conf_timeout).unwrap_or(DEFAULT_TIMEOUT),
            concurrency: WORKER_CONCURRENCY,
            max_response: max_response(&globals.root),
        },
        timeout: globals.timeout,
        missing: Default::default(),
        root: globals.root,
        spec,
        exclude: globals.exclude,
        json: globals.json,
        command,
    })
}

/// The value of option `flag`: its inline `=value`, else the next word
/// (advancing `i`).
pub fn option_value(
    args: &[String],
    i: &mut usize,
    flag: &str,
    inline: Option<String>,
) -> Result<String, PlanError> {
    if let Some(v) = inline {
        return Ok(v);
    }
    *i += 1;
    args.get(*i)
        .cloned()
        .ok_or_else(|| PlanError::Usage(format!("{flag} needs a value")))
}

/// `--flag=value` → (`--flag`, Some(value)).
pub fn split_flag(arg: &str) -> (String, Option<String>) {
    match arg.split_once('=') {
        Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
        _ => (arg.to_string(), None),
    }
}

pub fn positive(flag: &str, v: &str) -> Result<f64, PlanError> {
    v.parse::<f64>()
        .ok()
        .filter(|t| t.is_finite() && *t > 0.0)
        .ok_or_else(|| PlanError::Usage(format!("{flag} takes a positive number of seconds, not {v:?}")))
}

pub fn count(flag: &str, v: &str) -> Result<usize, PlanError> {
    v.parse::<usize>()
        .ok()
        .filter(|n| (1..=1024).contains(n))
        .ok_or_else(|| PlanError::Usage(format!("{flag} takes a whole number from 1 to 1024, not {v:?}")))
}

pub const USAGE: &str =
    "usage: func [--root DIR] [-t SECS] [-e EXCLUDE] [--json] [--forks N] SPEC COMMAND [OPTIONS] [ARGS...]
       func [--root DIR] [-t SECS] [--json] job_status JOB_ID [--wait]
       func [--root DIR] [--json] jobs list [FILTERS] | lookup JOB_ID [--missing] | active [SPEC] | kill JOB_ID
       func [--root DIR] [--json] batch list | status JOB_ID [--follow] | stop JOB_ID [--kill] | recover [JOB_ID]
commands: call [--async [--nopoll]] [--batch N|P% [--batch-wait S] [--failhard]] [--jobstatus] MODULE METHOD [ARGS...] | ping | list_minions |
          copyfile -f LOCAL --remotepath PATH | grep WORD | show hardware [KEYS...] | group OPTIONS";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::Command;

    fn p(args: &[&str]) -> Result<Plan, PlanError> {
        parse(
            &args.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
            Some("/nonexistent-root".into()),
        )
    }

    #[test]
    fn call_options_before_and_after_module_method() {
        let plan = p(&[
            "-t", "5", "web*", "call", "test", "add", "1", "2", "--forks", "3", "--json",
        ])
        .unwrap();
        assert_eq!(plan.dispatch.forks, 3);
        assert_eq!(plan.dispatch.timeout_secs, 5.0);
        assert!(plan.json);
        match plan.command {
            Command::Call(c) => assert_eq!(
                (c.method.as_str(), c.args),
                ("test.add", vec!["1".to_string(), "2".to_string()])
            ),
            _ => panic!("not a call"),
        }
        let plan = p(&["*", "call", "--forks=2", "process", "info", "--", "--json"]).unwrap();
        match plan.command {
            Command::Call(c) => assert_eq!(c.args, vec!["--json".to_string()]),
            _ => panic!(),
        }
        assert!(!plan.json, "after -- it is an argument");
    }

    #[test]
    fn usage_errors_exit_2() {
        for bad in [
            &["*"][..],
            &["*", "call", "test"],
            &["*", "frobnicate"],
            &["-t", "x", "*", "ping"],
            &["--forks", "0", "*", "ping"],
            &["--bogus", "*", "ping"],
            &["*", "call", "--bogus", "test", "ping"],
        ] {
            let err = p(bad).unwrap_err();
            assert_eq!(err.exit_code(), 2, "{bad:?}: {err}");
        }
    }
}
