//! `func batch list | status JOB_ID [--follow] | stop JOB_ID [--kill] |
//! recover [JOB_ID]`. Every one of them says when a batch's driver is gone
//! (and that `recover` resumes it).

use std::time::Duration;

use serde_json::json;

use overlord::batch::control::{self, counts_text, state_word, Recovered};
use overlord::batch::driver;
use overlord::batch::record::BatchRecord;
use overlord::plan::{Plan, PlanError};
use overlord::store::{JobMeta, JobStore as _};
use overlord::when;

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

/// Every batch the store holds, newest first.
fn batches(plan: &Plan) -> Result<Vec<(JobMeta, BatchRecord)>, PlanError> {
    Ok(control::all(&plan.store())?)
}

fn list(plan: &Plan) -> Result<i32, PlanError> {
    let all = batches(plan)?;
    if plan.json {
        let rows: Vec<_> = all
            .iter()
            .map(|(m, r)| {
                json!({"id": m.id, "function": m.function, "size": r.state.size, "mode": r.mode,
                "started": m.started, "state": state_word(r), "counts": r.state.counts()})
            })
            .collect();
        crate::display::output::print_doc(plan.out, &rows);
        return Ok(0);
    }
    if all.is_empty() {
        overlord::outln!("no batches");
    }
    for (m, r) in &all {
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
    let Some((meta, mut rec)) = driver::load(&plan.store(), id).map_err(config)? else {
        if plan.json {
            crate::display::output::print_doc(plan.out, &control::unknown_doc(id));
        } else {
            overlord::outln!(
                "no batch {} here (unknown, or expired)",
                common::paths::shorten(id)
            );
        }
        return Ok(1);
    };
    control::with_recorded_ends(&plan.store(), &mut rec, &meta.id);
    let hosts = control::hosts_doc(&rec);
    if plan.json {
        crate::display::output::print_doc(plan.out, &control::status_doc(&meta, &rec));
    } else {
        overlord::outln!(
            "{}  {}  batch {}: {}  [{}]",
            meta.id,
            meta.function,
            rec.state.size,
            state_word(&rec),
            counts_text(&rec)
        );
        for (h, v) in &hosts {
            let reason = v
                .reason
                .as_deref()
                .map(|r| format!(" ({})", crate::display::output::shown_line(r)))
                .unwrap_or_default();
            overlord::outln!("    {h}: {}{reason}", v.state);
        }
    }
    Ok(i32::from(control::any_failed(&rec) || rec.orphaned()))
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
    let store = plan.store();
    let found = control::request_stop(&store, id, kill)?;
    let mut out = crate::display::output::Lines::new(plan.json, plan.out);
    out.field("job_id", json!(id));
    let Some((_, rec)) = found else {
        out.line(format!(
            "no batch {} here (unknown, or expired)",
            common::paths::shorten(id)
        ));
        return Ok(out.finish(1));
    };
    if rec.complete {
        out.line(format!("batch {id} has already ended: {}", state_word(&rec)));
        out.field("state", json!(state_word(&rec)));
        return Ok(out.finish(0));
    }
    if rec.orphaned() {
        out.line(format!(
            "stop recorded, but the batch's driver is gone: run func batch recover {id} to apply it"
        ));
        out.field("state", json!(state_word(&rec)));
        return Ok(out.finish(1));
    }
    // Wait for the driver to apply it (and, draining, for in-flight hosts).
    let limit = std::time::Instant::now() + Duration::from_secs_f64(plan.timeout.unwrap_or(60.0));
    loop {
        match driver::load(&store, id).map_err(config)? {
            Some((_, r)) if r.complete || (!kill && r.state.halted.is_some()) => {
                out.line(format!("batch {id}: {}  [{}]", state_word(&r), counts_text(&r)));
                out.field("state", json!(state_word(&r)));
                out.field("counts", json!(r.state.counts()));
                return Ok(out.finish(0));
            }
            Some((_, r)) if r.orphaned() || std::time::Instant::now() > limit => {
                out.line(format!("batch {id}: {}  [{}]", state_word(&r), counts_text(&r)));
                out.field("state", json!(state_word(&r)));
                out.field("counts", json!(r.state.counts()));
                return Ok(out.finish(1));
            }
            None => return Ok(out.finish(1)),
            _ => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

fn recover(plan: &Plan, id: Option<&str>) -> Result<i32, PlanError> {
    let targets: Vec<String> = match id {
        Some(id) => vec![id.to_string()],
        None => batches(plan)?
            .into_iter()
            .filter(|(_, r)| r.orphaned())
            .map(|(m, _)| m.id)
            .collect(),
    };
    let mut out = crate::display::output::Lines::new(plan.json, plan.out);
    out.field("batches", json!({}));
    if targets.is_empty() {
        out.line("no batch needs recovering".into());
        return Ok(out.finish(0));
    }
    let mut outcome = serde_json::Map::new();
    let exe = common::process::own_exe().map_err(|source| overlord::error::EngineError::Spawn {
        what: "the batch driver (its executable is not found)",
        source,
    })?;
    let mut code = 0;
    let store = plan.store();
    for id in targets {
        // Take the batch first, in one transaction: of two recovers (or a
        // recover and a driver just starting) only one wins, and the other
        // sees a live holder. The driver spawned here is then handed it.
        match control::recover(&store, &plan.root, &exe, &id)?.0 {
            Recovered::Missing => {
                out.line(format!(
                    "no batch {} here (unknown, or expired)",
                    common::paths::shorten(&id)
                ));
                outcome.insert(id, json!("unknown"));
                code = 1;
            }
            Recovered::Ended(word) => {
                out.line(format!("batch {id}: {word} (nothing to recover)"));
                outcome.insert(id, json!("nothing to recover"));
            }
            Recovered::Held { pid, host: None, .. } => {
                out.line(format!(
                    "batch {id}: its driver (pid {pid}) is running (nothing to recover)"
                ));
                outcome.insert(id, json!("nothing to recover"));
            }
            Recovered::Held {
                pid,
                host: Some(host),
                lease_left,
            } => {
                out.line(format!(
                    "batch {id}: its driver (pid {pid} on {}) holds a live lease for {:.0} s more (nothing to recover)",
                    crate::display::output::shown_line(&host),
                    lease_left.unwrap_or(0.0)
                ));
                outcome.insert(id, json!("nothing to recover"));
            }
            Recovered::Resumed => {
                out.line(format!("batch {id}: resumed by a new driver"));
                outcome.insert(id, json!("resumed"));
            }
        }
    }
    out.field("batches", serde_json::Value::Object(outcome));
    Ok(out.finish(code))
}
