//! `func batch list | status JOB_ID [--follow] | stop JOB_ID [--kill] |
//! recover [JOB_ID]`. Every one of them says when a batch's driver is gone
//! (and that `recover` resumes it).

use std::time::Duration;

use serde_json::json;

use overlord::batch::control::{self, counts_text, state_word, Recovered};
use overlord::batch::driver;
use overlord::engine::{self, Answer, Request};
use overlord::plan::{Plan, PlanError};
use overlord::store::when;
use overlord::store::JobStore as _;

#[derive(Debug)]
pub enum Batch {
    List,
    Status { id: String, follow: bool },
    Stop { id: String, kill: bool },
    Recover { id: Option<String> },
}

impl From<crate::cli::BatchCommand> for Batch {
    fn from(c: crate::cli::BatchCommand) -> Self {
        use crate::cli::BatchCommand as C;
        match c {
            C::List => Batch::List,
            C::Status { id, follow } => Batch::Status { id, follow },
            C::Stop { id, kill } => Batch::Stop { id, kill },
            C::Recover { id } => Batch::Recover { id },
        }
    }
}

impl Batch {
    pub fn run(&self, plan: &Plan) -> Result<i32, PlanError> {
        match self {
            Batch::List => list(plan),
            Batch::Status { id, follow } => status(plan, id, *follow),
            Batch::Stop { id, kill } => stop(plan, id, *kill),
            Batch::Recover { id } => recover(plan, id.as_deref()),
        }
    }
}

fn config(e: impl Into<PlanError>) -> PlanError {
    e.into()
}

fn ask(plan: &Plan, request: Request) -> Result<Answer, PlanError> {
    engine::serve(plan, None, request, &mut engine::Unwatched)
}

fn list(plan: &Plan) -> Result<i32, PlanError> {
    let answer = ask(plan, Request::BatchList)?;
    let Answer::Batches(all) = &answer else {
        return Err(PlanError::Config(
            "the engine answered batch list with something else".into(),
        ));
    };
    if plan.json {
        crate::display::output::print_doc(plan.out, &answer.document());
        return Ok(0);
    }
    if all.is_empty() {
        overlord::outln!("no batches");
    }
    for (m, r) in all {
        overlord::outln!(
            "{}  {}  batch {} ({})  started {}  {}  [{}]",
            m.id,
            m.function,
            r.state.size,
            r.mode,
            when::show(m.started),
            state_word(r),
            counts_text(r)
        );
    }
    Ok(0)
}

fn status(plan: &Plan, id: &str, follow: bool) -> Result<i32, PlanError> {
    if follow {
        return follow_events(plan, id);
    }
    let answer = ask(plan, Request::BatchStatus { id: id.to_string() })?;
    let Answer::BatchStatus { found, .. } = &answer else {
        return Err(PlanError::Config(
            "the engine answered batch status with something else".into(),
        ));
    };
    match (found, plan.json) {
        (_, true) => crate::display::output::print_doc(plan.out, &answer.document()),
        (None, false) => overlord::outln!(
            "no batch {} here (unknown, or expired)",
            common::paths::shorten(id)
        ),
        (Some((meta, rec)), false) => {
            overlord::outln!(
                "{}  {}  batch {}: {}  [{}]",
                meta.id,
                meta.function,
                rec.state.size,
                state_word(rec),
                counts_text(rec)
            );
            for (h, v) in &control::hosts_doc(rec) {
                let reason = v
                    .reason
                    .as_deref()
                    .map(|r| format!(" ({})", crate::display::output::shown_line(r)))
                    .unwrap_or_default();
                overlord::outln!("    {h}: {}{reason}", v.state);
            }
        }
    }
    Ok(answer.exit_code())
}

/// Prints the batch's lifecycle events as they are appended, until it ends.
fn follow_events(plan: &Plan, id: &str) -> Result<i32, PlanError> {
    let store = plan.store();
    if driver::load(&store, id).map_err(config)?.is_none() {
        overlord::outln!(
            "no batch {} here (unknown, or expired)",
            common::paths::shorten(id)
        );
        return Ok(1);
    }
    let mut offset = 0u64;
    loop {
        // Whoever read the stream has gone (`| head`): nothing left to follow for.
        if overlord::out::closed() {
            return Ok(0);
        }
        let (lines, next) = store.batch_events(Some(offset)).map_err(config)?;
        offset = next;
        for ev in lines {
            if ev["job_id"] != id {
                continue;
            }
            if plan.json {
                overlord::outln!("{}", ev);
            } else {
                overlord::outln!(
                    "{}  {}  {}",
                    when::show(ev["time"].as_f64().unwrap_or(0.0)),
                    ev["event"].as_str().unwrap_or(""),
                    ev["counts"]
                );
            }
            if matches!(ev["event"].as_str(), Some("complete" | "halted" | "interrupted")) {
                return Ok(0);
            }
        }
        match driver::load(&store, id).map_err(config)? {
            Some((_, rec)) if rec.complete => return Ok(0),
            Some((_, rec)) if rec.orphaned() => {
                overlord::outln!("driver gone: run func batch recover {id}");
                return Ok(1);
            }
            None => return Ok(1),
            _ => std::thread::sleep(Duration::from_millis(200)),
        }
    }
}

fn stop(plan: &Plan, id: &str, kill: bool) -> Result<i32, PlanError> {
    let request = Request::BatchStop {
        id: id.to_string(),
        kill,
        wait: true,
    };
    let answer = ask(plan, request)?;
    let Answer::BatchStop { found, applied, .. } = &answer else {
        return Err(PlanError::Config(
            "the engine answered batch stop with something else".into(),
        ));
    };
    let mut out = crate::display::output::Lines::new(plan.json, plan.out);
    out.field("job_id", json!(id));
    let code = answer.exit_code();
    let Some((_, rec)) = found else {
        out.line(format!(
            "no batch {} here (unknown, or expired)",
            common::paths::shorten(id)
        ));
        return Ok(out.finish(code));
    };
    out.field("state", json!(state_word(rec)));
    match applied {
        None if rec.complete => out.line(format!("batch {id} has already ended: {}", state_word(rec))),
        None => out.line(format!(
            "stop recorded, but the batch's driver is gone: run func batch recover {id} to apply it"
        )),
        Some(_) => {
            out.line(format!("batch {id}: {}  [{}]", state_word(rec), counts_text(rec)));
            out.field("counts", json!(rec.state.counts()));
        }
    }
    Ok(out.finish(code))
}

fn recover(plan: &Plan, id: Option<&str>) -> Result<i32, PlanError> {
    let answer = ask(
        plan,
        Request::BatchRecover {
            id: id.map(str::to_string),
        },
    )?;
    let Answer::Recovered(done) = &answer else {
        return Err(PlanError::Config(
            "the engine answered batch recover with something else".into(),
        ));
    };
    let mut out = crate::display::output::Lines::new(plan.json, plan.out);
    out.field("batches", answer.document()["batches"].clone());
    if done.is_empty() {
        out.line("no batch needs recovering".into());
    }
    for (id, outcome, _) in done {
        out.line(match outcome {
            Recovered::Missing => format!("no batch {} here (unknown, or expired)", common::paths::shorten(id)),
            Recovered::Ended(word) => format!("batch {id}: {word} (nothing to recover)"),
            Recovered::Held { pid, host: None, .. } => {
                format!("batch {id}: its driver (pid {pid}) is running (nothing to recover)")
            }
            Recovered::Held {
                pid,
                host: Some(host),
                lease_left,
            } => format!(
                "batch {id}: its driver (pid {pid} on {}) holds a live lease for {:.0} s more (nothing to recover)",
                crate::display::output::shown_line(host),
                lease_left.unwrap_or(0.0)
            ),
            Recovered::Resumed => format!("batch {id}: resumed by a new driver"),
        });
    }
    Ok(out.finish(answer.exit_code()))
}
