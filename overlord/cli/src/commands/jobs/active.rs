//! `func jobs active [SPEC]`: what runs now on the minions SPEC names
//! (default `*`), grouped by overlord job: which hosts still run it and which
//! have returned; minion jobs this overlord did not start are listed apart
//! (the engine's `jobs::active`).

use overlord::engine::{self, Answer, Request};
use overlord::plan::{Plan, PlanError};

use crate::display::output::shown_line as line;

#[derive(clap::Args, Debug)]
pub struct Active {
    /// Minions to ask (default: all)
    #[arg(value_name = "SPEC", default_value = "*")]
    pub spec: String,
}

impl Active {
    pub fn run(&self, plan: &Plan) -> Result<i32, PlanError> {
        let request = Request::JobsActive {
            spec: self.spec.clone(),
        };
        let answer = engine::serve(plan, None, request, &mut engine::Unwatched)?;
        let Answer::Active(found) = &answer else {
            return Err(PlanError::Config(
                "the engine answered jobs active with something else".into(),
            ));
        };
        if plan.json {
            crate::display::output::print_doc(plan.out, &answer.document());
            return Ok(answer.exit_code());
        }
        let mut text = String::new();
        for j in &found.jobs {
            text.push_str(&format!(
                "{}  {} {}\n    running ({}): {}\n    returned ({}): {}\n",
                j.id,
                j.function,
                line(&j.args.join(" ")),
                j.running.len(),
                join(j.running.iter()),
                j.returned.len(),
                join(j.returned.iter())
            ));
        }
        if !found.others.is_empty() {
            text.push_str("not started by this overlord:\n");
        }
        for (host, job) in &found.others {
            // A row a minion wrote: every field kept on this one line.
            text.push_str(&format!(
                "    {host}: {} {} (pid {}, caller {})\n",
                line(&job.id),
                line(&job.method),
                job.pid,
                line(&job.caller)
            ));
        }
        for (host, why) in &found.unreachable {
            text.push_str(&format!(
                "{host}: not asked: {}\n",
                overlord::out::error_line(why)
            ));
        }
        match text.is_empty() {
            true => overlord::outln!("no jobs running on {} hosts", found.asked),
            false => overlord::out!("{text}"),
        }
        Ok(answer.exit_code())
    }
}

fn join<'a>(items: impl Iterator<Item = &'a String>) -> String {
    let v: Vec<&str> = items.map(String::as_str).collect();
    if v.is_empty() {
        "-".into()
    } else {
        v.join(", ")
    }
}
