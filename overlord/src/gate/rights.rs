//! Who may do what (DESIGN §14), judged in one place for every door: an
//! administrator (a func-api admin token, the overlord's certificate, and
//! every local door — `func`, `func transmit`, `func-transmit` — whose user
//! holds the overlord's key) may do everything; a func-api token with
//! rules `SPEC=GLOB,…` may call a method on the hosts a rule's SPEC names
//! when one of its method globs matches (`web*=test.*,service.*`), and
//! sees only the jobs and batches whose every host it may call with the
//! job's function. A call is judged on names alone, before anything is
//! resolved further or sent; a limited caller learns nothing of names it
//! may not call (no match, an unknown group and a forbidden host answer
//! alike).

use std::collections::BTreeSet;

use common::paths::Root;
use serde::{Deserialize, Serialize};

use super::{Call, GateError};
use crate::groups::Groups;
use crate::targets::Target;

/// One rule: hosts (a SPEC of globs, `;`-separated, `@group` allowed) and
/// the methods they may be called with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rule {
    pub spec: String,
    pub methods: Vec<String>,
}

impl Rule {
    /// Parses `SPEC=GLOB[,GLOB…]`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let (spec, methods) = text
            .rsplit_once('=')
            .ok_or_else(|| format!("--allow {text:?}: expected SPEC=METHOD_GLOB[,METHOD_GLOB…]"))?;
        let spec = spec.trim();
        let methods: Vec<String> = methods
            .split(',')
            .map(str::trim)
            .filter(|m| !m.is_empty())
            .map(str::to_string)
            .collect();
        if spec.is_empty() || methods.is_empty() {
            return Err(format!(
                "--allow {text:?}: both a SPEC and a method glob are needed"
            ));
        }
        for m in &methods {
            glob::Pattern::new(m).map_err(|e| format!("--allow: bad method glob {m:?}: {e}"))?;
        }
        if spec != "*" && methods.iter().any(|m| m == ops::AUDIT_READ) {
            return Err(format!(
                "--allow {text:?}: {} reads every line of the trail, whatever hosts they name: its SPEC must be *",
                ops::AUDIT_READ
            ));
        }
        for part in spec
            .split(';')
            .map(str::trim)
            .filter(|p| !p.is_empty() && !p.starts_with('@'))
        {
            glob::Pattern::new(part).map_err(|e| format!("--allow: bad SPEC glob {part:?}: {e}"))?;
        }
        Ok(Rule {
            spec: spec.to_string(),
            methods,
        })
    }

    fn allows_method(&self, method: &str) -> bool {
        self.methods
            .iter()
            .any(|g| glob::Pattern::new(g).is_ok_and(|p| p.matches(method)))
    }

    /// The hosts among `known` this rule names.
    fn hosts(&self, known: &[String], groups: &Groups) -> BTreeSet<String> {
        crate::targets::select(&self.spec, known, groups).unwrap_or_default()
    }
}

/// Who is asking, once authenticated, and what they may do.
#[derive(Debug, Clone)]
pub struct Rights {
    /// Everything (an admin token, or the overlord's certificate).
    pub admin: bool,
    pub rules: Vec<Rule>,
}

impl Rights {
    /// These rights as a job's or a relay request's signed rights
    /// (`SPEC=METHODS` rules; `None`: an administrator).
    pub fn signed(&self) -> Option<Vec<String>> {
        (!self.admin).then(|| {
            self.rules
                .iter()
                .map(|r| format!("{}={}", r.spec, r.methods.join(",")))
                .collect()
        })
    }

    pub fn admin() -> Self {
        Rights {
            admin: true,
            rules: Vec::new(),
        }
    }

    /// The rights a job or request was signed with (`None`: an
    /// administrator); a rule that does not read grants nothing.
    pub fn of_signed(signed: Option<&[String]>) -> Self {
        match signed {
            None => Rights::admin(),
            Some(rules) => Rights {
                admin: false,
                rules: rules.iter().filter_map(|r| Rule::parse(r).ok()).collect(),
            },
        }
    }

    /// The first host of `hosts` that may not be called with `method`;
    /// `None` when all may. Judged on the names alone, before any call.
    pub fn forbidden<'a>(
        &self,
        root: &Root,
        method: &str,
        hosts: impl IntoIterator<Item = &'a String>,
    ) -> Option<String> {
        if self.admin {
            return None;
        }
        let allowed = self.hosts_for(root, Some(method));
        hosts.into_iter().find(|h| !allowed.contains(*h)).cloned()
    }

    /// The hosts these rights reach with `method` (any method: `None`).
    pub fn hosts_for(&self, root: &Root, method: Option<&str>) -> BTreeSet<String> {
        let known = crate::targets::all_minions(root);
        let groups = Groups::load(&root.groups_file());
        self.rules
            .iter()
            .filter(|r| method.is_none_or(|m| r.allows_method(m)))
            .flat_map(|r| r.hosts(&known, &groups))
            .collect()
    }

    /// Whether every one of `hosts` (at least one) may be called with
    /// `method`, on the names alone: each rule is judged once over all the
    /// hosts, not once per host (events and listings of big jobs).
    pub fn allows_all(&self, hosts: &[String], method: &str, groups: &Groups) -> bool {
        if self.admin {
            return true;
        }
        if hosts.is_empty() {
            return false;
        }
        let mut covered = BTreeSet::new();
        for rule in self.rules.iter().filter(|r| r.allows_method(method)) {
            covered.extend(rule.hosts(hosts, groups));
        }
        hosts.iter().all(|h| covered.contains(h))
    }

    /// Whether `host` may be called with `method` (names only, no lookups
    /// of the certificates: for events and listings of known hosts).
    pub fn allows(&self, host: &str, method: &str, groups: &Groups) -> bool {
        self.admin
            || self
                .rules
                .iter()
                .any(|r| r.allows_method(method) && r.hosts(&[host.to_string()], groups).contains(host))
    }
}

/// func-api's operations beside calls (DESIGN §14): the keys and the
/// audit trail. Named like methods, with `@` first so no method glob
/// (`*`) ever grants one.
pub mod ops {
    pub const KEYS_LIST: &str = "@keys.list";
    pub const KEYS_SIGN: &str = "@keys.sign";
    pub const KEYS_REVOKE: &str = "@keys.revoke";
    pub const AUDIT_READ: &str = "@audit.read";
}

impl Rule {
    /// Whether this rule grants operation `op` (only a method glob that
    /// begins with `@` can: `web*=*` grants calls, not keys).
    fn allows_op(&self, op: &str) -> bool {
        self.methods
            .iter()
            .filter(|g| g.starts_with('@'))
            .any(|g| glob::Pattern::new(g).is_ok_and(|p| p.matches(op)))
    }

    /// Whether this rule's SPEC globs name `name` (a key's name: a pending
    /// request is no minion yet, so names are matched, not resolved).
    fn names(&self, name: &str) -> bool {
        self.spec
            .split(';')
            .map(str::trim)
            .filter(|w| !w.is_empty() && !w.starts_with('@'))
            .any(|w| glob::Pattern::new(w).is_ok_and(|p| p.matches(name)))
    }
}

impl Rights {
    /// Whether operation `op` ([`ops`]) may be done on `name` (a key's
    /// name; `None` for an operation on no name: the audit trail, which
    /// only a rule whose SPEC is `*` grants, since it is not split by host).
    pub fn may_operate(&self, op: &str, name: Option<&str>) -> bool {
        self.admin
            || self.rules.iter().any(|r| {
                r.allows_op(op)
                    && match name {
                        Some(n) => r.names(n),
                        None => r.spec.trim() == "*",
                    }
            })
    }

    /// Whether operation `op` is granted on any name at all.
    pub fn may_operate_somewhere(&self, op: &str) -> bool {
        self.admin || self.rules.iter().any(|r| r.allows_op(op))
    }
}

/// Whether a caller with `rights` may filter `hosts` by their facts. A
/// verdict tells about a host's facts, so a limited caller must be allowed
/// `fact.items` on every host it has judged: else a filter would read, a
/// bit at a time, facts it may not read.
pub fn may_filter(root: &Root, rights: &Rights, hosts: &[String]) -> Result<(), GateError> {
    if rights.admin || rights.allows_all(hosts, "fact.items", &Groups::load(&root.groups_file())) {
        return Ok(());
    }
    Err(GateError::Forbidden(
        "this token may not read the facts (fact.items) of every host the SPEC names, so it may not filter by them"
            .into(),
    ))
}

/// The hosts `call` reaches, if `rights` may call its function on every
/// one of them: the authorization of a call, for every door.
pub fn authorize_call(root: &Root, rights: &Rights, call: &Call) -> Result<Vec<Target>, GateError> {
    let function = call.function();
    // Which host is not said: it may be one this caller cannot see.
    let forbidden = || {
        GateError::Forbidden(format!(
            "this token may not call {function} on every host the SPEC names"
        ))
    };
    let limited = !rights.admin;
    // `exclude` too: a word naming a group or host the caller may not
    // call would otherwise tell whether it exists.
    let judged = |words: &str| every_word_names_a_callable_minion(root, rights, &function, words);
    if limited && (!judged(&call.spec) || call.exclude.as_deref().is_some_and(|ex| !judged(ex))) {
        return Err(forbidden());
    }
    // With `delegate`, the minions the map puts behind relays are known too
    // (an administrator's: a limited token's words name only this
    // overlord's own minions, judged above).
    let extra = match (call.delegate, limited) {
        (true, false) => crate::relay::Routes::load(root, None)
            .map_err(|e| GateError::Invalid(e.to_string()))?
            .map(|r| r.minions().to_vec())
            .unwrap_or_default(),
        _ => Vec::new(),
    };
    let resolved = crate::targets::resolve_names_with(root, &call.spec, call.exclude.as_deref(), &extra).map(
        |(names, _)| {
            names
                .into_iter()
                .map(|n| crate::targets::Target::enrolled(root, &n))
                .collect()
        },
    );
    let targets: Vec<crate::targets::Target> = match resolved {
        Ok(targets) => targets,
        // No match, an unknown group or pattern in the SPEC or `exclude`:
        // all answer as forbidden to a limited caller.
        Err(_) if limited => return Err(forbidden()),
        Err(e) => return Err(GateError::Targets(e)),
    };
    if rights
        .forbidden(root, &function, targets.iter().map(|t| &t.name))
        .is_some()
    {
        return Err(forbidden());
    }
    Ok(targets)
}

/// Whether `rights` may ask minion `name` (with `method`, or with any
/// method: `None`), for the endpoints about one minion. A limited caller
/// cannot tell a minion it may not call from a missing one.
pub fn authorize_minion(
    root: &Root,
    rights: &Rights,
    name: &str,
    method: Option<&str>,
) -> Result<(), GateError> {
    let known = common::identity::is_valid_host_name(name)
        && crate::targets::all_minions(root).iter().any(|m| m == name);
    if !rights.admin {
        let allowed = known
            && match method {
                Some(m) => rights.allows(name, m, &Groups::load(&root.groups_file())),
                None => rights.hosts_for(root, None).contains(name),
            };
        if !allowed {
            return Err(GateError::Forbidden(format!(
                "this token may {} no minion of that name",
                method.map_or("call".to_string(), |m| format!("call {m} on"))
            )));
        }
    }
    if !known {
        return Err(GateError::Targets(crate::targets::TargetError::NoMatch(
            common::paths::shorten(name).to_string(),
        )));
    }
    Ok(())
}

/// Whether every `;` word of `spec` names at least one minion `rights`
/// may call with `function` (a word naming none would otherwise be
/// dropped silently, and whether it named a forbidden minion or none at
/// all would show: `m1;m2` excluding `m2` answered 200 when m2 existed).
fn every_word_names_a_callable_minion(root: &Root, rights: &Rights, function: &str, spec: &str) -> bool {
    let callable: Vec<String> = rights.hosts_for(root, Some(function)).into_iter().collect();
    let groups = Groups::load(&root.groups_file());
    spec.split(';')
        .map(str::trim)
        .filter(|w| !w.is_empty())
        .all(|w| crate::targets::select(w, &callable, &groups).is_ok_and(|hosts| !hosts.is_empty()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_parse_and_judge() {
        let r = Rule::parse("web*=test.*,service.*").unwrap();
        assert_eq!(r.spec, "web*");
        assert_eq!(r.methods, ["test.*", "service.*"]);
        assert!(Rule::parse("web*").is_err());
        assert!(Rule::parse("=test.*").is_err());
        assert!(Rule::parse("web*=").is_err());
        assert!(Rule::parse("web*=[").is_err());
        let rights = Rights {
            admin: false,
            rules: vec![r],
        };
        let g = Groups::default();
        assert!(rights.allows("web1", "test.ping", &g));
        assert!(!rights.allows("web1", "command.run", &g));
        assert!(!rights.allows("db1", "test.ping", &g));
        assert!(Rights::admin().allows("db1", "command.run", &g));
        let web: Vec<String> = vec!["web1".into(), "web2".into()];
        assert_eq!(
            rights.allows_all(&web, "test.ping", &g),
            web.iter().all(|h| rights.allows(h, "test.ping", &g))
        );
        assert!(!rights.allows_all(&["web1".into(), "db1".into()], "test.ping", &g));
        assert!(!rights.allows_all(&[], "test.ping", &g));
    }

    #[test]
    fn operations_need_a_rule_that_names_them_with_an_at() {
        let everything = Rights {
            admin: false,
            rules: vec![Rule::parse("*=*").unwrap()],
        };
        assert!(!everything.may_operate(ops::KEYS_SIGN, Some("web1")));
        assert!(!everything.may_operate(ops::AUDIT_READ, None));
        let keys = Rights {
            admin: false,
            rules: vec![Rule::parse("web*;db1=@keys.*").unwrap()],
        };
        assert!(keys.may_operate(ops::KEYS_SIGN, Some("web7")));
        assert!(keys.may_operate(ops::KEYS_REVOKE, Some("db1")));
        assert!(!keys.may_operate(ops::KEYS_SIGN, Some("db2")));
        assert!(!keys.may_operate(ops::AUDIT_READ, None));
        assert!(!keys.allows("web1", "test.ping", &Groups::default()));
        assert!(Rights::admin().may_operate(ops::AUDIT_READ, None));
    }

    /// `m1=@audit.read` read every audit line (issue 46): the trail is not
    /// split by host, so only `*` grants it, at parse and at every use
    /// (token files are read without `Rule::parse`).
    #[test]
    fn the_audit_trail_needs_a_rule_for_every_host() {
        let err = Rule::parse("m1=@audit.read").unwrap_err();
        assert!(err.contains("SPEC must be *"), "{err}");
        for narrow in ["m1", "web*;db1"] {
            let rights = Rights {
                admin: false,
                rules: vec![Rule {
                    spec: narrow.into(),
                    methods: vec!["@*".into()],
                }],
            };
            assert!(!rights.may_operate(ops::AUDIT_READ, None), "{narrow}");
            assert!(rights.may_operate(ops::KEYS_SIGN, Some("m1")) || narrow != "m1");
        }
        let all = Rights {
            admin: false,
            rules: vec![Rule::parse("*=@audit.read").unwrap()],
        };
        assert!(all.may_operate(ops::AUDIT_READ, None));
    }
}
