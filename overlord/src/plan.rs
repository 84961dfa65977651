//! What a `func` command runs with, once its words are parsed (`parse.rs`):
//! the [`Plan`] — root, SPEC (resolved to targets on demand), output
//! format, dispatch settings — and [`PlanError`], the runtime failures with
//! the exit status each maps to (usage 2, help 0, anything else 1).

use std::collections::BTreeMap;

use common::paths::Root;
use common::tls::Credentials;

use crate::dispatch::Dispatch;
pub use crate::settings::{
    credentials, max_response, seconds, store, DEFAULT_TIMEOUT, MAX_SECS, WORKER_CONCURRENCY,
};
use crate::store::Store;
use crate::targets::{self, Target};

/// Why a door's command could not be carried out: what only a door's own
/// input and files can cause (help asked for, configuration, a local
/// file), or the gate's refusal, which holds the rest (a bad request,
/// exit 2; no match, forbidden, the engine's and the store's failures).
/// Each cause has one variant, in one of the layers.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// Help or version text asked for (stdout, exit 0).
    #[error("{0}")]
    Help(String),
    #[error("{0}")]
    Config(String),
    /// overlord.conf cannot be used (the file and key are named).
    #[error(transparent)]
    Conf(#[from] std::sync::Arc<common::config::ConfigError>),
    /// A local file a command reads or writes.
    #[error("{}: {source}", path.display())]
    File {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A request the gate refused, or the engine could not carry out.
    #[error(transparent)]
    Gate(#[from] crate::gate::GateError),
}

impl PlanError {
    /// A command line or request that is wrong: the gate's `Invalid` (exit 2).
    #[allow(non_snake_case)]
    pub fn usage(why: String) -> Self {
        PlanError::Gate(crate::gate::GateError::Invalid(why))
    }
}

impl From<common::fact_filter::Invalid> for PlanError {
    fn from(e: common::fact_filter::Invalid) -> Self {
        PlanError::Gate(e.into())
    }
}

impl From<PlanError> for crate::gate::GateError {
    /// For a door that answers the gate's way (func-api): what only a
    /// command line can cause is this overlord's setup failing.
    fn from(e: PlanError) -> Self {
        match e {
            PlanError::Gate(g) => g,
            other => crate::error::EngineError::Setup(other.to_string()).into(),
        }
    }
}

impl From<targets::TargetError> for PlanError {
    fn from(e: targets::TargetError) -> Self {
        PlanError::Gate(e.into())
    }
}

impl From<crate::error::EngineError> for PlanError {
    fn from(e: crate::error::EngineError) -> Self {
        PlanError::Gate(e.into())
    }
}

impl From<crate::store::StoreError> for PlanError {
    fn from(e: crate::store::StoreError) -> Self {
        PlanError::Gate(crate::error::EngineError::Store(e).into())
    }
}

impl PlanError {
    /// Its kind in a word, for programs: `invalid` (a usage error, exit 2,
    /// as the gate names a bad request), `help`, `config`, `file`,
    /// or the gate's kinds (`gate::GateError::kind`: `no_match`, `store`, …).
    pub fn kind(&self) -> &'static str {
        match self {
            PlanError::Help(_) => "help",
            PlanError::Config(_) | PlanError::Conf(_) => "config",
            PlanError::File { .. } => "file",
            PlanError::Gate(g) => g.kind(),
        }
    }

    pub fn exit_code(&self) -> i32 {
        match self {
            PlanError::Help(_) => 0,
            PlanError::Gate(e) => e.exit_status(),
            _ => 1,
        }
    }
}

impl Dispatch {
    /// Dispatch settings below `root`: `forks` (default: the cores) and the
    /// per-host timeout (`-t`, else `socket_timeout` of overlord.conf, else
    /// [`DEFAULT_TIMEOUT`]).
    pub fn for_root(root: &Root, forks: Option<usize>, timeout: Option<f64>) -> Result<Self, PlanError> {
        // The one place a front end reads overlord.conf first: a bad value
        // stops it here, naming the file and the key.
        let conf = crate::conf::OverlordConf::of(root)?;
        Ok(Dispatch {
            forks: forks.unwrap_or_else(crate::dispatch::default_forks),
            timeout_secs: timeout.or(conf.socket_timeout).unwrap_or(DEFAULT_TIMEOUT),
            concurrency: WORKER_CONCURRENCY,
            max_response: conf.max_response,
            handoff: true,
            verbose: false,
        })
    }
}

/// Everything `func` will do.
#[derive(Debug)]
pub struct Plan {
    pub root: Root,
    pub spec: String,
    pub exclude: Option<String>,
    pub json: bool,
    /// With `json` set: the format (`--out json|yaml|txt`).
    pub out: crate::out::Format,
    /// `-v` count: say more on stderr.
    pub verbose: u8,
    /// `-q`: no progress or informational lines on stderr.
    pub quiet: bool,
    pub dispatch: Dispatch,
    /// Literal names that matched no minion, noted by [`Plan::targets`].
    pub missing: std::cell::RefCell<Vec<String>>,
    /// `-t` as given (a deadline for `--wait` and async polling).
    pub timeout: Option<f64>,
    /// Targeting by facts: the hosts the SPEC names are asked to judge it.
    pub filter: Option<crate::gate::filter::Filter>,
    /// Hosts that could not judge the filter, with the error that is their
    /// result (noted by [`Plan::targets`]: never called, exit status 1).
    pub unjudged: std::cell::RefCell<BTreeMap<String, common::Value>>,
    /// `--delegate`: calls go through relays where the map says.
    pub delegate: bool,
    /// The delegation routes (`--delegate` with a map); `None`: all direct.
    pub routes: Option<crate::relay::Routes>,
    /// The job store a long-lived door already holds (func-api: its
    /// connections kept); `None`: the root's, opened when asked for.
    pub held_store: Option<Store>,
    /// A long-lived door's kept connections (func-api): the engine calls
    /// minions over them, for its caller; `None`: this process's workers
    /// and pollers.
    pub warm: Option<Warm>,
    /// The targets the SPEC (and `exclude`) resolved to when the door's
    /// gate authorized the request (`gate::rights::authorize_call`): not
    /// resolved (nor their addresses read) again. `None`: when asked.
    pub resolved: Option<Vec<Target>>,
}

/// The kept connections of a long-lived door, and whom it calls for.
#[derive(Debug, Clone)]
pub struct Warm {
    pub pool: std::sync::Arc<crate::pool::Pool>,
    /// Named to the minions (and relays) as who asks.
    pub user: String,
    /// The caller's signed rights (`None`: an administrator's).
    pub rights: Option<Vec<String>>,
}

impl Warm {
    /// The pool as a way of calling hosts directly, each call within `limit`.
    pub fn direct(&self, limit: std::time::Duration) -> crate::reach::Pooled<'_> {
        crate::reach::Pooled {
            pool: &self.pool,
            limit,
            user: Some(self.user.clone()),
            request: None,
        }
    }
}

impl Plan {
    /// Resolves the SPEC now (used by the commands that call minions). A
    /// literal name that matches no minion is reported on stderr and
    /// remembered, so the exit status is 1 although the others still run.
    pub fn targets(&self) -> Result<Vec<Target>, PlanError> {
        self.targets_reading(true)
    }

    /// The targets of a call now: [`Self::targets`], but where the call is
    /// to be handed to the func-api announced below the root (a warm func),
    /// their addresses are left unread (empty): func-api reads them. Whoever
    /// calls them itself instead reads them then (`targets::read_addresses`).
    pub fn call_targets(&self) -> Result<Vec<Target>, PlanError> {
        let handing = self.warm.is_none()
            && self.dispatch.handoff
            && crate::relay::local::may_hand()
            && crate::relay::local::announced(&self.root).is_some();
        self.targets_reading(!handing)
    }

    fn targets_reading(&self, addresses: bool) -> Result<Vec<Target>, PlanError> {
        if let Some(resolved) = &self.resolved {
            let chosen: std::collections::HashSet<String> = self.target_names()?.into_iter().collect();
            return Ok(resolved
                .iter()
                .filter(|t| chosen.contains(&t.name))
                .cloned()
                .collect());
        }
        let names = self.target_names()?;
        Ok(names
            .into_iter()
            .map(|name| match &self.routes {
                // Its relay knows where it is: no address is read here.
                Some(r) if r.relay_of(&name).is_some() => Target {
                    name,
                    addr: String::new(),
                },
                _ if !addresses => Target {
                    name,
                    addr: String::new(),
                },
                _ => Target::enrolled(&self.root, &name),
            })
            .collect())
    }

    /// The names the SPEC selects (after `-e`), reporting literal names
    /// that matched no minion; no address is read.
    pub fn target_names(&self) -> Result<Vec<String>, PlanError> {
        if let Some(resolved) = &self.resolved {
            return self.chosen(resolved.iter().map(|t| t.name.clone()).collect());
        }
        let certs = self.root.signed_certs_dir();
        // With a shared store the minions may all come from it; a service
        // (func-api) runs before the first minion enrolls: none yet.
        let elsewhere = || {
            self.warm.is_some() || self.routes.is_some() || crate::settings::store_url(&self.root).is_some()
        };
        if let (Err(e), false) = (std::fs::metadata(&certs), elsewhere()) {
            let why = match e.kind() {
                std::io::ErrorKind::NotFound => "does not exist".to_string(),
                _ => e.to_string(),
            };
            return Err(PlanError::Config(format!(
                "no minions found below the root {}: {} {why}. The overlord works below the certmaster's root: pass --root DIR (or set FUNC_ROOT) to it",
                self.root.dir().display(),
                certs.display()
            )));
        }
        // The minions behind relays are named for an administrator only
        // (as the gate judged: a limited caller's words name this
        // overlord's own minions).
        let limited = self.warm.as_ref().is_some_and(|w| w.rights.is_some());
        let extra = match (&self.routes, limited) {
            (Some(r), false) => r.minions(),
            _ => &[][..],
        };
        let (found, missing) =
            targets::resolve_names_with(&self.root, &self.spec, self.exclude.as_deref(), extra)?;
        // A service's caller is answered, not its log written to.
        for name in missing.iter().filter(|_| self.warm.is_none()) {
            crate::errln!(
                "func: no minion named {name:?}{} (`func '*' list_minions` lists them); the others still run",
                targets::comma_hint(name)
            );
        }
        self.missing.borrow_mut().extend(missing);
        self.chosen(found)
    }

    /// Of the names `found`, those this request targets: for a limited
    /// caller only the minions its rights reach; with a filter, those whose
    /// minions judge that it holds.
    fn chosen(&self, mut found: Vec<String>) -> Result<Vec<String>, PlanError> {
        if let Some(rights) = self.warm.as_ref().and_then(|w| w.rights.as_deref()) {
            let reach = crate::gate::rights::Rights::of_signed(Some(rights)).hosts_for(&self.root, None);
            found.retain(|name| reach.contains(name));
            if found.is_empty() {
                return Err(targets::TargetError::NoMatch(self.spec.clone()).into());
            }
        }
        match &self.filter {
            Some(filter) => self.judged(found, filter),
            None => Ok(found),
        }
    }

    /// The names among `found` whose minions judge that `filter` holds;
    /// the others are not targeted, and those that could not judge it are
    /// reported and remembered. Matching nothing is the gate's no-match.
    fn judged(
        &self,
        found: Vec<String>,
        filter: &crate::gate::filter::Filter,
    ) -> Result<Vec<String>, PlanError> {
        let targets: Vec<Target> = found.iter().map(|n| Target::enrolled(&self.root, n)).collect();
        // Every host judges it, as any call goes: through the door's kept
        // connections or the workers, and relays.
        self.check_credentials()?;
        let (user, rights) = match &self.warm {
            Some(warm) => (warm.user.clone(), warm.rights.clone()),
            None => (crate::principal::cli_user(), None),
        };
        let rights = crate::gate::rights::Rights::of_signed(rights.as_deref());
        crate::gate::rights::may_filter(&self.root, &rights, &found)?;
        let asker = crate::facts::Asker {
            spec: self.spec.clone(),
            user,
            rights: rights.signed(),
            timeout: self.dispatch.timeout_secs,
        };
        let limit = std::time::Duration::from_secs_f64(self.dispatch.timeout_secs);
        let (pooled, workers);
        let direct: &dyn crate::reach::Direct = match &self.warm {
            Some(warm) => {
                pooled = warm.direct(limit);
                &pooled
            }
            None => {
                workers = crate::reach::Workers {
                    credentials: self.credentials(),
                    how: self.dispatch.clone(),
                    request: None,
                };
                &workers
            }
        };
        let routes = self.routes.as_ref();
        let judged = crate::reach::on_door(crate::facts::judge(
            direct, &self.root, routes, targets, filter, asker,
        ));
        // The facts seen are kept; a store that cannot take them is said, not fatal.
        if let Err(e) = crate::facts::keep(&self.store(), &judged.seen) {
            crate::errln!("func: the facts seen were not kept: {e}");
        }
        for (host, error) in judged.unjudged.iter().filter(|_| self.warm.is_none()) {
            crate::errln!(
                "func: {host}: could not judge the filter, not called: {}",
                crate::out::error_line(error)
            );
        }
        if self.verbose > 0 && !judged.rejected.is_empty() {
            let said: Vec<String> = judged
                .rejected
                .iter()
                .map(|h| match judged.missing.get(h) {
                    Some(fact) => format!("{h} (no fact {fact})"),
                    None => h.clone(),
                })
                .collect();
            crate::errln!("func: left out by the filter: {}", said.join(" "));
        }
        if let Some(facts) = judged.nobody_has() {
            return Err(PlanError::usage(format!(
                "no host {} names has the fact {facts} (the filter {})",
                self.spec,
                filter.describe()
            )));
        }
        if judged.chosen.is_empty() && judged.unjudged.is_empty() {
            return Err(PlanError::from(targets::TargetError::NoMatch(format!(
                "{} with {}",
                self.spec,
                filter.describe()
            ))));
        }
        self.unjudged.borrow_mut().extend(judged.unjudged);
        Ok(judged.chosen.into_iter().map(|t| t.name).collect())
    }

    /// Hosts that could not judge the filter, with their errors.
    pub fn unjudged(&self) -> BTreeMap<String, common::Value> {
        self.unjudged.borrow().clone()
    }

    /// A plan for a program's request (`func-transmit`): quiet, JSON, the
    /// given SPEC and dispatch settings.
    pub fn for_program(
        root: Root,
        spec: &str,
        forks: Option<usize>,
        timeout: Option<f64>,
    ) -> Result<Self, PlanError> {
        let dispatch = Dispatch::for_root(&root, forks, timeout)?;
        Self::with_dispatch(root, spec, dispatch, timeout)
    }

    /// [`Self::for_program`] with dispatch settings already read (a
    /// long-lived door read overlord.conf once).
    pub fn with_dispatch(
        root: Root,
        spec: &str,
        dispatch: Dispatch,
        timeout: Option<f64>,
    ) -> Result<Self, PlanError> {
        // A program's SPEC is checked as every door's is (func-inventory's
        // -s, func-transmit's clients); a request naming no hosts (a job's
        // status) gives none.
        if !spec.is_empty() {
            crate::gate::call::check_spec("spec", spec)?;
        }
        Ok(Plan {
            held_store: None,
            warm: None,
            resolved: None,
            routes: None,
            delegate: false,
            dispatch,
            timeout,
            missing: Default::default(),
            filter: None,
            unjudged: Default::default(),
            root,
            spec: spec.to_string(),
            exclude: None,
            json: true,
            out: crate::out::Format::Json,
            verbose: 0,
            quiet: true,
        })
    }

    /// Calls go through relays where the map at `mapfile` (default:
    /// `var/lib/func/map`) says.
    pub fn delegate_with(&mut self, mapfile: Option<&std::path::Path>) -> Result<(), PlanError> {
        self.delegate = true;
        self.routes =
            crate::relay::Routes::load(&self.root, mapfile).map_err(|e| PlanError::Config(e.to_string()))?;
        Ok(())
    }

    /// An informational line on stderr (left out with `-q`).
    pub fn say(&self, line: &str) {
        if !self.quiet {
            crate::errln!("{line}");
        }
    }

    /// A line of detail on stderr (only with `-v`): which hosts, and how.
    pub fn detail(&self, targets: &[Target]) {
        if self.verbose == 0 {
            return;
        }
        let names: Vec<&str> = targets.iter().map(|t| t.name.as_str()).collect();
        // A warm func: the root's func-api is to call them (`relay::local`).
        let how = match self.dispatch.handoff {
            true => crate::relay::local::announced(&self.root)
                .map(|api| format!("through func-api at {}", api.addr)),
            false => None,
        };
        let how =
            how.unwrap_or_else(|| format!("with {} worker(s)", self.dispatch.forks.min(names.len().max(1))));
        crate::errln!(
            "func: calling {} host(s) {how}, timeout {} s: {}",
            names.len(),
            self.dispatch.timeout_secs,
            names.join(" ")
        );
        // Which hosts go through which relay: with -v (a delegated call's
        // route is what a user checks first); every address with -vv.
        if let (1, Some(routes)) = (self.verbose, self.routes.as_ref()) {
            let mut via: std::collections::BTreeMap<String, Vec<&str>> = Default::default();
            for t in targets {
                let how = routes
                    .relay_of(&t.name)
                    .map_or("called directly".to_string(), |r| {
                        format!("through relay {}", r.name)
                    });
                via.entry(how).or_default().push(&t.name);
            }
            for (how, hosts) in via {
                crate::errln!("func:   {how}: {}", hosts.join(" "));
            }
        }
        if self.verbose > 1 {
            for t in targets {
                match self.routes.as_ref().and_then(|r| r.relay_of(&t.name)) {
                    Some(relay) => {
                        crate::errln!("func:   {} through relay {} ({})", t.name, relay.name, relay.addr)
                    }
                    None => crate::errln!("func:   {} at {}", t.name, t.addr),
                }
            }
        }
    }

    /// Whether progress lines may be drawn on stderr (a terminal, no `-q`).
    pub fn progress(&self) -> bool {
        !self.quiet && std::io::IsTerminal::is_terminal(&std::io::stderr())
    }

    /// Fails once, clearly, when the overlord's key, certificate, CA or CRL
    /// cannot be used (instead of the same error for every host).
    pub fn check_credentials(&self) -> Result<(), PlanError> {
        common::tls::client_config(&self.credentials()).map(|_| ()).map_err(|e| {
            PlanError::Config(format!(
                "{e}. These are the overlord's credentials below the root {}: run func as a user who can read them (usually root), or pass --root DIR (or FUNC_ROOT) for the certmaster's root",
                self.root.dir().display()
            ))
        })
    }

    /// Literal names of the SPEC that matched no minion (after `targets`).
    pub fn missing(&self) -> Vec<String> {
        self.missing.borrow().clone()
    }

    /// The overlord's credentials below the root.
    pub fn credentials(&self) -> Credentials {
        credentials(&self.root)
    }

    /// The overlord's job store below the root (the one the door holds, if it does).
    pub fn store(&self) -> Store {
        match &self.held_store {
            Some(held) => held.clone(),
            None => store(&self.root),
        }
    }
}
