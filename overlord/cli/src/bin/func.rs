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
        Err(e) => return fail(&e, error_format(&args)),
    };
    match overlord_cli::commands::run(&plan, &command) {
        // A named minion that does not exist is a failure, whatever the others did.
        Ok(0) if !plan.missing().is_empty() => ExitCode::from(1),
        // So is one that could not judge the filter (it was not called).
        Ok(0) if !plan.unjudged().is_empty() => ExitCode::from(1),
        Ok(code) => ExitCode::from(code as u8),
        Err(e) => fail(&e, plan.json.then_some(plan.out)),
    }
}

/// The document format the words ask for (`--json`/`-j`, `--out FORMAT`,
/// `transmit`; before `--`), for errors found before the command line could
/// be parsed; `None`: for people only.
fn error_format(args: &[String]) -> Option<overlord_cli::display::output::Format> {
    use overlord_cli::display::output::Format;
    let words: Vec<&str> = args
        .iter()
        .map(String::as_str)
        .take_while(|a| *a != "--")
        .collect();
    let out = words
        .iter()
        .enumerate()
        .find_map(|(i, w)| match w.strip_prefix("--out") {
            Some("") => words.get(i + 1).copied(),
            Some(v) => v.strip_prefix('='),
            None => None,
        });
    match out {
        // txt is for people: a document asked for with it is JSON (`fail`).
        Some(name) => Some(Format::named(name).unwrap_or(Format::Json)),
        None if words
            .iter()
            .any(|a| *a == "--json" || *a == "-j" || *a == "transmit") =>
        {
            Some(Format::Json)
        }
        None => None,
    }
}

/// Reports `e` on stderr; when a document was asked for, also as
/// `{"error", "exit_status", "kind"}` on stdout in that format, so a program
/// always gets a document and tells a SPEC that matched nothing (`no_match`)
/// from other refusals without reading the message.
fn fail(e: &overlord::plan::PlanError, format: Option<overlord_cli::display::output::Format>) -> ExitCode {
    let code = e.exit_code();
    match e {
        overlord::plan::PlanError::Help(text) => {
            overlord::out!("{text}");
            return ExitCode::from(code as u8);
        }
        overlord::plan::PlanError::Gate(overlord::gate::GateError::Invalid(msg)) => {
            overlord::errln!("{msg}")
        }
        other => overlord::errln!("ERROR: {other}"),
    }
    if let Some(format) = format {
        let doc = serde_json::json!({"error": e.to_string(), "exit_status": code, "kind": e.kind()});
        // txt is for people: its document is JSON.
        let format = match format {
            overlord_cli::display::output::Format::Txt => overlord_cli::display::output::Format::Json,
            f => f,
        };
        overlord_cli::display::output::print_doc(format, &doc);
    }
    ExitCode::from(code as u8)
}
