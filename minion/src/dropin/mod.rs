//! Drop-in modules: executables in `etc/func/modules.d/` (local) and
//! `usr/libexec/func/modules/` (packaged) below the root, one file = one
//! module, in any language (protocol: docs/MODULES.md).
//!
//! The directories are looked at again on every call that names a module
//! funcd does not have built in (and on `system.*` listings): a new,
//! changed or removed file is seen at once, without a restart. A file is
//! described (`EXE describe`) once per version (its [`trust::FileKey`]);
//! a refused or broken file is reported once in the log and always in
//! `system.module_status`, and never affects the other modules. A local
//! module overrides a packaged one of the same name; a built-in always wins.

pub mod describe;
pub mod exec;
pub mod json;
pub mod trust;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::config::{ConfigError, Ini};
use common::paths::Root;
use common::Value;

pub use describe::DropIn;
use exec::{Bounds, Ended, Group, RunError};

use crate::method::{MethodError, MethodResult};

/// Local drop-ins, below the root; they win over packaged ones.
pub const LOCAL_DIR: &str = "/etc/func/modules.d";
/// Packaged drop-ins, below the root.
pub const PACKAGED_DIR: &str = "/usr/libexec/func/modules";

/// The `[modules]` settings of minion.conf.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Default time a call may take (`timeout`, 60 s).
    pub timeout: Duration,
    /// Per module (`timeout.NAME`).
    pub timeouts: BTreeMap<String, Duration>,
    /// Time `describe` may take (`describe_timeout`, 10 s).
    pub describe_timeout: Duration,
    /// Bytes a module may print on stdout (`max_output`, 16 MiB).
    pub max_output: usize,
    /// Bytes a module may write to stderr (`max_stderr`, 1 MiB).
    pub max_stderr: usize,
    /// Values (numbers, strings, ...) a result may hold (`max_values`,
    /// 250,000): what bounds funcd's memory for a result, not its bytes.
    pub max_values: usize,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(60),
            timeouts: BTreeMap::new(),
            describe_timeout: Duration::from_secs(10),
            max_output: 16 << 20,
            max_stderr: 1 << 20,
            max_values: 250_000,
        }
    }
}

impl Settings {
    pub fn load(ini: &Ini) -> Result<Self, ConfigError> {
        let d = Self::default();
        let secs = |v: f64| Duration::from_secs_f64(v.clamp(0.05, 7.0 * 86_400.0));
        let mut timeouts = BTreeMap::new();
        if let Some(section) = ini.section("modules") {
            for key in section.keys() {
                if let Some(name) = key.strip_prefix("timeout.") {
                    if let Some(v) = ini.f64("modules", key)? {
                        timeouts.insert(name.to_string(), secs(v));
                    }
                }
            }
        }
        Ok(Self {
            timeout: ini.f64("modules", "timeout")?.map_or(d.timeout, secs),
            timeouts,
            describe_timeout: ini
                .f64("modules", "describe_timeout")?
                .map_or(d.describe_timeout, secs),
            max_output: ini
                .u64("modules", "max_output")?
                .map_or(d.max_output, |v| v.clamp(1024, 1 << 30) as usize),
            max_stderr: ini
                .u64("modules", "max_stderr")?
                .map_or(d.max_stderr, |v| v.clamp(1024, 1 << 30) as usize),
            max_values: ini
                .u64("modules", "max_values")?
                .map_or(d.max_values, |v| v.clamp(1, 100_000_000) as usize),
        })
    }

    /// The time `module`'s calls may take.
    pub fn timeout_of(&self, module: &str) -> Duration {
        self.timeouts
            .get(&module.to_ascii_lowercase())
            .copied()
            .unwrap_or(self.timeout)
    }
}

/// What became of one file in a modules directory.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    Loaded(Arc<DropIn>),
    /// Not run at all (unsafe, not a module name, not executable).
    Refused(String),
    /// Run, but `describe` failed.
    Broken(String),
}

/// One line of `system.module_status`.
#[derive(Debug, Clone, PartialEq)]
pub struct Status {
    /// The file or directory as an administrator names it.
    pub shown: String,
    pub module: String,
    /// `loaded`, `refused`, `broken`, `shadowed` (a built-in has the name)
    /// or `overridden` (a local module has the name).
    pub state: &'static str,
    pub detail: String,
}

/// The drop-ins as of one look at the directories.
#[derive(Debug, Default)]
pub struct Snapshot {
    pub modules: BTreeMap<String, Arc<DropIn>>,
    pub status: Vec<Status>,
}

/// The drop-in modules of one minion.
pub struct DropIns {
    root: Root,
    settings: Settings,
    group: Group,
    /// Built-in module names, which always win.
    builtins: Vec<String>,
    seen: Mutex<Seen>,
    /// Whether any module process was run.
    ran: std::sync::atomic::AtomicBool,
}

/// Most files looked at per directory (by name).
const MAX_FILES: usize = 10_000;

/// A file in a modules directory, as listed.
struct Candidate {
    name: String,
    path: PathBuf,
    shown: String,
    utf8: bool,
    key: trust::FileKey,
    meta: std::fs::Metadata,
}

/// What is wrong with a modules directory as a whole.
enum DirProblem {
    None,
    Refused(String),
    /// More than [`MAX_FILES`] files (how many).
    Partial(usize),
}

/// What the last look at the directories found.
#[derive(Default)]
struct Seen {
    /// Verdicts by file, with the version of the file they are about.
    files: BTreeMap<PathBuf, (trust::FileKey, Verdict)>,
    /// Why a directory was refused, as last logged.
    dirs: BTreeMap<&'static str, String>,
}

impl DropIns {
    /// `group`: [`Group::Own`] in the daemon, [`Group::Inherit`] in a job process.
    pub fn new(root: Root, settings: Settings, group: Group, builtins: Vec<String>) -> Self {
        Self {
            root,
            settings,
            group,
            builtins,
            seen: Mutex::new(Seen::default()),
            ran: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Looks at the directories again (describing new and changed files)
    /// and returns what is loaded now.
    pub fn refresh(&self) -> Snapshot {
        self.look(None)
    }

    /// The drop-in module `name` as of now; only its own files are looked
    /// at (and described if new), so a call never waits on other modules.
    pub fn find(&self, name: &str) -> Option<Arc<DropIn>> {
        self.look(Some(name)).modules.remove(name)
    }

    /// Why module `name` is not loaded, as `"; FILE is refused: why"`, or nothing.
    pub fn why_not_loaded(&self, name: &str) -> String {
        self.look(Some(name))
            .status
            .into_iter()
            .filter(|s| matches!(s.state, "refused" | "broken"))
            .map(|s| format!("; {} is {}: {}", s.shown, s.state, s.detail))
            .collect()
    }

    /// Whether a module process was run (the job runner then ends what is
    /// left in its process group).
    pub fn ran_any(&self) -> bool {
        self.ran.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// One look at both directories (or at the files named `only`): the
    /// listing and stats without the lock, descriptions of new files
    /// without the lock (a slow one holds up no one else), then the
    /// verdicts recorded and the snapshot built under it.
    fn look(&self, only: Option<&str>) -> Snapshot {
        if only.is_some_and(|name| !describe::is_module_name(name)) {
            // Never a path: nothing but a module name is joined to a directory.
            return Snapshot::default();
        }
        let (dirs, files) = self.list(only);
        let stale: Vec<usize> = {
            let seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
            files
                .iter()
                .enumerate()
                .filter(|(_, f)| seen.files.get(&f.path).is_none_or(|(k, _)| *k != f.key))
                .map(|(i, _)| i)
                .collect()
        };
        let judged: Vec<(usize, Verdict)> = stale.into_iter().map(|i| (i, self.judge(&files[i]))).collect();
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        for (i, v) in judged {
            let f = &files[i];
            if seen
                .files
                .get(&f.path)
                .is_none_or(|(k, old)| *k != f.key || *old != v)
            {
                log_verdict(&f.shown, &v, self.builtins.contains(&f.name));
            }
            seen.files.insert(f.path.clone(), (f.key, v));
        }
        let mut snap = Snapshot::default();
        for (shown_dir, problem) in dirs {
            match problem {
                DirProblem::Refused(why) => {
                    if seen.dirs.get(shown_dir) != Some(&why) {
                        tracing::warn!(path = shown_dir, "drop-in module directory refused: {why}");
                        seen.dirs.insert(shown_dir, why.clone());
                    }
                    snap.status.push(Status {
                        shown: shown_dir.to_string(),
                        module: String::new(),
                        state: "refused",
                        detail: why,
                    });
                }
                DirProblem::Partial(n) => snap.status.push(Status {
                    shown: shown_dir.to_string(),
                    module: String::new(),
                    state: "partial",
                    detail: format!("{n} files; only the first {MAX_FILES} by name are looked at"),
                }),
                DirProblem::None => {
                    if seen.dirs.remove(shown_dir).is_some() {
                        tracing::info!(path = shown_dir, "drop-in module directory accepted again");
                    }
                }
            }
        }
        for f in &files {
            let Some((_, verdict)) = seen.files.get(&f.path) else {
                continue;
            };
            let status = self.place(&mut snap.modules, &f.name, f.shown.clone(), verdict.clone());
            snap.status.push(status);
        }
        let present: std::collections::BTreeSet<&PathBuf> = files.iter().map(|f| &f.path).collect();
        seen.files.retain(|path, _| {
            let considered = match only {
                None => true,
                Some(name) => path.file_name().is_some_and(|n| n == name),
            };
            let keep = !considered || present.contains(path);
            if !keep {
                tracing::info!(path = %path.display(), "drop-in module removed");
            }
            keep
        });
        snap
    }

    /// The candidate files, local directory first, and what is wrong with
    /// each directory.
    fn list(&self, only: Option<&str>) -> (Vec<(&'static str, DirProblem)>, Vec<Candidate>) {
        let mut dirs = Vec::new();
        let mut files = Vec::new();
        for shown_dir in [LOCAL_DIR, PACKAGED_DIR] {
            let dir = self.root.join(shown_dir);
            match trust::dir_refusal(&dir) {
                Ok(false) => continue,
                Ok(true) => {}
                Err(why) => {
                    dirs.push((shown_dir, DirProblem::Refused(why)));
                    continue;
                }
            }
            let (names, total) = match only {
                Some(name) => (vec![std::ffi::OsString::from(name)], 1),
                None => entries(&dir),
            };
            dirs.push((
                shown_dir,
                if total > MAX_FILES {
                    DirProblem::Partial(total)
                } else {
                    DirProblem::None
                },
            ));
            for file in names {
                let path = dir.join(&file);
                let Ok(meta) = std::fs::symlink_metadata(&path) else {
                    continue;
                };
                let name = file.to_string_lossy().into_owned();
                files.push(Candidate {
                    shown: format!("{shown_dir}/{name}"),
                    utf8: file.to_str().is_some(),
                    key: trust::FileKey::of(&meta),
                    meta,
                    name,
                    path,
                });
            }
        }
        (dirs, files)
    }

    /// Where a file's verdict puts it: loaded, or why not.
    fn place(
        &self,
        modules: &mut BTreeMap<String, Arc<DropIn>>,
        name: &str,
        shown: String,
        verdict: Verdict,
    ) -> Status {
        let (state, detail) = match verdict {
            Verdict::Refused(why) => ("refused", why),
            Verdict::Broken(why) => ("broken", why),
            Verdict::Loaded(_) if self.builtins.iter().any(|b| b == name) => (
                "shadowed",
                format!("funcd has a built-in module {name}, which is the one called"),
            ),
            Verdict::Loaded(m) => match modules.get(name) {
                Some(winner) => ("overridden", format!("{} is the one called", winner.shown)),
                None => {
                    let version = match m.version.as_str() {
                        "" => "no version".to_string(),
                        v => format!("version {v}"),
                    };
                    let detail = format!("{version}, {} methods", m.methods.len());
                    modules.insert(name.to_string(), m);
                    ("loaded", detail)
                }
            },
        };
        Status {
            shown,
            module: name.to_string(),
            state,
            detail,
        }
    }

    /// The verdict on a file not judged in this version before.
    fn judge(&self, f: &Candidate) -> Verdict {
        let (name, path, shown) = (&f.name, &f.path, &f.shown);
        if !f.utf8 {
            return Verdict::Refused("the file name is not UTF-8".into());
        }
        if !describe::is_module_name(name) {
            return Verdict::Refused(
                "not a module name (lower-case letters, digits and _, at most 64)".into(),
            );
        }
        if let Some(why) = trust::file_refusal(&f.meta) {
            return Verdict::Refused(why);
        }
        let bounds = Bounds {
            timeout: self.settings.describe_timeout,
            max_stdout: self.settings.max_output.min(1 << 20),
            max_stderr: self.settings.max_stderr,
        };
        self.ran.store(true, std::sync::atomic::Ordering::Relaxed);
        match exec::run(self.command(path, &["describe"]), b"", bounds, self.group) {
            Ok(done) if done.ended == Ended::Exit(0) => {
                match describe::parse(name, path.to_path_buf(), shown.to_string(), &done.stdout) {
                    Ok(m) => Verdict::Loaded(Arc::new(m)),
                    Err(why) => Verdict::Broken(why),
                }
            }
            Ok(done) => Verdict::Broken(format!(
                "describe {}{}",
                ended_text(done.ended),
                tail_text(&done.stderr_tail)
            )),
            Err(e) => Verdict::Broken(format!("describe {e}{}", tail_text(e.stderr_tail()))),
        }
    }

    /// The command line of a module run: a clean environment, the root as
    /// working directory and in `FUNC_ROOT`.
    fn command(&self, path: &std::path::Path, args: &[&str]) -> std::process::Command {
        let mut cmd = std::process::Command::new(path);
        cmd.args(args)
            .env_clear()
            .env(
                "PATH",
                std::env::var_os("PATH")
                    .unwrap_or_else(|| "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".into()),
            )
            .env("LC_ALL", "C.UTF-8")
            .env(common::paths::ROOT_ENV, self.root.dir())
            .current_dir(self.root.dir());
        cmd
    }

    /// Runs `module.method(params)` for `caller`: the module is told its
    /// key (`<cn>-<hash>`) and whether it is the overlord's certificate (a
    /// minion may be named `overlord-1`: the key alone cannot say).
    pub fn call(
        &self,
        module: &DropIn,
        method: &str,
        params: &[Value],
        caller: &crate::acl::Caller,
    ) -> MethodResult {
        let input = serde_json::json!({
            "args": params.iter().map(json::to_json).collect::<Vec<_>>(),
            "caller": caller.key,
            "overlord": caller.overlord,
        });
        let input = serde_json::to_vec(&input).map_err(|e| MethodError::value(e.to_string()))?;
        let timeout = self.settings.timeout_of(&module.name);
        let bounds = Bounds {
            timeout,
            max_stdout: self.settings.max_output,
            max_stderr: self.settings.max_stderr,
        };
        let who = format!("module {} ({})", module.name, module.shown);
        let run = exec::run(
            self.command(&module.path, &["call", method]),
            &input,
            bounds,
            self.group,
        );
        let done = match run {
            Ok(done) => done,
            Err(e) => return Err(run_failure(&who, &module.name, method, e)),
        };
        // Parsed values cost far more memory than their text: counted first.
        if json::count_values(&done.stdout) > self.settings.max_values {
            return Err(MethodError {
                kind: "func.minion.ModuleOutputTooLarge".into(),
                message: format!(
                    "{who} printed a result of more than {} values in {method} (max_values in [modules] of minion.conf)",
                    self.settings.max_values
                ),
                detail: stderr_detail(&done.stderr_tail),
            });
        }
        let parsed = serde_json::from_slice::<serde_json::Value>(&done.stdout);
        let (reply, parse_error) = match parsed {
            Ok(serde_json::Value::Object(m)) => (Some(m), None),
            Ok(_) => (None, None),
            Err(e) => (None, Some(e)),
        };
        // A module's own error wins, whatever its exit status.
        if let Some(err) = reply.as_ref().and_then(|r| r.get("error")) {
            return Err(module_error(err));
        }
        if done.ended != Ended::Exit(0) {
            let kind = match done.ended {
                Ended::Signal(_) => "func.minion.ModuleCrashed",
                Ended::Exit(_) => "func.minion.ModuleExitStatus",
            };
            return Err(MethodError {
                kind: kind.into(),
                message: format!("{who} {} in {method}", ended_text(done.ended)),
                detail: stderr_detail(&done.stderr_tail),
            });
        }
        let garbage = |why: String| MethodError {
            kind: "func.minion.ModuleOutputInvalid".into(),
            message: format!("{who} printed {why} in {method}"),
            detail: stderr_detail(&done.stderr_tail),
        };
        match reply.as_ref().and_then(|r| r.get("result")) {
            Some(v) => {
                json::from_json(v).map_err(|e| garbage(format!("a result XML-RPC cannot carry ({e})")))
            }
            None if reply.is_some() => Err(garbage(
                "a JSON object with neither \"result\" nor \"error\"".into(),
            )),
            None => Err(garbage(match parse_error {
                Some(e) if !done.stdout.is_empty() => {
                    format!("output that is not JSON ({e}; {})", preview(&done.stdout))
                }
                _ => format!("output that is not a JSON object ({})", preview(&done.stdout)),
            })),
        }
    }
}

/// The first [`MAX_FILES`] file names in `dir` by name, and how many there
/// are: hidden files (such as copyfile's temporary ones) are not looked at.
fn entries(dir: &std::path::Path) -> (Vec<std::ffi::OsString>, usize) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return (Vec::new(), 0);
    };
    let mut names: Vec<std::ffi::OsString> = rd
        .filter_map(Result::ok)
        .map(|e| e.file_name())
        .filter(|n| !n.as_encoded_bytes().starts_with(b"."))
        .take(1_000_000)
        .collect();
    let total = names.len();
    names.sort();
    names.truncate(MAX_FILES);
    (names, total)
}

fn log_verdict(shown: &str, v: &Verdict, shadowed: bool) {
    match v {
        Verdict::Loaded(m) if shadowed => tracing::warn!(
            path = shown,
            "drop-in module {} is not used: funcd has a built-in module of that name",
            m.name
        ),
        Verdict::Loaded(m) => {
            tracing::info!(path = shown, version = %m.version, "drop-in module {} loaded", m.name)
        }
        Verdict::Refused(why) => tracing::warn!(path = shown, "drop-in module refused: {why}"),
        Verdict::Broken(why) => tracing::warn!(path = shown, "drop-in module broken: {why}"),
    }
}

/// The error of a run that did not end by itself.
fn run_failure(who: &str, module: &str, method: &str, e: RunError) -> MethodError {
    let detail = stderr_detail(e.stderr_tail());
    let (kind, message) = match &e {
        RunError::Timeout(t, _) => (
            "func.minion.ModuleTimeout",
            format!(
                "{who} did not finish {method} within {} s (timeout.{module} in [modules] of minion.conf); \
                 it and its children were killed",
                t.as_secs_f64()
            ),
        ),
        RunError::StdoutTooLarge(n, _) => (
            "func.minion.ModuleOutputTooLarge",
            format!("{who} printed more than {n} bytes in {method} (max_output in [modules] of minion.conf); killed"),
        ),
        RunError::StderrFlood(n, _) => (
            "func.minion.ModuleStderrFlood",
            format!(
                "{who} wrote more than {n} bytes to stderr in {method} (max_stderr in [modules] of minion.conf); killed"
            ),
        ),
        RunError::Spawn(err) => ("func.minion.ModuleError", format!("{who} cannot start: {err}")),
        RunError::Io(err) => ("func.minion.ModuleError", format!("{who}: reading its output: {err}")),
    };
    MethodError {
        kind: kind.into(),
        message,
        detail,
    }
}

/// The `{"type", "message", "detail"}` a module reported.
fn module_error(err: &serde_json::Value) -> MethodError {
    let field = |k: &str| match err.get(k) {
        Some(serde_json::Value::String(s)) => Some(s.clone()),
        Some(serde_json::Value::Null) | None => None,
        Some(other) => Some(other.to_string()),
    };
    match err {
        serde_json::Value::Object(_) => MethodError {
            kind: field("type").unwrap_or_else(|| "exceptions.Exception".into()),
            message: field("message").unwrap_or_default(),
            detail: field("detail").unwrap_or_default(),
        },
        serde_json::Value::String(s) => MethodError::new("exceptions.Exception", s.clone()),
        other => MethodError::new("exceptions.Exception", other.to_string()),
    }
}

fn ended_text(ended: Ended) -> String {
    match ended {
        Ended::Exit(code) => format!("exited with status {code}"),
        Ended::Signal(sig) => {
            let name = nix::sys::signal::Signal::try_from(sig).map_or("?", |s| s.as_str());
            format!("crashed (killed by signal {sig}, {name})")
        }
    }
}

/// The end of what a module wrote to stderr, for an error's detail.
fn stderr_detail(tail: &[u8]) -> String {
    String::from_utf8_lossy(tail).trim().to_string()
}

/// `": <the end of stderr>"`, or nothing.
fn tail_text(tail: &[u8]) -> String {
    match stderr_detail(tail) {
        t if t.is_empty() => t,
        t => format!(": {t}"),
    }
}

/// The start of some output, for an error message.
fn preview(out: &[u8]) -> String {
    if out.is_empty() {
        return "nothing".into();
    }
    let text = String::from_utf8_lossy(&out[..out.len().min(120)]);
    format!("{:?}{}", text, if out.len() > 120 { "…" } else { "" })
}
