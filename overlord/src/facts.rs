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
use std::time::Duration;

use common::xmlrpc::{is_remote_error, remote_error};
use common::Value;

use crate::gate::filter::Filter;
use crate::jobs::follow::Reply;
use crate::jobs::poller::Poller;
use crate::settings::Calling;
use crate::targets::Target;

/// Where the filter left each host.
#[derive(Debug, Default)]
pub struct Judged {
    /// The hosts whose facts satisfy the filter.
    pub chosen: Vec<Target>,
    /// Hosts the filter rejected (not targeted, no failure).
    pub rejected: Vec<String>,
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
    Unjudged(Value),
}

/// Asks every target to judge `filter` (each call within `limit`).
pub fn judge(
    calling: Calling,
    limit: Duration,
    targets: Vec<Target>,
    filter: &Filter,
) -> Result<Judged, String> {
    let mut judged = Judged::default();
    if targets.is_empty() {
        return Ok(judged);
    }
    let query = Value::Struct([("__fact__".to_string(), filter.wire())].into_iter().collect());
    let mut poller = Poller::new(calling, limit)?;
    let calls = targets
        .iter()
        .map(|t| (t.clone(), "test.ping".to_string(), vec![query.clone()]))
        .collect();
    let mut by_name: BTreeMap<String, Target> = targets.into_iter().map(|t| (t.name.clone(), t)).collect();
    for (host, reply) in poller.call_each(calls) {
        match verdict(reply) {
            Verdict::Chosen(facts) => {
                judged.seen.insert(host.clone(), facts);
                if let Some(t) = by_name.remove(&host) {
                    judged.chosen.push(t);
                }
            }
            Verdict::Rejected(facts) => {
                judged.seen.insert(host.clone(), facts);
                judged.rejected.push(host);
            }
            Verdict::Unjudged(error) => {
                judged.unjudged.insert(host, error);
            }
        }
    }
    judged
        .chosen
        .sort_by(|a, b| crate::values::natural_cmp(&a.name, &b.name));
    judged.rejected.sort_by(|a, b| crate::values::natural_cmp(a, b));
    Ok(judged)
}

/// Keeps the facts each host looked at in the store (merged into its last
/// facts, with the time): the listings, the API and the web UI show them.
pub fn keep(store: &dyn crate::store::JobStore, judged: &Judged) -> Result<(), crate::store::StoreError> {
    let seen = crate::store::now();
    for (host, facts) in &judged.seen {
        if let serde_json::Value::Object(facts) = crate::values::to_json(facts) {
            store.save_facts(host, &facts, seen, false)?;
        }
    }
    Ok(())
}

/// Reads a minion's answer to `test.ping({"__fact__": Q})`: Func's
/// `[{"__fact__": [verdict, facts]}, 1]` or `[{"__fact__": [false, facts]}]`.
pub fn verdict(reply: Reply) -> Verdict {
    let value = match reply {
        Reply::Value(v) if is_remote_error(&v) => return Verdict::Unjudged(v),
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
        let err = remote_error(
            "x.Unknown",
            "None existing Fact method or tag required nosuch",
            "",
        );
        assert_eq!(verdict(Reply::Value(err.clone())), Verdict::Unjudged(err));
        assert!(
            matches!(verdict(Reply::Unreachable("refused".into())), Verdict::Unjudged(v) if is_remote_error(&v))
        );
    }
}
