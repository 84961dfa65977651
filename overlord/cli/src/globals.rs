//! `func`'s global options as parsed (clap's `GlobalArgs` read into
//! typed values) and the helpers of the hand-read `call` options: what a
//! plan is made from (`parse.rs`), a door's own business, not the engine's.

use common::paths::Root;
use overlord::plan::PlanError;
use overlord::settings::seconds;

/// Global options.
#[derive(Debug, Clone)]
pub struct Globals {
    pub root: Root,
    pub timeout: Option<f64>,
    pub exclude: Option<String>,
    pub json: bool,
    /// `--out`: how host results are printed when not for people.
    pub out: overlord::out::Format,
    pub forks: Option<usize>,
    /// `-v` (repeatable) and `-q`.
    pub verbose: u8,
    pub quiet: bool,
    /// `--filter`, `--filteror`, `-G`: targeting by facts.
    pub filter: Option<overlord::gate::filter::Filter>,
    /// `--delegate`: through relays where the map says (DESIGN §17).
    pub delegate: bool,
    /// `--mapfile`: the map to use instead of `var/lib/func/map`.
    pub mapfile: Option<std::path::PathBuf>,
    /// `--direct`: never hand a call to the root's func-api.
    pub direct: bool,
}

impl Globals {
    /// `--out FORMAT` given where a command's own options are read.
    pub fn set_out(&mut self, format: &str) -> Result<(), PlanError> {
        match overlord::out::Format::named(format) {
            Some(overlord::out::Format::Json) => self.json = true,
            Some(other) => self.out = other,
            None => {
                return Err(PlanError::usage(format!(
                    "--out takes json, yaml, txt or xmlrpc, not {format:?}"
                )))
            }
        }
        Ok(())
    }
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
        .ok_or_else(|| PlanError::usage(format!("{flag} needs a value")))
}

/// `--flag=value` → (`--flag`, Some(value)).
pub fn split_flag(arg: &str) -> (String, Option<String>) {
    match arg.split_once('=') {
        Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
        _ => (arg.to_string(), None),
    }
}

pub fn positive(flag: &str, v: &str) -> Result<f64, PlanError> {
    seconds(v, false).map_err(|why| PlanError::usage(format!("{flag} {why}")))
}

/// `--forks N`, by the gate's rule.
pub fn forks(v: &str) -> Result<usize, PlanError> {
    overlord::gate::call::forks(v).map_err(|e| PlanError::usage(format!("--{e}")))
}
