//! Targeting by facts, for every door (DESIGN §16): before anything is
//! sent, each host the SPEC names is asked to judge the filter itself —
//! `test.ping` with Func's first argument `{"__fact__": QUERY}` — so the
//! minions decide, on the facts they have now. A host whose facts satisfy
//! the filter is targeted; one they do not is not targeted and is no
//! failure; one that could not judge it (unreachable, an unknown fact, a
//! minion without facts) is never targeted either, and its error is its
//! result, so it is reported as failed, never skipped in silence. The
//! facts each host used come back with its verdict.

use std::collections::BTreeMap;

use common::xmlrpc::{is_remote_error, remote_error};
use common::Value;

use crate::gate::filter::Filter;
use crate::jobs::follow::Reply;
use crate::targets::Target;

/// Where the filter left each host.
#[derive(Debug, Default)]
pub struct Judged {
    /// The hosts whose facts satisfy the filter.
    pub chosen: Vec<Target>,
    /// Hosts the filter rejected (not targeted, no failure): their facts do
    /// not satisfy it, or they lack a fact it names.
    pub rejected: Vec<String>,
    /// Of those, the hosts that lack a fact the filter names, with it.
    pub missing: BTreeMap<String, String>,
    /// Hosts that could not judge it, with the error that is their result.
    pub unjudged: BTreeMap<String, Value>,
    /// The facts each host that answered looked at.
    pub seen: BTreeMap<String, Value>,
}

/// One host's answer to the filter.
#[derive(Debug, PartialEq)]
pub enum Verdict {
    Chosen(Value),
    Rejected(Value),
    /// The host lacks this fact: it does not match (Salt's habit; facts
    /// only some hosts have are the normal case).
    Missing(String),
    Unjudged(Value),
}

/// Func's minion error for a fact it does not have (its wire answer).
const NO_SUCH_FACT: &str = "None existing Fact method or tag required ";
const MISSING_KIND: &str = "func.minion.facts.minion_query.MinionQueryError";

impl Judged {
    /// The facts no host has, when that is why nothing matched: every
    /// host that answered lacks one (`None` otherwise).
    pub fn nobody_has(&self) -> Option<String> {
        let all_missing = self.chosen.is_empty()
            && self.unjudged.is_empty()
            && !self.missing.is_empty()
            && self.rejected.len() == self.missing.len();
        all_missing.then(|| {
            let facts: std::collections::BTreeSet<&str> = self.missing.values().map(String::as_str).collect();
            facts.into_iter().collect::<Vec<_>>().join(", ")
        })
    }
}

/// The first argument that asks a minion to judge `filter`: Func's
/// `{"__fact__": QUERY}`, sent with `test.ping` to every target.
pub fn query_arg(filter: &Filter) -> Value {
    Value::Struct([("__fact__".to_string(), filter.wire())].into_iter().collect())
}

/// Who asks hosts to judge a filter, as a relay is told: the SPEC that
/// named them, the user, the user's rights, the per-host timeout.
pub struct Asker {
    pub spec: String,
    pub user: String,
    pub rights: Option<Vec<String>>,
    pub timeout: f64,
}

/// Asks `targets` to judge `filter` — through `direct` (the worker fleet
/// or the warm pool), and through relays where `routes` put a host behind
/// one (`reach`, the one way to reach minions) — and sorts them.
pub async fn judge(
    direct: &dyn crate::reach::Direct,
    root: &common::paths::Root,
    routes: Option<&crate::relay::Routes>,
    targets: Vec<Target>,
    filter: &Filter,
    asker: Asker,
) -> Judged {
    let order = crate::relay::Order {
        id: format!("{}-{JUDGE_METHOD}-now", asker.spec),
        spec: asker.spec,
        function: JUDGE_METHOD.to_string(),
        params: vec![query_arg(filter)],
        user: asker.user,
        rights: asker.rights,
        timeout: asker.timeout,
        forward: None,
        job_request: None,
    };
    let answers = crate::reach::collected(|ends| {
        crate::reach::call(direct, root, routes, &order, targets.clone(), ends)
    })
    .await;
    sort(targets, answers)
}

/// The method the filter is judged with.
pub const JUDGE_METHOD: &str = "test.ping";

/// Sorts `targets` by their answers to `test.ping(query_arg(filter))`
/// (each door asks its own way: `func`'s workers, func-api's pool). A
/// host without an answer could not judge it.
pub fn sort(targets: Vec<Target>, mut answers: BTreeMap<String, Value>) -> Judged {
    let mut judged = Judged::default();
    for target in targets {
        let reply = match answers.remove(&target.name) {
            Some(v) => Reply::Value(v),
            None => Reply::Unreachable("no answer".into()),
        };
        match verdict(reply) {
            Verdict::Chosen(facts) => {
                judged.seen.insert(target.name.clone(), facts);
                judged.chosen.push(target);
            }
            Verdict::Rejected(facts) => {
                judged.seen.insert(target.name.clone(), facts);
                judged.rejected.push(target.name);
            }
            Verdict::Missing(fact) => {
                judged.missing.insert(target.name.clone(), fact);
                judged.rejected.push(target.name);
            }
            Verdict::Unjudged(error) => {
                judged.unjudged.insert(target.name, error);
            }
        }
    }
    judged
        .chosen
        .sort_by(|a, b| crate::values::natural_cmp(&a.name, &b.name));
    judged.rejected.sort_by(|a, b| crate::values::natural_cmp(a, b));
    judged
}

/// Keeps the facts each host looked at in the store (merged into its last
/// facts, with the time): the listings, the API and the web UI show them.
pub fn keep(
    store: &dyn crate::store::JobStore,
    seen: &BTreeMap<String, Value>,
) -> Result<(), crate::store::StoreError> {
    let maps: Vec<(&str, serde_json::Map<String, serde_json::Value>)> = seen
        .iter()
        .filter_map(|(host, facts)| match crate::values::to_json(facts) {
            serde_json::Value::Object(m) => Some((host.as_str(), m)),
            _ => None,
        })
        .collect();
    if maps.is_empty() {
        return Ok(());
    }
    let refs: Vec<(&str, &serde_json::Map<String, serde_json::Value>)> =
        maps.iter().map(|(h, m)| (*h, m)).collect();
    store.save_facts(&refs, crate::store::now(), false)
}

/// Reads a minion's answer to `test.ping({"__fact__": Q})`: Func's
/// `[{"__fact__": [verdict, facts]}, 1]` or `[{"__fact__": [false, facts]}]`.
pub fn verdict(reply: Reply) -> Verdict {
    let value = match reply {
        Reply::Value(v) if is_remote_error(&v) => {
            let missing = match crate::values::error_kind(&v) {
                Some(MISSING_KIND) => {
                    crate::values::error_message(&v).and_then(|m| m.strip_prefix(NO_SUCH_FACT))
                }
                _ => None,
            };
            return match missing {
                Some(fact) => Verdict::Missing(fact.trim().to_string()),
                None => Verdict::Unjudged(v),
            };
        }
        Reply::Value(v) => v,
        Reply::Fault(v) => return Verdict::Unjudged(v),
        Reply::Unreachable(why) => return Verdict::Unjudged(remote_error("socket.error", &why, "")),
    };
    if let Value::Array(items) = &value {
        if let Some(Value::Struct(first)) = items.first() {
            if let Some(Value::Array(pair)) = first.get("__fact__") {
                if let [Value::Boolean(holds), facts] = pair.as_slice() {
                    return match holds {
                        true if items.len() == 2 => Verdict::Chosen(facts.clone()),
                        false if items.len() == 1 => Verdict::Rejected(facts.clone()),
                        _ => Verdict::Unjudged(bad_answer()),
                    };
                }
            }
        }
    }
    Verdict::Unjudged(bad_answer())
}

fn bad_answer() -> Value {
    remote_error(
        "func.overlord.FactError",
        "the minion did not judge the fact filter (it has no facts: funcd before facts, or not a Func minion)",
        "",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fact(holds: bool, with_result: bool) -> Value {
        let verdict = Value::Struct(
            [(
                "__fact__".to_string(),
                Value::Array(vec![Value::Boolean(holds), Value::Struct(Default::default())]),
            )]
            .into_iter()
            .collect(),
        );
        let mut items = vec![verdict];
        if with_result {
            items.push(Value::Integer(1));
        }
        Value::Array(items)
    }

    #[test]
    fn func_answers_and_everything_else() {
        assert!(matches!(
            verdict(Reply::Value(fact(true, true))),
            Verdict::Chosen(_)
        ));
        assert!(matches!(
            verdict(Reply::Value(fact(false, false))),
            Verdict::Rejected(_)
        ));
        assert!(matches!(
            verdict(Reply::Value(fact(true, false))),
            Verdict::Unjudged(_)
        ));
        assert!(matches!(
            verdict(Reply::Value(Value::Integer(1))),
            Verdict::Unjudged(_)
        ));
        // A fact the host lacks: no match (issue 47), not a failure.
        let err = remote_error(
            "func.minion.facts.minion_query.MinionQueryError",
            "None existing Fact method or tag required nosuch",
            "",
        );
        assert_eq!(verdict(Reply::Value(err)), Verdict::Missing("nosuch".into()));
        let other = remote_error("x.Other", "the facts could not be read", "");
        assert_eq!(verdict(Reply::Value(other.clone())), Verdict::Unjudged(other));
        assert!(
            matches!(verdict(Reply::Unreachable("refused".into())), Verdict::Unjudged(v) if is_remote_error(&v))
        );
    }
}
