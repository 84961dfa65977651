//! `func`'s command line as clap definitions. Func's syntax is irregular —
//! `func SPEC COMMAND ...` where SPEC is any glob — so it is parsed in two
//! steps: [`FuncCli`] knows the commands that take no SPEC (`job_status`,
//! `jobs`, `batch`, `help`) and takes anything else as `SPEC ...` (clap's
//! external subcommand); [`SpecCli`] then parses what follows the SPEC
//! (`call`, `ping`, `list_minions`, `copyfile`, `grep`, `show`, `group`).
//! Global options ([`GlobalArgs`]) are accepted wherever they stand before
//! `--`: `func web1 -t 5 ping` and `func web1 call test ping -t 5` both set
//! the timeout. `call`'s words after MODULE METHOD are its arguments, except
//! known options (see `commands::call`), as Func had it.
//!
//! The same definitions make the man pages and shell completions
//! ([`docs_command`]).

use std::path::PathBuf;

use clap::{ArgAction, ArgGroup, Args, Parser, Subcommand};

/// Options of every `func` command.
#[derive(Args, Debug, Clone, Default)]
pub struct GlobalArgs {
    /// Read and write only below DIR (on the overlord: the certmaster's root); env FUNC_ROOT, default /.
    #[arg(long, global = true, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// Per-host timeout in seconds; also the deadline of --wait and of polling.
    #[arg(short = 't', long = "timeout", global = true, value_name = "SECS", value_parser = positive_secs)]
    pub timeout: Option<f64>,
    /// Leave out the minions this SPEC names.
    #[arg(short = 'e', long = "exclude", global = true, value_name = "SPEC")]
    pub exclude: Option<String>,
    /// Print one JSON document on stdout (short for --out json).
    #[arg(short = 'j', long, global = true)]
    pub json: bool,
    /// Output format of host results: json, yaml, txt (one `host: value` line per host), or
    /// xmlrpc (one XML-RPC methodResponse, every value with its XML-RPC type: for programs)
    #[arg(long, global = true, value_name = "FORMAT", value_parser = ["json", "yaml", "txt", "xmlrpc"])]
    pub out: Option<String>,
    /// Worker processes calling minions (default: the number of cores).
    #[arg(long, global = true, value_name = "N", value_parser = forks_count)]
    pub forks: Option<u16>,
    /// Say more on stderr: the hosts called and how (repeatable).
    #[arg(short = 'v', long, global = true, action = ArgAction::Count)]
    pub verbose: u8,
    /// Say less on stderr: no progress or informational lines (errors still).
    #[arg(short = 'q', long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,
    /// Only the minions whose facts satisfy every term: 'os=Debian,num_cpus>=2' (=, <, >, <=, >=, in, ini)
    #[arg(long, global = true, value_name = "TERMS")]
    pub filter: Option<String>,
    /// Only the minions whose facts satisfy at least one term: 'os=Debian,os=Ubuntu'
    #[arg(long, global = true, value_name = "TERMS")]
    pub filteror: Option<String>,
    /// Salt's grain target: only the minions whose fact KEY matches GLOB ('os_family:Debi*')
    #[arg(short = 'G', long = "grain", global = true, value_name = "KEY:GLOB")]
    pub grain: Option<String>,
    /// Func's serialized fact query as JSON ('["OR", [["role", "web"], ["role", "db"]]]'), as the Python API's filters send it
    #[arg(long, global = true, value_name = "JSON")]
    pub fact_query: Option<String>,
    /// Call the minions the delegation map (func-build-map) puts behind a relay through it
    #[arg(long, global = true)]
    pub delegate: bool,
    /// The delegation map to use instead of var/lib/func/map (with --delegate)
    #[arg(long, global = true, value_name = "FILE")]
    pub mapfile: Option<PathBuf>,
    /// Call the minions from this process (and from the drivers of its jobs) even when a func-api serves the root (which would call them over its kept connections)
    #[arg(long, global = true)]
    pub direct: bool,
}

impl GlobalArgs {
    /// Options given after the SPEC win over those given before it.
    pub fn merge(mut self, later: GlobalArgs) -> Self {
        self.root = later.root.or(self.root);
        self.timeout = later.timeout.or(self.timeout);
        self.exclude = later.exclude.or(self.exclude);
        self.json |= later.json;
        self.out = later.out.or(self.out);
        self.forks = later.forks.or(self.forks);
        self.verbose += later.verbose;
        self.quiet |= later.quiet;
        self.filter = later.filter.or(self.filter);
        self.filteror = later.filteror.or(self.filteror);
        self.grain = later.grain.or(self.grain);
        self.fact_query = later.fact_query.or(self.fact_query);
        self.delegate |= later.delegate;
        self.mapfile = later.mapfile.or(self.mapfile);
        self.direct |= later.direct;
        self
    }
}

fn positive_secs(v: &str) -> Result<f64, String> {
    overlord::settings::seconds(v, false)
}

/// `--forks N`, by the gate's rule and words.
fn forks_count(v: &str) -> Result<u16, String> {
    overlord::gate::call::forks(v)
        .map(|n| n as u16)
        .map_err(|e| e.to_string().trim_start_matches("forks ").to_string())
}

const SPEC_HELP: &str = "\
SPEC commands (func SPEC COMMAND ...; SPEC is a glob over minion names, ';' separates several, @group and @group:glob select from etc/func/groups):
  call          Call MODULE METHOD [ARGS...] on every minion (--async, --batch, ...)
  ping          Check that the minions answer
  list_minions  List the minions SPEC names
  copyfile      Copy a local file to the minions (-f LOCAL --remotepath PATH)
  grep          Search the minions' modules for a word
  show          Show hardware facts
  group         Manage groups in etc/func/groups

Examples:
  func '*' ping
  func 'web*;db1' call command run 'uptime'
  func '*' call --async --batch 25% test sleep 5
  func job_status JOB_ID --wait

'func SPEC COMMAND --help' (or 'func help COMMAND') describes one command.";

/// The Func overlord.
#[derive(Parser, Debug)]
#[command(
    name = "func",
    version,
    about = "Func overlord: run a method on many minions at once, now or as a background job",
    after_help = SPEC_HELP,
    subcommand_required = true,
    arg_required_else_help = true
)]
pub struct FuncCli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: TopCommand,
}

/// Commands that take no SPEC.
#[derive(Subcommand, Debug)]
pub enum TopCommand {
    /// Status of an async job: the hosts not finished yet are asked (or, while a func-api serves the root, followed by it), results recorded
    #[command(
        name = "job_status",
        after_help = "Exit status: 0 finished and every host succeeded; 1 finished with a failed host, or no such job; 3 not finished yet."
    )]
    JobStatus(JobStatusArgs),
    /// The overlord's async jobs: list, lookup, active, kill
    Jobs {
        #[command(subcommand)]
        command: crate::commands::jobs::Jobs,
    },
    /// Batches: list, status, stop, recover
    Batch {
        #[command(subcommand)]
        command: BatchCommand,
    },
    /// Schedules func-api runs: list, add, remove, enable, disable
    Schedule {
        #[command(subcommand)]
        command: ScheduleCommand,
    },
    /// The job store: status, import (a shared PostgreSQL store: [store] url)
    Store {
        #[command(subcommand)]
        command: StoreCommand,
    },
    /// For programs: one JSON request on stdin, one JSON answer on stdout
    Transmit,
    /// SPEC COMMAND [OPTIONS] [ARGS...] (see below)
    #[command(external_subcommand)]
    Spec(Vec<String>),
}

#[derive(Args, Debug)]
pub struct JobStatusArgs {
    /// The job id `func ... --async` printed
    #[arg(value_name = "JOB_ID")]
    pub id: String,
    /// Poll until every host has finished (deadline: -t)
    #[arg(short = 'w', long)]
    pub wait: bool,
}

#[derive(Subcommand, Debug)]
pub enum ScheduleCommand {
    /// Every schedule: when it runs next, its last run and how it ended
    List,
    /// Add a schedule: a call func-api runs at the times given
    #[command(
        after_help = "Examples:\n  func schedule add nightly-uptime --cron '0 3 * * *' 'web*' command run uptime\n  func schedule add ping-all --every 300 '*' test ping\n\nfunc-api runs the schedules (each run a job carrying \"schedule\": NAME)."
    )]
    Add(Box<ScheduleAddArgs>),
    /// Remove a schedule (its jobs stay)
    Remove {
        #[arg(value_name = "NAME")]
        name: String,
    },
    /// Let a schedule run again (the next run from now)
    Enable {
        #[arg(value_name = "NAME")]
        name: String,
    },
    /// Stop a schedule from running (it is kept)
    Disable {
        #[arg(value_name = "NAME")]
        name: String,
    },
}

#[derive(Args, Debug)]
#[command(group(clap::ArgGroup::new("when").required(true).args(["cron", "every"])))]
pub struct ScheduleAddArgs {
    /// 1 to 64 letters, digits, '-', '_', '.'
    #[arg(value_name = "NAME")]
    pub name: String,
    /// Five cron fields, minute hour day-of-month month day-of-week (local time)
    #[arg(long, value_name = "'m h dom mon dow'")]
    pub cron: Option<String>,
    /// Time between runs: seconds, or with a unit (90s, 5m, 2h, 1d), as --since takes
    #[arg(long, value_name = "SECS|5m", value_parser = interval)]
    pub every: Option<u64>,
    /// Added disabled (func schedule enable NAME starts it)
    #[arg(long)]
    pub disabled: bool,
    /// Tell notification target NAME ([notify.NAME] in overlord.conf) of each run's end (repeatable)
    #[arg(long, value_name = "NAME")]
    pub notify: Vec<String>,
    /// Hosts at a time (N or N%): each run is a batch
    #[arg(long, value_name = "N|N%")]
    pub batch: Option<String>,
    /// Seconds between a host's end and the next start (with --batch)
    #[arg(long, value_name = "SECS")]
    pub batch_wait: Option<String>,
    /// Stop a batch at the first failure
    #[arg(long)]
    pub failhard: bool,
    /// Seconds each host has
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<String>,
    /// Hosts left out (a SPEC)
    #[arg(short = 'e', long, value_name = "SPEC")]
    pub exclude: Option<String>,
    /// Only hosts whose facts hold every term (os=Debian,num_cpus>=2)
    #[arg(long, value_name = "TERMS")]
    pub filter: Option<String>,
    /// Only hosts whose facts hold at least one term
    #[arg(long, value_name = "TERMS")]
    pub filteror: Option<String>,
    /// Through relays where the delegation map says
    #[arg(long)]
    pub delegate: bool,
    /// Minions to call
    #[arg(value_name = "SPEC")]
    pub spec: String,
    #[arg(value_name = "MODULE")]
    pub module: String,
    #[arg(value_name = "METHOD")]
    pub method: String,
    /// Arguments, sent as strings (as func SPEC call sends them)
    #[arg(value_name = "ARGS", trailing_var_arg = true, allow_hyphen_values = true)]
    pub args: Vec<String>,
}

#[derive(Subcommand, Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreCommand {
    /// Which store (backend, location without password), its schema version and counts
    Status,
    /// Copy the local (redb) history into the configured shared store (idempotent)
    Import,
}

#[derive(Subcommand, Debug)]
pub enum BatchCommand {
    /// Every batch the store keeps
    List,
    /// One batch: its hosts and state
    Status {
        #[arg(value_name = "JOB_ID")]
        id: String,
        /// Stream its lifecycle events until it ends
        #[arg(long)]
        follow: bool,
    },
    /// Stop dispatching (hosts in flight finish)
    Stop {
        #[arg(value_name = "JOB_ID")]
        id: String,
        /// Also kill the jobs in flight
        #[arg(long)]
        kill: bool,
    },
    /// Resume batches whose driver is gone (or this one), without running any host twice
    Recover {
        #[arg(value_name = "JOB_ID")]
        id: Option<String>,
    },
}

/// What follows `func SPEC`.
#[derive(Parser, Debug)]
#[command(name = "func SPEC", subcommand_required = true, arg_required_else_help = true)]
pub struct SpecCli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: SpecCommand,
}

#[derive(Subcommand, Debug)]
pub enum SpecCommand {
    /// Call MODULE METHOD [ARGS...] on every minion SPEC names
    Call(CallArgs),
    /// Check that the minions answer
    Ping,
    /// List the minions SPEC names
    #[command(name = "list_minions")]
    ListMinions,
    /// Copy a local file to the minions
    Copyfile(CopyfileArgs),
    /// Search the minions' modules (system.grep) for WORD
    Grep {
        #[arg(value_name = "WORD")]
        word: String,
    },
    /// Show facts about the minions
    Show {
        /// What to show
        #[arg(value_parser = ["hardware"])]
        what: String,
        /// Only these keys
        #[arg(value_name = "KEYS")]
        keys: Vec<String>,
    },
    /// Manage groups in etc/func/groups (SPEC is not used)
    Group(GroupArgs),
}

/// `call`: options may stand before or after MODULE METHOD; `--` ends them.
#[derive(Args, Debug, Default)]
pub struct CallArgs {
    /// Run as a background job: print results as hosts finish (or only the id with --nopoll)
    #[arg(short = 'a', long = "async")]
    pub asynchronous: bool,
    /// With --async: print the job id and return at once
    #[arg(short = 'n', long)]
    pub nopoll: bool,
    /// Func's alias of `func job_status JOB_ID`: the one word is a job id
    #[arg(short = 's', long)]
    pub jobstatus: bool,
    /// At most N hosts (or P% of them) in flight at once
    #[arg(short = 'b', long, value_name = "N|P%")]
    pub batch: Option<String>,
    /// With --batch: seconds between a host's end and the next dispatch
    #[arg(long, value_name = "SECS")]
    pub batch_wait: Option<String>,
    /// With --batch: no new dispatches after the first failed host
    #[arg(long)]
    pub failhard: bool,
    /// The method's arguments as one JSON array, sent typed (numbers,
    /// booleans, null, lists, structs) instead of as strings: '["echo $FOO", {"FOO": "x"}]'
    #[arg(long, value_name = "JSON")]
    pub json_args: Option<String>,
    /// MODULE METHOD [ARGS...] (arguments go over the wire as strings); after
    /// MODULE METHOD only known options are options, `--` ends them
    #[arg(value_name = "MODULE METHOD [ARGS]", num_args = 0.., allow_hyphen_values = true)]
    pub words: Vec<String>,
}

#[derive(Args, Debug)]
pub struct CopyfileArgs {
    /// The local file
    #[arg(short = 'f', long = "file", value_name = "LOCAL")]
    pub file: PathBuf,
    /// Where to put it on the minions (an absolute path)
    #[arg(long, value_name = "PATH")]
    pub remotepath: String,
    /// Accepted for Func's CLI (copyfile always writes)
    #[arg(long, hide = true)]
    pub force: bool,
}

#[derive(Args, Debug)]
#[command(group(ArgGroup::new("action").required(true).args(["add_group", "remove_group", "list_all", "list_group", "add_host", "remove_host", "list_hosts"])))]
pub struct GroupArgs {
    /// Add groups (G[;G...])
    #[arg(long = "add_group", visible_alias = "ag", value_name = "GROUPS")]
    pub add_group: Option<String>,
    /// Remove groups
    #[arg(long = "remove_group", visible_alias = "rg", value_name = "GROUPS")]
    pub remove_group: Option<String>,
    /// List every group
    #[arg(long = "list_all", visible_alias = "la")]
    pub list_all: bool,
    /// List one group's members
    #[arg(long = "list_group", visible_alias = "lg", value_name = "GROUP")]
    pub list_group: Option<String>,
    /// Add hosts (@G:HOST[;...])
    #[arg(long = "add_host", visible_alias = "ah", value_name = "@G:HOST")]
    pub add_host: Option<String>,
    /// Remove hosts (@G:HOST[;...])
    #[arg(long = "remove_host", visible_alias = "rh", value_name = "@G:HOST")]
    pub remove_host: Option<String>,
    /// List a group's members that have signed certificates (@G[:GLOB])
    #[arg(long = "list_hosts", visible_alias = "lh", value_name = "@G[:GLOB]")]
    pub list_hosts: Option<String>,
}

/// " (did you mean --x?)" when `word` is close to one of `known`.
pub fn did_you_mean(word: &str, known: &[&str]) -> String {
    known
        .iter()
        .map(|k| (strsim::levenshtein(word, k), k))
        .filter(|(d, k)| *d <= 2.max(k.len() / 4))
        .min()
        .map(|(_, k)| format!(" (did you mean {k}?)"))
        .unwrap_or_default()
}

/// The first of `keys` that is not in `known`, as a message: the key
/// (shortened, never a whole request), the closest known key, and the
/// known ones. For request documents (`func transmit`, `func-transmit`).
pub fn unknown_key<'a>(mut keys: impl Iterator<Item = &'a String>, known: &[&str]) -> Option<String> {
    let unknown = keys.find(|k| !known.contains(&k.as_str()))?;
    let quoted: Vec<String> = known.iter().map(|k| format!("{k:?}")).collect();
    let quoted: Vec<&str> = quoted.iter().map(String::as_str).collect();
    Some(format!(
        "unknown key {:?}{}; known keys: {}",
        common::paths::shorten(unknown),
        did_you_mean(&format!("{unknown:?}"), &quoted),
        known.join(", ")
    ))
}

/// The names of the SPEC commands.
pub fn spec_commands() -> Vec<String> {
    <SpecCli as clap::CommandFactory>::command()
        .get_subcommands()
        .map(|c| c.get_name().to_string())
        .collect()
}

/// `func` as one clap command for man pages and completions: the commands
/// without a SPEC, and the SPEC commands as if they stood first.
pub fn docs_command() -> clap::Command {
    let mut func = <FuncCli as clap::CommandFactory>::command();
    for sub in <SpecCli as clap::CommandFactory>::command().get_subcommands() {
        func = func.subcommand(sub.clone().before_help("Used as: func SPEC COMMAND ..."));
    }
    func
}

/// Func's module for one of Salt's (`cmd.run` is `command.run`).
pub fn func_module_for_salt(module: &str) -> Option<&'static str> {
    match module {
        "cmd" => Some("command"),
        "ps" => Some("process"),
        "grains" => Some("fact"),
        "sys" => Some("system"),
        _ => None,
    }
}

/// Func's `MODULE METHOD` for Salt's `module.function` (Salt's grains are
/// Func's facts: `grains.items` is `fact items`, `grains.get` is `fact
/// call_fact`), the module renamed as [`func_module_for_salt`] says.
pub fn func_call_for_salt(module: &str, method: &str) -> (String, String) {
    match (module, method) {
        ("grains", "items" | "ls") => ("fact".into(), "items".into()),
        ("grains", "get" | "item") => ("fact".into(), "call_fact".into()),
        ("cmd", "run_all" | "run_stdout") => ("command".into(), "run".into()),
        _ => (
            func_module_for_salt(module).unwrap_or(module).to_string(),
            method.to_string(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn definitions_are_consistent() {
        <FuncCli as clap::CommandFactory>::command().debug_assert();
        <SpecCli as clap::CommandFactory>::command().debug_assert();
        docs_command().debug_assert();
        assert!(spec_commands().contains(&"list_minions".to_string()));
        assert_eq!(
            did_you_mean("--asynk", &["--async", "--nopoll"]),
            " (did you mean --async?)"
        );
        assert_eq!(did_you_mean("--zzz", &["--async"]), "");
    }
}

/// `--every`: whole seconds, or a number with a unit `s`, `m`, `h`, `d`.
fn interval(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let (number, unit) = match text.char_indices().last() {
        Some((at, c)) if c.is_ascii_alphabetic() => (&text[..at], c),
        _ => (text, 's'),
    };
    let unit = match unit {
        's' => 1,
        'm' => 60,
        'h' => 3600,
        'd' => 86_400,
        other => {
            return Err(format!(
                "unknown unit {other:?}: s, m, h or d (e.g. 90s, 5m, 2h, 1d)"
            ))
        }
    };
    let n: u64 = number
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is no interval: whole seconds, or 90s, 5m, 2h, 1d"))?;
    n.checked_mul(unit).ok_or_else(|| format!("{text:?} is too long"))
}

#[cfg(test)]
mod interval_tests {
    #[test]
    fn intervals_take_a_unit_as_since_does() {
        assert_eq!(super::interval("300"), Ok(300));
        assert_eq!(super::interval("5m"), Ok(300));
        assert_eq!(super::interval("2h"), Ok(7200));
        assert_eq!(super::interval("1d"), Ok(86_400));
        assert!(super::interval("5y").unwrap_err().contains("unit"));
        assert!(super::interval("m").is_err());
    }
}
