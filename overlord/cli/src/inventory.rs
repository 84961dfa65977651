//! `func-inventory` (Func's program, DESIGN §16): asks every minion a SPEC
//! names for the methods chosen (`--methods`, default `inventory` as in
//! Func: the modules that have one — hardware, service — give what stays
//! put from run to run, so a commit shows a change; of the
//! modules chosen, `--modules`, default all), writes each answer to
//! `TREE/HOST/MODULE/METHOD` (default tree: `var/lib/func/inventory` below
//! the root) and commits the run's changes to git, so `git log -p` shows
//! what changed on which host and when. A host that cannot be asked, or a
//! method that fails, is reported and keeps its last inventory (its files
//! are not touched); the exit status is then 1. Names a minion gives are
//! data: a module or method name that is not a plain file name is skipped
//! and said, never used as a path. Files are 0600 in 0700 directories,
//! written whole (temp + rename) and never through a link.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use clap::Parser;
use common::paths::Root;
use common::Value;

use crate::display::output::Format;
use overlord::plan::{Plan, PlanError};

#[derive(Parser, Debug)]
#[command(
    name = "func-inventory",
    version,
    about = "Func's inventory: the minions' answers to chosen methods as files in a git tree (git log -p shows what changed where)",
    after_help = "Exit status: 0 every host answered every method; 1 a host or a method failed (its last inventory is kept), or the tree could not be written; 2 a usage error."
)]
pub struct Cli {
    /// Read and write only below DIR (the certmaster's root); env FUNC_ROOT, default /
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// The minions to inventory (a SPEC: globs, ';', @group)
    #[arg(short = 's', long = "server-spec", value_name = "SPEC", default_value = "*")]
    pub server_spec: String,
    /// Methods to call, comma-separated, or all (every method, called without arguments, as Func did)
    #[arg(short = 'm', long, value_name = "NAMES", default_value = "inventory")]
    pub methods: String,
    /// Modules whose methods are called, comma-separated, or all
    #[arg(short = 'M', long, value_name = "NAMES", default_value = "all")]
    pub modules: String,
    /// Where the tree is (default: var/lib/func/inventory below the root)
    #[arg(short = 't', long, value_name = "DIR")]
    pub tree: Option<PathBuf>,
    /// Only write the files; no git repository, no commits
    #[arg(short = 'n', long = "no-git")]
    pub no_git: bool,
    /// Write each answer as JSON (default: YAML, as func --out yaml)
    #[arg(long, conflicts_with = "xmlrpc")]
    pub json: bool,
    /// Write each answer as an XML-RPC methodResponse (every type kept)
    #[arg(long)]
    pub xmlrpc: bool,
    /// Say each host, module and method on stderr
    #[arg(short = 'v', long)]
    pub verbose: bool,
    /// Most bytes one host's answers may take in a run: a host over it fails and keeps its last inventory
    #[arg(long, value_name = "BYTES", default_value_t = 16 << 20, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_host_bytes: u64,
    /// Most bytes a whole run may write: a host that would pass it fails and keeps its last inventory
    #[arg(long, value_name = "BYTES", default_value_t = 512 << 20, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_run_bytes: u64,
}

/// Why a run could not be done at all.
#[derive(Debug, thiserror::Error)]
pub enum InventoryError {
    #[error(transparent)]
    Plan(#[from] PlanError),
    #[error("{}: {source}", path.display())]
    File {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("git: {0} (install git, or use --no-git)")]
    Git(String),
}

/// What one run did.
#[derive(Debug, Default)]
pub struct Outcome {
    pub hosts: usize,
    pub written: usize,
    pub failures: usize,
    /// The commit made (none when nothing changed, or with --no-git).
    pub commit: Option<String>,
}

/// `func-inventory`'s main.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    match run(&cli) {
        Ok(done) => {
            overlord::outln!(
                "func-inventory: {} host(s), {} file(s) written{}{}",
                done.hosts,
                done.written,
                match &done.commit {
                    Some(c) => format!(", committed {c}"),
                    None => String::new(),
                },
                match done.failures {
                    0 => String::new(),
                    n => format!(", {n} failure(s): their last inventory is kept"),
                }
            );
            ExitCode::from(u8::from(done.failures > 0))
        }
        Err(e) => {
            overlord::errln!("func-inventory: {e}");
            ExitCode::from(match &e {
                InventoryError::Plan(p) => p.exit_code() as u8,
                _ => 1,
            })
        }
    }
}

/// A module or method name a minion gave, usable as one path component.
/// Methods looked at per host, and bytes of one answer written.
const MAX_METHODS: usize = 1000;
const MAX_FILE: usize = 16 << 20;

/// The answers held for writing, within a budget per host and per run.
struct Budget {
    per_host: u64,
    per_run: u64,
    total: u64,
    /// Host → (module.method → the file's text); a failed host has none.
    held: BTreeMap<String, Vec<(String, String)>>,
    host_bytes: BTreeMap<String, u64>,
    over: BTreeSet<String>,
}

impl Budget {
    fn new(per_host: u64, per_run: u64) -> Self {
        Budget {
            per_host,
            per_run,
            total: 0,
            held: BTreeMap::new(),
            host_bytes: BTreeMap::new(),
            over: BTreeSet::new(),
        }
    }

    /// Holds `host`'s answer to `full`; why not when the host (now, or
    /// already) is over a budget: then nothing of it is written.
    fn take(&mut self, host: &str, full: &str, text: String) -> Option<String> {
        if self.over.contains(host) {
            return None; // said once, when it went over
        }
        let len = text.len() as u64;
        let mine = self.host_bytes.get(host).copied().unwrap_or(0) + len;
        let why = if mine > self.per_host {
            Some(format!(
                "its answers pass {} bytes with {full} (--max-host-bytes)",
                self.per_host
            ))
        } else if self.total + len > self.per_run {
            Some(format!(
                "the run's answers would pass {} bytes with its {full} (--max-run-bytes)",
                self.per_run
            ))
        } else {
            None
        };
        if why.is_some() {
            self.over.insert(host.to_string());
            self.total -= self.host_bytes.remove(host).unwrap_or(0);
            self.held.remove(host);
            return why;
        }
        self.total += len;
        self.host_bytes.insert(host.to_string(), mine);
        self.held
            .entry(host.to_string())
            .or_default()
            .push((full.to_string(), text));
        None
    }
}

fn plain_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 128
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b))
}

fn chosen(list: &str) -> Option<BTreeSet<String>> {
    let names: BTreeSet<String> = list
        .split(',')
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(str::to_string)
        .collect();
    (!names.contains("all")).then_some(names)
}

/// One run.
pub fn run(cli: &Cli) -> Result<Outcome, InventoryError> {
    let root = Root::new(
        cli.root
            .clone()
            .or_else(|| std::env::var_os(common::paths::ROOT_ENV).map(PathBuf::from))
            .unwrap_or_else(|| "/".into()),
    );
    let tree = cli
        .tree
        .clone()
        .unwrap_or_else(|| root.join("var/lib/func/inventory"));
    let format = match (cli.json, cli.xmlrpc) {
        (true, _) => Format::Json,
        (_, true) => Format::Xmlrpc,
        _ => Format::Yaml,
    };
    let say = |line: &str| {
        if cli.verbose {
            overlord::errln!("{line}");
        }
    };
    let plan = Plan::for_program(root, &cli.server_spec, None, None)?;
    let targets = plan.targets()?;
    prepare_tree(&tree)?;
    if !cli.no_git {
        git_init(&tree)?;
    }
    let mut done = Outcome {
        hosts: targets.len(),
        ..Outcome::default()
    };
    // What each host has: one system.list_methods each.
    let list = overlord::calling::call_action("system.list_methods", Vec::new())?;
    let listed = overlord::calling::dispatch_to(&plan, &targets, &list, |_, _| {})?;
    let chosen = Chosen {
        modules: chosen(&cli.modules),
        methods: chosen(&cli.methods),
    };
    let wanted = chosen.wanted(&listed, &say, &mut done);
    // Methods no host has (a typo: `-m bogus`) are said, and a run that
    // finds nothing to call is no success.
    let answered = listed.len().saturating_sub(done.failures);
    if answered > 0 {
        chosen.say_absent(&wanted, &cli.modules, &mut done);
    }
    // Each host's answers are held until all are in and written only if
    // they fit its budget and the run's: a rogue minion's flood fails that
    // host (its last inventory kept), never fills the tree or git.
    let mut budget = Budget::new(cli.max_host_bytes, cli.max_run_bytes);
    for (full, hosts) in &wanted {
        say(&format!("-- {full} on {} host(s)", hosts.len()));
        let on: Vec<_> = targets
            .iter()
            .filter(|t| hosts.contains(&t.name))
            .cloned()
            .collect();
        let action = overlord::calling::call_action(full, Vec::new())?;
        let answers = overlord::calling::dispatch_to(&plan, &on, &action, |_, _| {})?;
        for (host, value) in answers {
            hold(&mut budget, &host, full, value, format, &mut done);
        }
    }
    write_held(&tree, budget, &mut done);
    if !cli.no_git {
        let hosts: Vec<String> = targets.iter().map(|t| t.name.clone()).collect();
        done.commit = git_commit(&tree, &hosts)?;
    }
    Ok(done)
}

/// A private directory at `path` (made 0700 if new).
fn private(path: &Path) -> Result<(), InventoryError> {
    common::private::private_dir(path).map_err(|source| InventoryError::File {
        path: path.to_path_buf(),
        source,
    })
}

/// An existing tree is used as it is (its mode is the owner's); a new one
/// is made private. A link in its place is refused either way.
fn prepare_tree(tree: &Path) -> Result<(), InventoryError> {
    match std::fs::symlink_metadata(tree) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(_) => Err(InventoryError::File {
            path: tree.to_path_buf(),
            source: std::io::Error::other("not a directory (a link or a file): refused"),
        }),
        Err(_) => private(tree),
    }
}

/// The modules and methods `-M` and `-m` chose (`None`: all).
struct Chosen {
    modules: Option<BTreeSet<String>>,
    methods: Option<BTreeSet<String>>,
}

impl Chosen {
    /// Which hosts to ask each chosen method of (`module.method` → hosts),
    /// from each host's `system.list_methods` answer; a host that could not
    /// list its methods fails (its last inventory kept).
    fn wanted(
        &self,
        listed: &BTreeMap<String, Value>,
        say: &dyn Fn(&str),
        done: &mut Outcome,
    ) -> BTreeMap<String, BTreeSet<String>> {
        let mut wanted: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (host, answer) in listed {
            let names = match answer {
                Value::Array(names) if !common::xmlrpc::is_remote_error(answer) => names,
                _ => {
                    overlord::errln!(
                        "{host}: cannot list its methods ({}): its last inventory is kept",
                        crate::display::output::error_line(answer)
                    );
                    done.failures += 1;
                    continue;
                }
            };
            say(&format!("- {host}: connected"));
            if names.len() > MAX_METHODS {
                overlord::errln!(
                    "{host}: lists {} methods; only the first {MAX_METHODS} are looked at",
                    names.len()
                );
                done.failures += 1;
            }
            for name in names.iter().take(MAX_METHODS) {
                if let Value::String(full) = name {
                    if self.takes(host, full) {
                        wanted.entry(full.clone()).or_default().insert(host.clone());
                    }
                }
            }
        }
        wanted
    }

    /// Whether `full` (a method `host` listed) is one to inventory.
    fn takes(&self, host: &str, full: &str) -> bool {
        let Some((module, method)) = full.rsplit_once('.') else {
            return false;
        };
        if module == "system" && full != "system.inventory" && self.methods.is_none() {
            return false; // system.listMethods and the like describe, they inventory nothing
        }
        let take = self.modules.as_ref().is_none_or(|m| m.contains(module))
            && self.methods.as_ref().is_none_or(|m| m.contains(method));
        if take && (!plain_name(module) || !plain_name(method)) {
            overlord::errln!(
                "{host}: skipped {:?}: not a plain name, never used as a path",
                common::paths::shorten(full)
            );
            return false;
        }
        take
    }

    /// Says which methods `-m` named that no host has (in the modules
    /// chosen); a run left with nothing to call fails.
    fn say_absent(&self, wanted: &BTreeMap<String, BTreeSet<String>>, modules: &str, done: &mut Outcome) {
        let Some(asked) = &self.methods else { return };
        let found: BTreeSet<&str> = wanted
            .keys()
            .filter_map(|f| f.rsplit_once('.'))
            .map(|(_, m)| m)
            .collect();
        let absent: Vec<&str> = asked
            .iter()
            .map(String::as_str)
            .filter(|m| !found.contains(m))
            .collect();
        if !absent.is_empty() {
            overlord::errln!(
                "func-inventory: no host has a method {} in the modules chosen ({modules})",
                absent.join(", ")
            );
            done.failures += usize::from(wanted.is_empty());
        }
    }
}

/// Holds `host`'s answer to `full` for writing, if it succeeded and fits
/// (the file limit, the host's and the run's budgets); else the host fails
/// and keeps its last answer.
fn hold(budget: &mut Budget, host: &str, full: &str, value: Value, format: Format, done: &mut Outcome) {
    if !overlord::status::all_ok(full, &BTreeMap::from([(host.to_string(), value.clone())])) {
        overlord::errln!(
            "{host}: {full} failed ({}): its last answer is kept",
            crate::display::output::error_line(&value)
        );
        done.failures += 1;
        return;
    }
    let text = match format {
        Format::Xmlrpc => crate::display::output::xmlrpc(value),
        other => crate::display::output::doc_as(other, &overlord::values::to_json(&value)),
    };
    if text.len() > MAX_FILE {
        overlord::errln!(
            "{host}: {full} answered {} bytes, over {MAX_FILE}: its last answer is kept",
            text.len()
        );
        done.failures += 1;
        return;
    }
    if let Some(why) = budget.take(host, full, format!("{}\n", text.trim_end())) {
        overlord::errln!("{host}: {why}: its last inventory is kept");
        done.failures += 1;
    }
}

/// Writes what the budget held, one file per host and method. A host's
/// directories are checked (a link planted in the tree is refused, never
/// followed); a bad one fails that host only.
fn write_held(tree: &Path, budget: Budget, done: &mut Outcome) {
    for (host, answers) in budget.held {
        for (full, text) in answers {
            let (module, method) = full.rsplit_once('.').unwrap_or((&full, ""));
            let dir = tree.join(&host).join(module);
            let path = dir.join(method);
            let written = private(&tree.join(&host))
                .and_then(|()| private(&dir))
                .and_then(|()| {
                    common::private::write(&path, text.as_bytes(), true).map_err(|source| {
                        InventoryError::File {
                            path: path.clone(),
                            source,
                        }
                    })
                });
            match written {
                Ok(()) => done.written += 1,
                Err(e) => {
                    overlord::errln!("{host}: {e}: its last inventory is kept");
                    done.failures += 1;
                }
            }
        }
    }
}

fn git(tree: &Path, args: &[&str]) -> Result<std::process::Output, InventoryError> {
    Command::new("git")
        .current_dir(tree)
        .args([
            "-c",
            "user.name=func-inventory",
            "-c",
            "user.email=func-inventory@localhost",
        ])
        .args(args)
        .env("GIT_TERMINAL_PROMPT", "0")
        .output()
        .map_err(|e| InventoryError::Git(format!("cannot run git: {e}")))
        .and_then(|out| match out.status.success() {
            true => Ok(out),
            false => Err(InventoryError::Git(format!(
                "git {} failed: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            ))),
        })
}

fn git_init(tree: &Path) -> Result<(), InventoryError> {
    if tree.join(".git").is_dir() {
        return Ok(());
    }
    git(tree, &["init", "-q"]).map(|_| ())
}

/// Commits what changed below the hosts' directories (nothing else in the
/// tree: a tree of the user's own keeps its other files out of our
/// commits); the commit's short id (none when nothing did).
fn git_commit(tree: &Path, hosts: &[String]) -> Result<Option<String>, InventoryError> {
    let present: Vec<&str> = hosts
        .iter()
        .filter(|h| std::fs::symlink_metadata(tree.join(h.as_str())).is_ok_and(|m| m.is_dir()))
        .map(String::as_str)
        .collect();
    if present.is_empty() {
        return Ok(None);
    }
    let with_paths = |args: &[&str]| -> Vec<String> {
        args.iter()
            .map(|a| a.to_string())
            .chain(std::iter::once("--".to_string()))
            .chain(present.iter().map(|h| h.to_string()))
            .collect()
    };
    let run = |args: Vec<String>| git(tree, &args.iter().map(String::as_str).collect::<Vec<_>>());
    run(with_paths(&["add", "-A"]))?;
    let changed = run(with_paths(&["status", "--porcelain"]))?;
    if changed.stdout.is_empty() {
        return Ok(None);
    }
    let hosts = present.len();
    let when = overlord::store::when::show(overlord::store::now());
    let message = format!("func-inventory: {hosts} host(s), {when}");
    run(with_paths(&["commit", "-q", "-m", &message]))?;
    let head = git(tree, &["rev-parse", "--short", "HEAD"])?;
    Ok(Some(String::from_utf8_lossy(&head.stdout).trim().to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_over_its_budget_or_the_runs_is_written_not_at_all() {
        let mut b = Budget::new(100, 250);
        assert!(b.take("m1", "a.info", "x".repeat(60)).is_none());
        let why = b.take("m1", "b.info", "x".repeat(60)).unwrap();
        assert!(why.contains("--max-host-bytes"), "{why}");
        assert!(b.take("m1", "c.info", "x".into()).is_none(), "said once");
        assert!(!b.held.contains_key("m1"), "nothing of m1 is written");
        assert!(b.take("m2", "a.info", "x".repeat(100)).is_none());
        assert!(b.take("m3", "a.info", "x".repeat(100)).is_none());
        let why = b.take("m4", "a.info", "x".repeat(60)).unwrap();
        assert!(why.contains("--max-run-bytes"), "{why}");
        assert_eq!(b.held.keys().collect::<Vec<_>>(), ["m2", "m3"]);
        assert_eq!(b.total, 200);
    }

    #[test]
    fn only_plain_names_become_paths() {
        for ok in ["hardware", "info", "a.b", "get_method_args", "x-1"] {
            assert!(plain_name(ok), "{ok}");
        }
        for bad in ["", ".", "..", "../etc", "a/b", ".git", "a b", "é"] {
            assert!(!plain_name(bad), "{bad}");
        }
        assert_eq!(chosen("all"), None);
        assert_eq!(
            chosen("info, inventory"),
            Some(["info".to_string(), "inventory".to_string()].into())
        );
    }
}
