//! The module framework: a [`Module`] answers its own methods; the
//! [`Registry`] adds Func's five per-module methods (`module_version`,
//! `module_api_version`, `module_description`, `list_methods`,
//! `get_method_args`) and resolves `module.method` names, dotted submodules
//! included (the module is everything before the last dot). Drop-in
//! modules (`crate::dropin`) join the built-ins here: a name that is not a
//! built-in module is looked up among them, so they get the same five base
//! methods, listings, ACLs, audit and limits.

pub mod command;
pub mod copyfile;
pub mod echo;
pub mod fact;
pub mod hardware;
pub mod jobs;
pub mod module;
pub mod overlord;
pub mod process;
pub mod service;
pub mod system;
pub mod test;

use std::collections::BTreeMap;
use std::sync::Arc;

use common::paths::Root;
use common::xmlrpc::args::Args;
use common::Value;

use crate::dropin::{DropIn, DropIns, Snapshot};
pub use crate::method::{
    record, strings, unreachable_method, ArgInfo, MethodError, MethodInfo, MethodResult, INVALID_METHOD,
};
pub use module::{Catalog, Context, Module};

/// Func's per-module methods, answered by the registry for every module.
pub const BASE_METHODS: [&str; 5] = [
    "module_version",
    "module_api_version",
    "module_description",
    "list_methods",
    "get_method_args",
];

/// All modules of this minion, by name.
pub struct Registry {
    modules: BTreeMap<&'static str, Box<dyn Module>>,
    dropins: Option<DropIns>,
}

/// A resolved `module.method`.
enum Target<'a> {
    BuiltIn(&'a dyn Module, &'a str),
    DropIn(Arc<DropIn>, &'a str),
}

impl Registry {
    /// The modules shipped with funcd, and the drop-ins below `root`
    /// (`group`: how their processes are grouped, see `dropin::exec`).
    pub fn with_dropins(
        root: Root,
        settings: crate::dropin::Settings,
        group: crate::dropin::exec::Group,
    ) -> Self {
        let mut reg = Self::standard();
        let builtins = reg.modules.keys().map(|k| k.to_string()).collect();
        reg.dropins = Some(DropIns::new(root, settings, group, builtins));
        reg
    }

    /// The modules shipped with funcd only.
    pub fn standard() -> Self {
        let list: Vec<Box<dyn Module>> = vec![
            Box::new(command::Command),
            Box::new(copyfile::CopyFile),
            Box::new(echo::Echo),
            Box::new(fact::Fact),
            Box::new(hardware::Hardware),
            Box::new(jobs::JobsModule),
            Box::new(overlord::Overlord),
            Box::new(process::Process),
            Box::new(service::Service),
            Box::new(system::System),
            Box::new(test::Test),
        ];
        Self {
            modules: list.into_iter().map(|m| (m.name(), m)).collect(),
            dropins: None,
        }
    }

    /// The drop-in modules as of now (the directories are looked at again).
    pub fn dropins(&self) -> Snapshot {
        self.dropins.as_ref().map(DropIns::refresh).unwrap_or_default()
    }

    /// Every module name, built-in and drop-in, sorted.
    pub fn module_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.modules.keys().map(|k| k.to_string()).collect();
        names.extend(self.dropins().modules.into_keys());
        names.sort();
        names
    }

    /// `{module: [method, ...]}` of every module.
    pub fn inventory(&self) -> Value {
        let mut all: BTreeMap<String, Value> = self
            .modules()
            .map(|m| (m.name().to_string(), strings(Self::method_names(m))))
            .collect();
        for (name, m) in self.dropins().modules {
            all.insert(name, strings(dropin_method_names(&m)));
        }
        Value::Struct(all)
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
        with_base_methods(module.methods().iter().map(|m| m.name).collect())
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
        for (name, m) in self.dropins().modules {
            names.extend(
                dropin_method_names(&m)
                    .into_iter()
                    .map(|meth| format!("{name}.{meth}")),
            );
        }
        names.sort();
        names
    }

    /// Whether `qualified`'s module (before the last dot) is built in.
    pub fn is_builtin_module(&self, qualified: &str) -> bool {
        let module = qualified.rsplit_once('.').map_or(qualified, |(m, _)| m);
        self.modules.contains_key(module)
    }

    /// Whether `qualified` names a built-in method.
    pub fn exists(&self, qualified: &str) -> bool {
        self.resolve(qualified).is_some()
    }

    /// Built-in methods first; then, for a module name that is not built
    /// in, the drop-ins as they are now.
    fn target<'a>(&'a self, qualified: &'a str) -> Option<Target<'a>> {
        if let Some((module, method)) = self.resolve(qualified) {
            return Some(Target::BuiltIn(module, method));
        }
        let (module, method) = qualified.rsplit_once('.')?;
        if self.modules.contains_key(module) {
            return None;
        }
        let found = self.dropins.as_ref()?.find(module)?;
        let known = dropin_method_names(&found).contains(&method);
        known.then_some(Target::DropIn(found, method))
    }

    fn resolve<'a>(&'a self, qualified: &'a str) -> Option<(&'a dyn Module, &'a str)> {
        let (module, method) = qualified.rsplit_once('.')?;
        let module = self.module(module)?;
        Self::method_names(module)
            .contains(&method)
            .then_some((module, method))
    }

    /// Whether a call of `qualified` answers at once: the five base methods
    /// of built-ins, a module's instant methods, and unknown methods (an
    /// error value). Names that may be drop-ins are not: finding out runs
    /// a look at the directories, maybe an executable.
    pub fn is_instant(&self, qualified: &str) -> bool {
        match self.resolve(qualified) {
            None => self.dropins.is_none() || self.is_builtin_module(qualified),
            Some((module, method)) => {
                !module.methods().iter().any(|m| m.name == method) || module.is_instant(method)
            }
        }
    }

    /// Runs `qualified` (`module.method`). Unknown methods are a
    /// `REMOTE_ERROR`, as in Func.
    pub fn call(&self, ctx: &Context<'_>, qualified: &str, params: &[Value]) -> MethodResult {
        let (module, method) = match self.target(qualified) {
            Some(Target::BuiltIn(module, method)) => (module, method),
            Some(Target::DropIn(module, method)) => return self.call_dropin(ctx, &module, method, params),
            None => {
                return Err(MethodError::new(
                    INVALID_METHOD,
                    format!(
                        "method {} does not exist{}",
                        common::paths::shorten(qualified),
                        self.why_not_loaded(qualified)
                    ),
                ))
            }
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

    /// Why the drop-in a method name points at is not loaded (refused or
    /// broken), as `"; FILE is refused: why"`, or nothing.
    fn why_not_loaded(&self, qualified: &str) -> String {
        match (qualified.rsplit_once('.'), &self.dropins) {
            (Some((module, _)), Some(dropins)) if !self.modules.contains_key(module) => {
                dropins.why_not_loaded(module)
            }
            _ => String::new(),
        }
    }

    /// Whether a drop-in module process ran in this process (see `jobs::runner`).
    pub fn ran_dropin(&self) -> bool {
        self.dropins.as_ref().is_some_and(DropIns::ran_any)
    }

    /// A drop-in's own method runs its executable; the five base methods
    /// are answered from its description.
    fn call_dropin(&self, ctx: &Context<'_>, m: &DropIn, method: &str, params: &[Value]) -> MethodResult {
        let dropins = self
            .dropins
            .as_ref()
            .expect("drop-ins resolved without a drop-in set");
        if m.method(method).is_some() {
            return dropins.call(m, method, params, ctx.caller);
        }
        let args = Args::new(method, params);
        no_args(args)?;
        Ok(match method {
            "module_version" => Value::String(m.version.clone()),
            "module_api_version" => Value::String(m.api_version.clone()),
            "module_description" => Value::String(m.description.clone()),
            "list_methods" => strings(dropin_method_names(m)),
            _ => args_value(m.methods.iter().map(|meth| {
                let args = meth.args.iter().map(|a| {
                    (
                        a.name.as_str(),
                        a.kind.as_str(),
                        a.optional,
                        a.description.as_str(),
                    )
                });
                (meth.name.as_str(), meth.description.as_str(), args)
            })),
        })
    }
}

/// A drop-in's method names: its own, then the base ones it does not define.
fn dropin_method_names(m: &DropIn) -> Vec<&str> {
    with_base_methods(m.methods.iter().map(|x| x.name.as_str()).collect())
}

/// A module's own method names followed by the base methods it does not
/// define itself (its own of the same name wins).
fn with_base_methods<'a>(mut own: Vec<&'a str>) -> Vec<&'a str> {
    let base: Vec<&'a str> = BASE_METHODS.into_iter().filter(|b| !own.contains(b)).collect();
    own.extend(base);
    own
}

fn no_args(args: Args<'_>) -> Result<(), MethodError> {
    Ok(args.arity(0, 0)?)
}

impl Catalog for Registry {
    fn qualified_names(&self) -> Vec<String> {
        Registry::qualified_names(self)
    }
    fn module_names(&self) -> Vec<String> {
        Registry::module_names(self)
    }
    fn inventory(&self) -> Value {
        Registry::inventory(self)
    }
    fn dropins(&self) -> Snapshot {
        Registry::dropins(self)
    }
    fn builtins(&self) -> Vec<&dyn Module> {
        self.modules().collect()
    }
    fn call(&self, ctx: &Context<'_>, qualified: &str, params: &[Value]) -> MethodResult {
        Registry::call(self, ctx, qualified, params)
    }
}

/// Func's `get_method_args` shape: `{method: {args: {arg: {type, optional,
/// description, order}}, description}}`.
fn method_args(module: &dyn Module) -> Value {
    args_value(module.methods().iter().map(|m| {
        let args = m.args.iter().map(|a| (a.name, a.kind, a.optional, a.description));
        (m.name, m.description, args)
    }))
}

/// `get_method_args` from `(method, description, [(arg, type, optional,
/// description)])`.
fn args_value<'a, A>(methods: impl Iterator<Item = (&'a str, &'a str, A)>) -> Value
where
    A: Iterator<Item = (&'a str, &'a str, bool, &'a str)>,
{
    record(methods.map(|(name, description, args)| {
        let args = record(args.enumerate().map(|(order, (arg, kind, optional, text))| {
            let info = record([
                ("type", Value::String(kind.into())),
                ("optional", Value::Boolean(optional)),
                ("description", Value::String(text.into())),
                ("order", Value::Integer(order as i32)),
            ]);
            (arg, info)
        }));
        (
            name,
            record([("args", args), ("description", Value::String(description.into()))]),
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
