//! Facts (DESIGN §16, Func's facts and Salt's grains): what a minion knows
//! of itself, for targeting and inventory. [`builtin`] reads them from the
//! system, [`local`] from `etc/func/facts.d/`; [`query`] judges Func's fact
//! query. [`Facts`] is one reading of all of them, by Func's
//! `module.method` name and by tag; [`filtered`] is Func's wire extension:
//! a call whose first argument is `{"__fact__": QUERY}` runs only when the
//! query holds, and answers `[{"__fact__": [verdict, facts]}, result]`
//! (`[{"__fact__": [false, facts]}]` when it does not), so Func's own
//! overlord targets funcd by facts as it did Func's minions.

pub mod builtin;
pub mod local;
pub mod query;

use std::collections::BTreeMap;

use common::paths::Root;
use common::xmlrpc::remote_error;
use common::Value;

use query::{Query, QueryError};

/// The key of Func's fact query in a call's first argument.
pub const FACT_KEY: &str = "__fact__";
/// `fact.items()`'s key for the local facts that could not be read.
pub const ERRORS_KEY: &str = "__errors__";

/// One fact method, as `fact.show_fact_method` describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct Method {
    /// Func's `module.method`.
    pub name: String,
    pub module: String,
    pub tag: String,
    pub description: String,
    pub value: Value,
}

/// All facts, read once.
#[derive(Debug, Clone, Default)]
pub struct Facts {
    pub methods: Vec<Method>,
    /// Local fact files that could not be read, with why.
    pub broken: BTreeMap<String, String>,
}

impl Facts {
    /// The built-in facts and those of `root`'s `facts.d`.
    pub fn read(root: &Root) -> Self {
        let mut all = Facts {
            methods: builtin::FACTS
                .iter()
                .map(|f| builtin_method(f, (f.read)()))
                .collect(),
            ..Facts::default()
        };
        let local = Facts::local(root);
        all.methods.extend(local.methods);
        all.broken = local.broken;
        all
    }

    /// The facts of `root`'s `facts.d` only.
    pub fn local(root: &Root) -> Self {
        Self::local_of(root, local::Which::All)
    }

    /// The facts of `root`'s `facts.d` of one kind.
    pub fn local_of(root: &Root, which: local::Which) -> Self {
        let mut methods = Vec::new();
        let local = local::gather_some(&root.facts_dir(), which);
        for file in local.files {
            for (key, value) in file.values {
                methods.push(Method {
                    name: format!("{}.{key}", file.name),
                    module: file.name.clone(),
                    description: format!("from facts.d/{}", file.name),
                    tag: key,
                    value,
                });
            }
        }
        Facts {
            methods,
            broken: local.broken,
        }
    }

    /// A fact by tag or by `module.method`; a local fact overrides a
    /// built-in one of the same tag (as Func's later registrations did).
    pub fn get(&self, name: &str) -> Option<&Method> {
        self.methods
            .iter()
            .rev()
            .find(|m| m.tag == name || m.name == name)
    }

    /// Every fact by its tag (Salt's `grains.items`), the unreadable local
    /// ones under `__errors__`.
    pub fn items(&self) -> Value {
        let mut all: BTreeMap<String, Value> = BTreeMap::new();
        for m in &self.methods {
            all.insert(m.tag.clone(), m.value.clone());
        }
        if !self.broken.is_empty() {
            all.insert(
                ERRORS_KEY.into(),
                Value::Struct(
                    self.broken
                        .iter()
                        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                        .collect(),
                ),
            );
        }
        Value::Struct(all)
    }

    /// Judges Func's serialized query: its verdict and the facts it read.
    pub fn judge(&self, wire: &Value) -> Result<(bool, BTreeMap<String, Value>), QueryError> {
        query::judge(&Query::parse(wire)?, &|name| {
            self.get(name).map(|m| m.value.clone())
        })
    }
}

fn builtin_method(f: &builtin::Builtin, value: Value) -> Method {
    Method {
        name: format!("{}.{}", f.module, f.method),
        module: f.module.to_string(),
        tag: f.tag.to_string(),
        description: f.description.to_string(),
        value,
    }
}

/// Judges Func's serialized query reading only the facts it names (a
/// filter is judged on every call that carries one): local JSON facts
/// first (they override a built-in of the same tag), then the built-in one
/// asked for; local executables run only for a fact neither of those has
/// (a slow one must not hold every filtered call), at most once a query.
pub fn judge_lazily(root: &Root, wire: &Value) -> Result<(bool, BTreeMap<String, Value>), QueryError> {
    let query = Query::parse(wire)?;
    let json = Facts::local_of(root, local::Which::Json);
    let executables: std::cell::OnceCell<Facts> = std::cell::OnceCell::new();
    query::judge(&query, &|name| {
        if let Some(m) = json.get(name) {
            return Some(m.value.clone());
        }
        let built_in = builtin::FACTS
            .iter()
            .find(|f| f.tag == name || (name.split_once('.') == Some((f.module, f.method))));
        if let Some(f) = built_in {
            return Some((f.read)());
        }
        executables
            .get_or_init(|| Facts::local_of(root, local::Which::Executables))
            .get(name)
            .map(|m| m.value.clone())
    })
}

/// The fact query of a call, when its first argument is `{"__fact__": Q}`.
pub fn query_of(params: &[Value]) -> Option<&Value> {
    match params.first() {
        Some(Value::Struct(first)) if first.len() == 1 => first.get(FACT_KEY),
        _ => None,
    }
}

/// What a call with a fact query comes to.
pub enum Filtered {
    /// The query holds: run the method with the other arguments, and wrap
    /// its result with [`Filtered::wrap`].
    Run(Value),
    /// The answer as it is (the query did not hold, or could not be read).
    Answer(Value),
}

impl Filtered {
    /// Func's answer for a host the query chose: `[{"__fact__": …}, result]`.
    pub fn wrap(verdict: Value, result: Value) -> Value {
        Value::Array(vec![verdict, result])
    }
}

/// Judges the call's fact query against the facts of `root`.
pub fn filtered(root: &Root, wire: &Value) -> Filtered {
    match judge_lazily(root, wire) {
        Ok((verdict, seen)) => {
            let answer = Value::Struct(
                [(
                    FACT_KEY.to_string(),
                    Value::Array(vec![Value::Boolean(verdict), Value::Struct(seen)]),
                )]
                .into_iter()
                .collect(),
            );
            if verdict {
                Filtered::Run(answer)
            } else {
                Filtered::Answer(Value::Array(vec![answer]))
            }
        }
        Err(e) => Filtered::Answer(remote_error(e.class(), &e.to_string(), "")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn text(t: &str) -> Value {
        Value::String(t.into())
    }

    #[test]
    fn a_filter_runs_local_executables_only_for_facts_nothing_else_has() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        let root = Root::new(dir.path());
        let facts_d = root.facts_dir();
        std::fs::create_dir_all(&facts_d).unwrap();
        for d in [
            dir.path().join("etc"),
            dir.path().join("etc/func"),
            facts_d.clone(),
        ] {
            std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let marker = dir.path().join("ran");
        let exe = facts_d.join("rack");
        std::fs::write(
            &exe,
            format!(
                "#!/bin/sh\ntouch {}\necho '{{\"rack\": \"r7\"}}'\n",
                marker.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::write(facts_d.join("role.json"), r#"{"role": "web"}"#).unwrap();
        let query = |key: &str, v: &str| {
            Value::Array(vec![
                text("AND"),
                Value::Array(vec![Value::Array(vec![text(key), text(v)])]),
            ])
        };
        // A built-in fact and a JSON one: the executable is not run.
        assert!(judge_lazily(&root, &query("num_cpus__gte", "1")).unwrap().0);
        assert!(judge_lazily(&root, &query("role", "web")).unwrap().0);
        assert!(!marker.exists(), "the executable ran for facts others have");
        // A fact only the executable has: it runs.
        assert!(judge_lazily(&root, &query("rack", "r7")).unwrap().0);
        assert!(marker.exists());
    }
}
