//! `func`: the Func overlord CLI. Parses the command line into a plan and
//! carries it out; re-spawned by the engine, it is its worker or a driver
//! (`overlord::respawned`).
//! Exit status: 0 every host succeeded, 1 any host failed or nothing matched,
//! 2 usage error.

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(code) = overlord::respawned::engine_exit(&args) {
        return code;
    }
    let (plan, command) = match overlord_cli::parse::parse(&args, std::env::var(common::paths::ROOT_ENV).ok())
    {
        Ok(parsed) => parsed,
        Err(e) => return fail(&e, wants_json(&args)),
    };
    match overlord_cli::commands::run(&plan, &command) {
        // A named minion that does not exist is a failure, whatever the others did.
        Ok(0) if !plan.missing().is_empty() => ExitCode::from(1),
        // So is one that could not judge the filter (it was not called).
        Ok(0) if !plan.unjudged().is_empty() => ExitCode::from(1),
        Ok(code) => ExitCode::from(code as u8),
        Err(e) => fail(&e, plan.json),
    }
}

/// Whether `--json`/`-j` stands among the words (before `--`), for errors
/// found before the command line could be parsed.
fn wants_json(args: &[String]) -> bool {
    args.iter()
        .take_while(|a| *a != "--")
        .any(|a| a == "--json" || a == "-j" || a == "transmit")
}

/// Reports `e` on stderr; with `--json` also as `{"error", "exit_status"}`
/// on stdout, so a program always gets a document.
fn fail(e: &overlord::plan::PlanError, json: bool) -> ExitCode {
    let code = e.exit_code();
    match e {
        overlord::plan::PlanError::Help(text) => {
            overlord::out!("{text}");
            return ExitCode::from(code as u8);
        }
        overlord::plan::PlanError::Usage(msg)
        | overlord::plan::PlanError::Gate(overlord::gate::GateError::Invalid(msg)) => {
            overlord::errln!("{msg}")
        }
        other => overlord::errln!("ERROR: {other}"),
    }
    if json {
        overlord::outln!(
            "{}",
            serde_json::json!({"error": e.to_string(), "exit_status": code})
        );
    }
    ExitCode::from(code as u8)
}
