//! The module framework: a [`Module`] answers its own methods; the
//! [`Registry`] adds Func's five per-module methods (`module_version`,
//! `module_api_version`, `module_description`, `list_methods`,
//! `get_method_args`) and resolves `module.method` names, dotted submodules
//! included (the module is everything before the last dot).

pub mod command;
pub mod copyfile;
pub mod hardware;
pub mod jobs;
pub mod process;
pub mod service;
pub mod system;
pub mod test;

use std::collections::BTreeMap;

use common::paths::Root;
use common::xmlrpc::args::{ArgError, Args};
use common::xmlrpc::remote_error;
use common::Value;

/// Python-style exception type for an unknown method, as Func reports it.
pub const INVALID_METHOD: &str = "func.minion.codes.InvalidMethodException";

/// Func's per-module methods, answered by the registry for every module.
pub const BASE_METHODS: [&str; 5] = [
    "module_version",
    "module_api_version",
    "module_description",
    "list_methods",
    "get_method_args",
];

/// A method's failure, returned to the caller as a `REMOTE_ERROR` list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MethodError {
    pub kind: String,
    pub message: String,
    pub detail: String,
}

impl MethodError {
    pub fn new(kind: &str, message: impl Into<String>) -> Self {
        Self {
            kind: kind.to_string(),
            message: message.into(),
            detail: String::new(),
        }
    }

    /// An I/O or OS failure.
    pub fn os(message: impl Into<String>) -> Self {
        Self::new("OSError", message)
    }

    /// A refused or invalid input value.
    pub fn value(message: impl Into<String>) -> Self {
        Self::new("ValueError", message)
    }

    pub fn into_value(self) -> Value {
        remote_error(&self.kind, &self.message, &self.detail)
    }
}

impl From<ArgError> for MethodError {
    fn from(e: ArgError) -> Self {
        Self::new(e.kind, e.message)
    }
}

pub type MethodResult = Result<Value, MethodError>;

/// One argument of a method, for `get_method_args`.
pub struct ArgInfo {
    pub name: &'static str,
    pub kind: &'static str,
    pub optional: bool,
    pub description: &'static str,
}

/// One method of a module.
pub struct MethodInfo {
    pub name: &'static str,
    pub description: &'static str,
    pub args: &'static [ArgInfo],
}

/// What a module may use while it runs.
pub struct Context<'a> {
    /// The minion's `--root`; modules that touch files stay below it.
    pub root: &'a Root,
    /// Directories (absolute, below the root) that `copyfile` may write.
    pub copyfile_dirs: &'a [String],
    /// All modules, for `system.*`.
    pub registry: &'a Registry,
    /// The daemon's job table; `None` inside an async job process.
    pub jobs: Option<&'a crate::jobs::Jobs>,
    /// Who called: jobs belong to it, aggregate methods run only what it may call.
    pub caller: &'a crate::acl::Caller,
    /// The minion's ACLs.
    pub acl: &'a crate::acl::Acl,
}

impl Context<'_> {
    /// Whether the caller may call `method` (`module.method`): aggregate
    /// methods (`system.grep`) run only what their caller could call itself.
    pub fn may_call(&self, method: &str) -> bool {
        self.acl.allows(self.caller, method)
    }
}

/// A Func module: one file under `modules/`.
pub trait Module: Send + Sync {
    fn name(&self) -> &'static str;
    fn description(&self) -> &'static str;
    fn version(&self) -> &'static str {
        env!("CARGO_PKG_VERSION")
    }
    fn api_version(&self) -> &'static str {
        "0.0.1"
    }
    /// The module's own methods (not the five base ones).
    fn methods(&self) -> &'static [MethodInfo];
    /// Runs `method`, which is one of [`Module::methods`]. Called on a blocking
    /// thread: modules may block.
    fn call(&self, ctx: &Context<'_>, method: &str, args: Args<'_>) -> MethodResult;
    /// Whether `method` answers at once (no I/O, no waiting, bounded work):
    /// such calls run on the connection's own thread instead of a blocking
    /// one, which saves two thread hand-offs per call.
    fn is_instant(&self, _method: &str) -> bool {
        false
    }
    /// How `method`'s results tell failure from success (beyond a
    /// `REMOTE_ERROR`); the overlord judges by `common::outcome::rule`,
    /// which must say the same (a unit test checks it).
    fn result_rule(&self, _method: &str) -> common::outcome::ResultRule {
        common::outcome::ResultRule::Value
    }
}

/// All modules of this minion, by name.
pub struct Registry {
    modules: BTreeMap<&'static str, Box<dyn Module>>,
}

impl Registry {
    /// The modules shipped with funcd.
    pub fn standard() -> Self {
        let list: Vec<Box<dyn Module>> = vec![
            Box::new(command::Command),
            Box::new(copyfile::CopyFile),
            Box::new(hardware::Hardware),
            Box::new(jobs::JobsModule),
            Box::new(process::Process),
            Box::new(service::Service),
            Box::new(system::System),
            Box::new(test::Test),
        ];
        Self {
            modules: list.into_iter().map(|m| (m.name(), m)).collect(),
        }
    }

    pub fn modules(&self) -> impl Iterator<Item = &dyn Module> {
        self.modules.values().map(|m| m.as_ref())
    }

    pub fn module(&self, name: &str) -> Option<&dyn Module> {
        self.modules.get(name).map(|m| m.as_ref())
    }

    /// Unqualified method names of a module, its own then the base ones
    /// (a module's own method of the same name wins, as `system.list_methods`).
    pub fn method_names(module: &dyn Module) -> Vec<&'static str> {
        let own: Vec<&'static str> = module.methods().iter().map(|m| m.name).collect();
        let base = BASE_METHODS.into_iter().filter(|b| !own.contains(b));
        own.iter().copied().chain(base).collect()
    }

    /// Every `module.method` name, sorted.
    pub fn qualified_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .modules()
            .flat_map(|m| {
                Self::method_names(m)
                    .into_iter()
                    .map(move |meth| format!("{}.{meth}", m.name()))
            })
            .collect();
        names.sort();
        names
    }

    /// Whether `qualified` names a method that exists.
    pub fn exists(&self, qualified: &str) -> bool {
        self.resolve(qualified).is_some()
    }

    fn resolve<'a>(&'a self, qualified: &'a str) -> Option<(&'a dyn Module, &'a str)> {
        let (module, method) = qualified.rsplit_once('.')?;
        let module = self.module(module)?;
        Self::method_names(module)
            .contains(&method)
            .then_some((module, method))
    }

    /// Whether a call of `qualified` answers at once: the five base methods,
    /// a module's instant methods, and unknown methods (an error value).
    pub fn is_instant(&self, qualified: &str) -> bool {
        match self.resolve(qualified) {
            None => true,
            Some((module, method)) => {
                !module.methods().iter().any(|m| m.name == method) || module.is_instant(method)
            }
        }
    }

    /// Runs `qualified` (`module.method`). Unknown methods are a
    /// `REMOTE_ERROR`, as in Func.
    pub fn call(&self, ctx: &Context<'_>, qualified: &str, params: &[Value]) -> MethodResult {
        let Some((module, method)) = self.resolve(qualified) else {
            return Err(MethodError::new(
                INVALID_METHOD,
                format!("method {} does not exist", common::paths::shorten(qualified)),
            ));
        };
        let args = Args::new(method, params);
        if module.methods().iter().any(|m| m.name == method) {
            return module.call(ctx, method, args);
        }
        match method {
            "module_version" => no_args(args).map(|_| Value::String(module.version().into())),
            "module_api_version" => no_args(args).map(|_| Value::String(module.api_version().into())),
            "module_description" => no_args(args).map(|_| Value::String(module.description().into())),
            "list_methods" => no_args(args).map(|_| strings(Self::method_names(module))),
            "get_method_args" => no_args(args).map(|_| method_args(module)),
            _ => module.call(ctx, method, args),
        }
    }
}

fn no_args(args: Args<'_>) -> Result<(), MethodError> {
    Ok(args.arity(0, 0)?)
}

/// A list of strings as an XML-RPC array.
pub fn strings<S: Into<String>>(items: impl IntoIterator<Item = S>) -> Value {
    Value::Array(items.into_iter().map(|s| Value::String(s.into())).collect())
}

/// A struct from `(key, value)` pairs.
pub fn record<K: Into<String>>(pairs: impl IntoIterator<Item = (K, Value)>) -> Value {
    Value::Struct(pairs.into_iter().map(|(k, v)| (k.into(), v)).collect())
}

/// Func's `get_method_args` shape: `{method: {args: {arg: {type, optional,
/// description, order}}, description}}`.
fn method_args(module: &dyn Module) -> Value {
    record(module.methods().iter().map(|m| {
        let args = record(m.args.iter().enumerate().map(|(order, a)| {
            let info = record([
                ("type", Value::String(a.kind.into())),
                ("optional", Value::Boolean(a.optional)),
                ("description", Value::String(a.description.into())),
                ("order", Value::Integer(order as i32)),
            ]);
            (a.name, info)
        }));
        (
            m.name,
            record([
                ("args", args),
                ("description", Value::String(m.description.into())),
            ]),
        )
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_methods_that_cannot_block_run_inline() {
        let reg = Registry::standard();
        for instant in [
            "test.ping",
            "test.add",
            "test.module_version",
            "command.list_methods",
            "no.such",
        ] {
            assert!(reg.is_instant(instant), "{instant}");
        }
        for blocking in [
            "test.sleep",
            "command.run",
            "jobs.job_status",
            "jobs.wait_job",
            "process.info",
        ] {
            assert!(!reg.is_instant(blocking), "{blocking}");
        }
    }

    #[test]
    fn the_overlord_judges_results_by_the_rules_modules_state() {
        let reg = Registry::standard();
        for module in reg.modules() {
            for method in Registry::method_names(module) {
                let name = format!("{}.{method}", module.name());
                assert_eq!(module.result_rule(method), common::outcome::rule(&name), "{name}");
            }
        }
    }

    #[test]
    fn every_module_method_is_resolvable_and_names_are_sorted() {
        let reg = Registry::standard();
        let names = reg.qualified_names();
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(names, sorted);
        for n in &names {
            assert!(reg.exists(n), "{n}");
        }
        assert!(reg.exists("test.ping") && reg.exists("test.module_version"));
        assert!(!reg.exists("test.nope") && !reg.exists("nope.ping") && !reg.exists("ping"));
        let mut deduped = names.clone();
        deduped.dedup();
        assert_eq!(deduped, names, "no method is listed twice");
    }
}
