//! `func`'s command line, parsed once into a [`Plan`]: the root, the
//! resolved targets (for commands that call minions), dispatch settings and
//! the command with its own validated options. Nothing is sent before the
//! plan is complete, and every usage problem is reported with exit status 2.
//!
//! The words are parsed by clap (`cli.rs`): global options (`--root`, `-t`,
//! `-e`, `--json`, `--forks`, `-v`, `-q`) anywhere before `--`; `call`'s own
//! options before or after MODULE METHOD; everything after `--` is a
//! method argument.

use std::io::Read as _;

use common::config::Ini;
use common::paths::Root;
use common::tls::Credentials;

use crate::dispatch::Dispatch;
pub use crate::settings::{credentials, max_response, seconds, store, DEFAULT_TIMEOUT, MAX_SECS, WORKER_CONCURRENCY};
use crate::store::Store;
use crate::targets::{self, Target};

/// A usage problem (exit 2) or a failure before dispatch (exit 1).
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("{0}")]
    Usage(String),
    /// Help or version text asked for (stdout, exit 0).
    #[error("{0}")]
    Help(String),
    #[error("{0}")]
    Targets(#[from] targets::TargetError),
    #[error("{0}")]
    Config(String),
}

impl PlanError {
    pub fn exit_code(&self) -> i32 {
        match self {
            PlanError::Usage(_) => 2,
            PlanError::Help(_) => 0,
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
    /// `--out`: how host results are printed when not for people.
    pub out: crate::output::Format,
    pub forks: Option<usize>,
    /// `-v` (repeatable) and `-q`.
    pub verbose: u8,
    pub quiet: bool,
}

/// Everything `func` will do.
#[derive(Debug)]
pub struct Plan {
    pub root: Root,
    pub spec: String,
    pub exclude: Option<String>,
    pub json: bool,
    /// With `json` set: the format (`--out json|yaml|txt`).
    pub out: crate::output::Format,
    /// `-v` count: say more on stderr.
    pub verbose: u8,
    /// `-q`: no progress or informational lines on stderr.
    pub quiet: bool,
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
        let names = self.target_names()?;
        Ok(names
            .into_iter()
            .map(|name| Target::enrolled(&self.root, &name))
            .collect())
    }

    /// The names the SPEC selects (after `-e`), reporting literal names
    /// that matched no minion; no address is read.
    pub fn target_names(&self) -> Result<Vec<String>, PlanError> {
        let certs = self.root.signed_certs_dir();
        if let Err(e) = std::fs::metadata(&certs) {
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
        let (found, missing) = targets::resolve_names(&self.root, &self.spec, self.exclude.as_deref())?;
        for name in &missing {
            crate::errln!(
                "func: no minion named {name:?}{} (`func '*' list_minions` lists them); the others still run",
                targets::comma_hint(name)
            );
        }
        self.missing.borrow_mut().extend(missing);
        Ok(found)
    }

    /// An informational line on stderr (left out with `-q`).
    pub fn say(&self, line: &str) {
        if !self.quiet {
            crate::errln!("{line}");
        }
    }

    /// A line of detail on stderr (only with `-v`): which hosts, and how.
    pub fn detail(&self, targets: &[Target]) {
        if self.verbose == 0 {
            return;
        }
        let names: Vec<&str> = targets.iter().map(|t| t.name.as_str()).collect();
        crate::errln!(
            "func: calling {} host(s) with {} worker(s), timeout {} s: {}",
            names.len(),
            self.dispatch.forks.min(names.len().max(1)),
            self.dispatch.timeout_secs,
            names.join(" ")
        );
        if self.verbose > 1 {
            for t in targets {
                crate::errln!("func:   {} at {}", t.name, t.addr);
            }
        }
    }

    /// Whether progress lines may be drawn on stderr (a terminal, no `-q`).
    pub fn progress(&self) -> bool {
        !self.quiet && std::io::IsTerminal::is_terminal(&std::io::stderr())
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

/// What clap made of the command line.
enum Parsed {
    Spec(crate::cli::SpecCommand),
    Top(crate::cli::TopCommand),
}

/// A clap error as ours: `--help`/`--version` print on stdout and exit 0,
/// anything else is a usage error (exit 2) with clap's message and hints.
fn clap_error(e: clap::Error) -> PlanError {
    let text = e.render().to_string();
    match e.kind() {
        clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion => PlanError::Help(text),
        _ => PlanError::Usage(text.trim_end().to_string()),
    }
}

/// `func job-status last` and the like: a first word that is not a SPEC
/// command's target but a misspelt command without a SPEC (Salt and shell
/// habits: `-` for `_`, `jobstatus`).
fn misspelt_command(word: &str) -> Option<PlanError> {
    const TOP: &[&str] = &["job_status", "jobs", "batch", "transmit"];
    if TOP.contains(&word) {
        return None;
    }
    let normal = word.replace('-', "_").to_ascii_lowercase();
    let hint = match TOP.iter().find(|c| **c == normal || c.replace('_', "") == normal) {
        Some(c) => format!(" (did you mean {c}?)"),
        None => crate::cli::did_you_mean(&normal, TOP),
    };
    (!hint.is_empty()).then(|| {
        PlanError::Usage(format!(
            "{word:?} is not a command, and as a SPEC it is not followed by one{hint}"
        ))
    })
}

/// Parses `args` (without the program name).
pub fn parse(args: &[String], env_root: Option<String>) -> Result<Plan, PlanError> {
    // `func help COMMAND` for a SPEC command (clap's own `help` knows the others).
    if let [help, name] = args {
        if help == "help" && crate::cli::spec_commands().contains(name) {
            return Err(clap_error(
                <crate::cli::SpecCli as clap::Parser>::try_parse_from(["func SPEC", name.as_str(), "--help"])
                    .expect_err("--help always ends parsing"),
            ));
        }
    }
    let cli = <crate::cli::FuncCli as clap::Parser>::try_parse_from(
        std::iter::once("func".to_string()).chain(args.iter().cloned()),
    )
    .map_err(clap_error)?;
    let mut global = cli.global;
    let (spec, parsed) = match cli.command {
        crate::cli::TopCommand::Spec(words) => {
            let (spec, rest) = words
                .split_first()
                .ok_or_else(|| PlanError::Usage("missing SPEC".into()))?;
            let sub = <crate::cli::SpecCli as clap::Parser>::try_parse_from(
                std::iter::once(format!("func {spec}")).chain(rest.iter().cloned()),
            )
            .map_err(|e| misspelt_command(spec).unwrap_or_else(|| clap_error(e)))?;
            global = global.merge(sub.global);
            (spec.clone(), Parsed::Spec(sub.command))
        }
        crate::cli::TopCommand::Transmit => {
            let mut request = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin().take(16 << 20), &mut request)
                .map_err(|e| PlanError::Usage(format!("func transmit: cannot read the request: {e}")))?;
            let words = crate::commands::transmit::request_words(&request)?;
            let mut all: Vec<String> = Vec::new();
            if let Some(root) = &global.root {
                all.extend(["--root".to_string(), root.to_string_lossy().into_owned()]);
            }
            all.extend(words);
            return parse(&all, env_root);
        }
        top => (String::new(), Parsed::Top(top)),
    };
    let mut globals = Globals {
        root: Root::new(
            global
                .root
                .map(|r| r.to_string_lossy().into_owned())
                .or(env_root)
                .unwrap_or_else(|| "/".into()),
        ),
        timeout: global.timeout,
        exclude: global.exclude,
        json: global.json || global.out.as_deref() == Some("json"),
        out: match global.out.as_deref() {
            Some("yaml") => crate::output::Format::Yaml,
            Some("txt") => crate::output::Format::Txt,
            Some("xmlrpc") => crate::output::Format::Xmlrpc,
            _ => crate::output::Format::Json,
        },
        forks: global.forks.map(usize::from),
        verbose: global.verbose,
        quiet: global.quiet,
    };
    let mut command = match parsed {
        Parsed::Spec(c) => crate::commands::Command::from_spec(c, &mut globals)?,
        Parsed::Top(c) => crate::commands::Command::from_top(c)?,
    };
    command.resolve_last(&store(&globals.root))?;
    let conf = Ini::load(&globals.root.overlord_conf()).map_err(|e| PlanError::Config(e.to_string()))?;
    let conf_timeout = conf
        .f64("main", "socket_timeout")
        .map_err(|e| PlanError::Config(e.to_string()))?
        .filter(|t| *t > 0.0)
        .map(|t| t.min(MAX_SECS));
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
        json: globals.json || globals.out != crate::output::Format::Json,
        out: globals.out,
        verbose: globals.verbose,
        quiet: globals.quiet,
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
    seconds(v, false).map_err(|why| PlanError::Usage(format!("{flag} {why}")))
}


pub fn count(flag: &str, v: &str) -> Result<usize, PlanError> {
    v.parse::<usize>()
        .ok()
        .filter(|n| (1..=1024).contains(n))
        .ok_or_else(|| PlanError::Usage(format!("{flag} takes a whole number from 1 to 1024, not {v:?}")))
}

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
