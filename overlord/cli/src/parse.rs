//! `func`'s command line, parsed once into a [`Plan`] and a [`Command`]:
//! the root, the SPEC, dispatch settings and the command with its own
//! validated options. Nothing is sent before parsing is complete, and every
//! usage problem is reported with exit status 2.
//!
//! The words are parsed by clap (`cli.rs`): global options (`--root`, `-t`,
//! `-e`, `--json`, `--forks`, `-v`, `-q`) anywhere before `--`; `call`'s own
//! options before or after MODULE METHOD; everything after `--` is a
//! method argument. `func transmit` reads a JSON request and parses the
//! words it stands for.

use std::io::Read as _;

use common::paths::Root;

use crate::commands::Command;
use crate::globals::Globals;
use overlord::dispatch::Dispatch;
use overlord::plan::{Plan, PlanError};
use overlord::settings::store;

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
        _ => PlanError::usage(text.trim_end().to_string()),
    }
}

/// `func job-status last` and the like: a first word that is not a SPEC
/// command's target but a misspelt command without a SPEC (Salt and shell
/// habits: `-` for `_`, `jobstatus`).
fn misspelt_command(word: &str) -> Option<PlanError> {
    const TOP: &[&str] = &["job_status", "jobs", "batch", "schedule", "store", "transmit"];
    if TOP.contains(&word) {
        return None;
    }
    let normal = word.replace('-', "_").to_ascii_lowercase();
    let hint = match TOP.iter().find(|c| **c == normal || c.replace('_', "") == normal) {
        Some(c) => format!(" (did you mean {c}?)"),
        None => crate::cli::did_you_mean(&normal, TOP),
    };
    (!hint.is_empty()).then(|| {
        PlanError::usage(format!(
            "{word:?} is not a command, and as a SPEC it is not followed by one{hint}"
        ))
    })
}

/// `func '*' test.ping`, `func '*' cmd.run uptime`: Salt's habit of naming
/// the function after the target. The equivalent Func command, to suggest
/// (nothing is sent).
fn salt_habit(spec: &str, rest: &[String]) -> Option<PlanError> {
    let first = rest.iter().position(|w| !w.starts_with('-'))?;
    let word = &rest[first];
    let (module, method) = word.split_once('.')?;
    let plain = |t: &str| !t.is_empty() && t.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !plain(module) || !plain(method) {
        return None;
    }
    let (module, method) = crate::cli::func_call_for_salt(module, method);
    let quote = overlord::interrupt::shell_quote;
    let args: Vec<String> = rest[first + 1..].iter().map(|a| quote(a)).collect();
    let mut suggestion = format!("func {} call {module} {method}", quote(spec));
    if !args.is_empty() {
        suggestion.push(' ');
        suggestion.push_str(&args.join(" "));
    }
    Some(PlanError::usage(format!(
        "{word:?} is not a command here (Salt names the function after the target; Func calls it):\n  {suggestion}"
    )))
}

/// `func -G 'os:Debian' test.ping`: Salt's target is the grain, so its
/// function stands where Func's SPEC does, and nothing follows. The Func
/// command that means it, to suggest (nothing is sent).
fn salt_target(spec: &str, rest: &[String], args: &[String]) -> Option<PlanError> {
    let (module, method) = spec.split_once('.')?;
    let plain = |t: &str| !t.is_empty() && t.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !rest.is_empty() || !plain(module) || !plain(method) {
        return None;
    }
    let (module, method) = crate::cli::func_call_for_salt(module, method);
    let quote = overlord::interrupt::shell_quote;
    let options: Vec<String> = args.iter().filter(|a| *a != spec).map(|a| quote(a)).collect();
    let options = match options.is_empty() {
        true => String::new(),
        false => format!(" {}", options.join(" ")),
    };
    Some(PlanError::usage(format!(
        "{spec:?} is a function, and func needs the hosts first (Salt's target is the grain; here -G only filters them):\n  func '*'{options} call {module} {method}"
    )))
}

/// Parses `args` (without the program name).
pub fn parse(args: &[String], env_root: Option<String>) -> Result<(Plan, Command), PlanError> {
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
                .ok_or_else(|| PlanError::usage("missing SPEC".into()))?;
            let sub = <crate::cli::SpecCli as clap::Parser>::try_parse_from(
                std::iter::once(format!("func {spec}")).chain(rest.iter().cloned()),
            )
            .map_err(|e| {
                misspelt_command(spec)
                    .or_else(|| salt_habit(spec, rest))
                    .or_else(|| salt_target(spec, rest, args))
                    .unwrap_or_else(|| clap_error(e))
            })?;
            global = global.merge(sub.global);
            // Every SPEC command's SPEC (and -e) is checked by the gate's rule.
            overlord::gate::call::check_spec("spec", spec)?;
            if let Some(ex) = &global.exclude {
                overlord::gate::call::check_spec("exclude", ex)?;
            }
            (spec.clone(), Parsed::Spec(sub.command))
        }
        crate::cli::TopCommand::Transmit => return transmitted(global.root, env_root),
        top => (String::new(), Parsed::Top(top)),
    };
    let mut globals = globals_of(global, env_root)?;
    let command = match parsed {
        Parsed::Spec(c) => Command::from_spec(c, &spec, &mut globals)?,
        Parsed::Top(c) => Command::from_top(c)?,
    };
    finish(globals, spec, command)
}

/// `func transmit`: the request on stdin, as the command it stands for.
fn transmitted(
    root: Option<std::path::PathBuf>,
    env_root: Option<String>,
) -> Result<(Plan, Command), PlanError> {
    let mut request = String::new();
    std::io::Read::read_to_string(&mut std::io::stdin().take(16 << 20), &mut request)
        .map_err(|e| PlanError::usage(format!("func transmit: cannot read the request: {e}")))?;
    let words = match crate::commands::transmit::request(&request)? {
        crate::commands::transmit::Request::Words(words) => words,
        crate::commands::transmit::Request::Call(call) => {
            let root = root.map(|r| r.to_string_lossy().into_owned()).or(env_root);
            return transmitted_call(root, call);
        }
        crate::commands::transmit::Request::JobStatus { id, wait, timeout } => {
            let root = root.map(|r| r.to_string_lossy().into_owned()).or(env_root);
            let globals = transmitted_globals(root, timeout);
            let status = crate::commands::job_status::JobStatus { id, wait };
            return finish(globals, String::new(), Command::JobStatus(status));
        }
    };
    let mut all: Vec<String> = Vec::new();
    if let Some(root) = &root {
        all.extend(["--root".to_string(), root.to_string_lossy().into_owned()]);
    }
    all.extend(words);
    parse(&all, env_root)
}

/// The global options as the plan takes them (`--root`, else `FUNC_ROOT`, else `/`).
fn globals_of(global: crate::cli::GlobalArgs, env_root: Option<String>) -> Result<Globals, PlanError> {
    Ok(Globals {
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
        out: global
            .out
            .as_deref()
            .and_then(crate::display::output::Format::named)
            .unwrap_or_default(),
        forks: global.forks.map(usize::from),
        verbose: global.verbose,
        quiet: global.quiet,
        filter: overlord::gate::filter::Filter::parse(
            global.filter.as_deref(),
            global.filteror.as_deref(),
            global.grain.as_deref(),
            overlord::gate::filter::query_text(global.fact_query.as_deref())?.as_ref(),
        )?,
        delegate: global.delegate || global.mapfile.is_some(),
        mapfile: global.mapfile,
        direct: global.direct,
    })
}

/// A call `func transmit` read, as `func --json SPEC call` (an async one
/// with `--nopoll`: the answer is its id).
fn transmitted_call(root: Option<String>, call: overlord::gate::Call) -> Result<(Plan, Command), PlanError> {
    let mut globals = transmitted_globals(root, call.timeout);
    globals.exclude = call.exclude.clone();
    globals.forks = call.forks;
    globals.filter = call.filter.as_deref().cloned();
    globals.delegate = call.delegate;
    let spec = call.spec.clone();
    let nopoll = matches!(
        call.run,
        overlord::gate::Run::Async | overlord::gate::Run::Batch { detached: true, .. }
    );
    finish(
        globals,
        spec,
        Command::Call(crate::commands::call::Call::Run { call, nopoll }),
    )
}

/// The options of a `func transmit` request: JSON out, below `root`.
fn transmitted_globals(root: Option<String>, timeout: Option<f64>) -> Globals {
    Globals {
        root: Root::new(root.unwrap_or_else(|| "/".into())),
        timeout,
        exclude: None,
        json: true,
        out: crate::display::output::Format::Json,
        forks: None,
        verbose: 0,
        quiet: false,
        filter: None,
        delegate: false,
        mapfile: None,
        direct: false,
    }
}

/// The plan for `command` with `globals`.
fn finish(globals: Globals, spec: String, mut command: Command) -> Result<(Plan, Command), PlanError> {
    // overlord.conf first: a bad value stops here, naming the file and key.
    overlord::conf::OverlordConf::of(&globals.root)?;
    command.resolve_last(&store(&globals.root))?;
    let mut dispatch = Dispatch::for_root(&globals.root, globals.forks, globals.timeout)?;
    dispatch.handoff = !globals.direct;
    if globals.direct {
        // The drivers of its jobs call the minions themselves too.
        overlord::relay::local::call_directly();
    }
    dispatch.verbose = globals.verbose > 0;
    let routes = match globals.delegate {
        true => overlord::relay::Routes::load(&globals.root, globals.mapfile.as_deref())
            .map_err(|e| PlanError::Config(e.to_string()))?,
        false => None,
    };
    let plan = Plan {
        held_store: None,
        resolved: None,
        warm: None,
        routes,
        delegate: globals.delegate,
        dispatch,
        timeout: globals.timeout,
        missing: Default::default(),
        filter: globals.filter,
        unjudged: Default::default(),
        root: globals.root,
        spec,
        exclude: globals.exclude,
        json: globals.json || globals.out != crate::display::output::Format::Json,
        out: globals.out,
        verbose: globals.verbose,
        quiet: globals.quiet,
    };
    Ok((plan, command))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(args: &[&str]) -> Result<(Plan, Command), PlanError> {
        parse(
            &args.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
            Some("/nonexistent-root".into()),
        )
    }

    #[test]
    fn call_options_before_and_after_module_method() {
        let (plan, command) = p(&[
            "-t", "5", "web*", "call", "test", "add", "1", "2", "--forks", "3", "--json",
        ])
        .unwrap();
        assert_eq!(plan.dispatch.forks, 3);
        assert_eq!(plan.dispatch.timeout_secs, 5.0);
        assert!(plan.json);
        match command {
            Command::Call(crate::commands::call::Call::Run { call, .. }) => assert_eq!(
                (call.function(), call.args),
                (
                    "test.add".to_string(),
                    overlord::gate::Args::Words(vec!["1".to_string(), "2".to_string()])
                )
            ),
            _ => panic!("not a call"),
        }
        let (plan, command) = p(&["*", "call", "--forks=2", "process", "info", "--", "--json"]).unwrap();
        match command {
            Command::Call(crate::commands::call::Call::Run { call, .. }) => {
                assert_eq!(call.args, overlord::gate::Args::Words(vec!["--json".to_string()]))
            }
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
