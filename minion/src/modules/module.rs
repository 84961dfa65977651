//! The module interface: the [`Module`] trait one file per module
//! implements, the [`Context`] a method runs with, and the [`Catalog`] of
//! all modules that `system.*` reads (the registry implements it), so a
//! module never imports the registry that lists it.

use common::paths::Root;
use common::xmlrpc::args::Args;
use common::Value;

use crate::dropin::Snapshot;
use crate::method::{MethodInfo, MethodResult};

/// All modules of the minion, as `system.*` sees them.
pub trait Catalog: Sync {
    /// Every callable `module.method`, sorted.
    fn qualified_names(&self) -> Vec<String>;
    /// Every module name, sorted.
    fn module_names(&self) -> Vec<String>;
    /// `system.inventory`.
    fn inventory(&self) -> Value;
    /// The drop-in modules as they stand now.
    fn dropins(&self) -> Snapshot;
    /// The built-in modules.
    fn builtins(&self) -> Vec<&dyn Module>;
    /// Calls `qualified` (`module.method`).
    fn call(&self, ctx: &Context<'_>, qualified: &str, params: &[Value]) -> MethodResult;
}

/// What a module may use while it runs.
pub struct Context<'a> {
    /// The minion's `--root`; modules that touch files stay below it.
    pub root: &'a Root,
    /// Directories (absolute, below the root) that `copyfile` may write.
    pub copyfile_dirs: &'a [String],
    /// All modules, for `system.*`.
    pub registry: &'a dyn Catalog,
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
