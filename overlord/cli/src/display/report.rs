//! Results for people as they come: each host's block is printed the
//! moment it ends, a progress line on a terminal names the hosts still
//! awaited, and a summary on stderr counts ok / failed / unreachable /
//! timed out and names the hosts that did not succeed (Salt's `--summary`,
//! Ansible's recap). Colour only on a terminal and never with `NO_COLOR`.

use std::collections::BTreeSet;
use std::io::IsTerminal;

use common::Value;

pub use overlord::values::{natural, natural_cmp};

use overlord::plan::Plan;

pub use overlord::values::{class, Class};

/// Whether colour may be written to a stream that is (or not) a terminal.
pub fn colour(terminal: bool) -> bool {
    terminal && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// `text` in red (failures) when `on`.
pub fn red(text: &str, on: bool) -> String {
    use owo_colors::OwoColorize;
    match on {
        true => text.red().to_string(),
        false => text.to_string(),
    }
}

fn green(text: &str, on: bool) -> String {
    use owo_colors::OwoColorize;
    match on {
        true => text.green().to_string(),
        false => text.to_string(),
    }
}

/// One host's lines, as a command shows it.
pub type Render = fn(method: &str, host: &str, value: &Value, colour: bool) -> String;

/// The default block: `host:` then the value, errors and failures marked.
pub fn block(method: &str, host: &str, value: &Value, colour: bool) -> String {
    let one = [(host.to_string(), value.clone())].into_iter().collect();
    let text = crate::display::output::human(method, &one);
    match colour && class(method, value) != Class::Ok {
        true => text
            .lines()
            .map(
                |l| match l.trim_start().starts_with("ERROR") || l.trim_start().starts_with("FAILED") {
                    true => red(l, true),
                    false => l.to_string(),
                },
            )
            .map(|l| l + "\n")
            .collect(),
        false => text,
    }
}

/// The results of one command, shown as they come.
pub struct Report<'a> {
    plan: &'a Plan,
    method: String,
    render: Render,
    waiting: BTreeSet<String>,
    ended: Vec<(String, Class)>,
    /// The line naming the hosts awaited, on a terminal's stderr only.
    progress: Option<indicatif::ProgressBar>,
    colour_out: bool,
    colour_err: bool,
}

impl<'a> Report<'a> {
    /// A report on `hosts` (those awaited) for `method`.
    pub fn new(
        plan: &'a Plan,
        method: &str,
        hosts: impl IntoIterator<Item = String>,
        render: Render,
    ) -> Self {
        let report = Self {
            plan,
            method: method.to_string(),
            render,
            waiting: hosts.into_iter().collect(),
            ended: Vec::new(),
            progress: (plan.progress() && !plan.json).then(|| {
                let bar =
                    indicatif::ProgressBar::with_draw_target(None, indicatif::ProgressDrawTarget::stderr());
                bar.set_style(
                    indicatif::ProgressStyle::with_template("{msg}")
                        .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
                );
                bar
            }),
            colour_out: colour(std::io::stdout().is_terminal()),
            colour_err: colour(std::io::stderr().is_terminal()),
        };
        report.draw_progress();
        report
    }

    /// One host ended: its block now (unless `--json`), progress updated.
    pub fn host(&mut self, host: &str, value: &Value) {
        if !self.waiting.remove(host) && self.ended.iter().any(|(h, _)| h == host) {
            return;
        }
        self.ended.push((host.to_string(), class(&self.method, value)));
        if !self.plan.json {
            let block = (self.render)(&self.method, host, value, self.colour_out);
            match &self.progress {
                Some(bar) => bar.suspend(|| overlord::out!("{block}")),
                None => overlord::out!("{block}"),
            }
        }
        self.draw_progress();
    }

    fn draw_progress(&self) {
        let Some(bar) = &self.progress else { return };
        if self.waiting.is_empty() {
            bar.finish_and_clear();
            return;
        }
        let names = natural(&self.waiting);
        let shown: Vec<&str> = names.iter().take(5).map(|s| s.as_str()).collect();
        let more = match names.len() > 5 {
            true => format!(" and {} more", names.len() - 5),
            false => String::new(),
        };
        bar.set_message(format!(
            "{} host{} left: {}{more}",
            names.len(),
            if names.len() == 1 { "" } else { "s" },
            shown.join(", ")
        ));
    }

    /// Hosts not ended yet.
    pub fn waiting(&self) -> impl Iterator<Item = &String> {
        self.waiting.iter()
    }

    /// Clears the progress line and prints the summary on stderr (not
    /// with `-q`). Returns whether every host succeeded.
    pub fn finish(&mut self) -> bool {
        if let Some(bar) = &self.progress {
            bar.finish_and_clear();
        }
        let count = |c: Class| self.ended.iter().filter(|(_, k)| *k == c).count();
        let all_ok = self.ended.iter().all(|(_, k)| *k == Class::Ok) && self.waiting.is_empty();
        if self.plan.quiet || self.ended.is_empty() {
            return all_ok;
        }
        let c = self.colour_err;
        let mut parts = vec![green(
            &format!("{} ok", count(Class::Ok)),
            c && count(Class::Ok) > 0,
        )];
        for (class, word) in [
            (Class::Failed, "failed"),
            (Class::Unreachable, "unreachable"),
            (Class::TimedOut, "timed out"),
            (Class::Abandoned, "abandoned"),
        ] {
            let n = count(class);
            if n > 0 {
                let mut names: Vec<&String> = self
                    .ended
                    .iter()
                    .filter(|(_, k)| *k == class)
                    .map(|(h, _)| h)
                    .collect();
                names.sort_by(|a, b| natural_cmp(a, b));
                let list: Vec<&str> = names.iter().map(|s| s.as_str()).collect();
                parts.push(red(&format!("{n} {word} ({})", list.join(", ")), c));
            }
        }
        if !self.waiting.is_empty() {
            parts.push(format!("{} not finished", self.waiting.len()));
        }
        let missing = self.plan.missing();
        if !missing.is_empty() {
            parts.push(red(
                &format!(
                    "{} unknown ({})",
                    missing.len(),
                    overlord::out::shown_line(&missing.join(", "))
                ),
                c,
            ));
        }
        let total = self.ended.len() + self.waiting.len();
        // Colour on purpose: written as it is (host names are plain names).
        overlord::err!(
            "{total} host{}: {}\n",
            if total == 1 { "" } else { "s" },
            parts.join(", ")
        );
        all_ok
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn natural_order_and_classes() {
        let mut names = vec!["web10", "db2", "web2", "db10", "db1", "web02"];
        names.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(names, ["db1", "db2", "db10", "web02", "web2", "web10"]);
        let err = |k: &str| common::xmlrpc::remote_error(k, "x", "");
        assert_eq!(class("test.ping", &Value::Integer(1)), Class::Ok);
        assert_eq!(class("test.ping", &err("socket.timeout")), Class::TimedOut);
        assert_eq!(class("test.ping", &err("socket.error")), Class::Unreachable);
        assert_eq!(class("test.ping", &err("exceptions.Exception")), Class::Failed);
        let rc = Value::Array(vec![
            Value::Integer(2),
            Value::String(String::new()),
            Value::String(String::new()),
        ]);
        assert_eq!(class("command.run", &rc), Class::Failed);
    }
}
