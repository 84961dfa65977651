//! Func's fact query, as it arrives on the wire (a first argument
//! `{"__fact__": QUERY}`, Func's serialized `Q` tree) and as funcd judges
//! it: `["AND", [["os", "Debian"], ["num_cpus__gte", 2]]]`, `["OR", […]]`,
//! `["NOT", ["AND", […]]]`, where a leaf is a list of `KEY, VALUE` pairs
//! (ANDed) and a key is a fact's name or tag, with Func's keywords after
//! `__`: none (equal), `contains`, `icontains`, `iexact`, `startswith`,
//! `gt`, `gte`, `lt`, `lte`, and `glob` (Salt's `-G`: a shell glob). The
//! overlord's value is read as the type of the fact's value (`"2"` against
//! a number is 2), as Func did; a list fact (ipv4) matches when any of its
//! items does, as Salt's list grains do. A query is parsed into a bounded
//! tree first, then judged.

use std::collections::BTreeMap;

pub use common::fact_query::{ParseError, Query, MAX_DEPTH, MAX_LEAVES};
use common::Value;

/// Why a query could not be read or judged.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum QueryError {
    #[error(transparent)]
    Parse(#[from] ParseError),
    #[error("None existing Fact method or tag required {0}")]
    UnknownFact(String),
    #[error("The keyword {0} used in query is not a valid one")]
    UnknownKeyword(String),
    #[error("cannot compare {fact} ({kind}) with {value:?}")]
    Type {
        fact: String,
        kind: &'static str,
        value: String,
    },
}

impl QueryError {
    /// Func's exception class for this error (the `REMOTE_ERROR`'s kind).
    pub fn class(&self) -> &'static str {
        match self {
            QueryError::UnknownFact(_) => "func.minion.facts.minion_query.MinionQueryError",
            QueryError::UnknownKeyword(_) => "func.minion.facts.minion_query.NonExistingQueryKeyword",
            QueryError::Type { .. } => "exceptions.ValueError",
            QueryError::Parse(_) => "exceptions.TypeError",
        }
    }
}

/// Judges `query` against `facts` (by name or tag): whether it holds, and
/// the value of every fact it looked at (Func's answer).
pub fn judge(
    query: &Query,
    facts: &dyn Fn(&str) -> Option<Value>,
) -> Result<(bool, BTreeMap<String, Value>), QueryError> {
    let mut seen = BTreeMap::new();
    let verdict = eval(query, facts, &mut seen)?;
    Ok((verdict, seen))
}

fn eval(
    query: &Query,
    facts: &dyn Fn(&str) -> Option<Value>,
    seen: &mut BTreeMap<String, Value>,
) -> Result<bool, QueryError> {
    match query {
        Query::Leaf { key, value } => {
            // Func's empty keyword (`arch__`, what its CLI and
            // test_fact_module send) is equality, as no keyword.
            let (name, keyword) = key.split_once("__").unwrap_or((key, ""));
            let fact = facts(name).ok_or_else(|| QueryError::UnknownFact(name.to_string()))?;
            seen.insert(name.to_string(), fact.clone());
            matches(name, keyword, value, &fact)
        }
        // Every term is judged (so every fact looked at is reported).
        Query::And(terms) => terms
            .iter()
            .try_fold(true, |all, t| Ok(eval(t, facts, seen)? && all)),
        Query::Or(terms) => terms
            .iter()
            .try_fold(false, |any, t| Ok(eval(t, facts, seen)? || any)),
        Query::Not(inner) => Ok(!eval(inner, facts, seen)?),
    }
}

/// A fact value's kind, for comparisons.
enum Scalar {
    Int(i64),
    Float(f64),
    Text(String),
    Bool(bool),
}

fn kind_name(v: &Value) -> &'static str {
    match v {
        Value::Integer(_) | Value::Long(_) => "a number",
        Value::Double(_) => "a number",
        Value::Boolean(_) => "a boolean",
        Value::String(_) => "a text",
        Value::Array(_) => "a list",
        Value::Struct(_) => "a struct",
        _ => "a value",
    }
}

fn scalar(v: &Value) -> Option<Scalar> {
    Some(match v {
        Value::Integer(i) => Scalar::Int(i64::from(*i)),
        Value::Long(l) => Scalar::Int(*l),
        Value::Double(d) => Scalar::Float(*d),
        Value::Boolean(b) => Scalar::Bool(*b),
        Value::String(s) => Scalar::Text(s.clone()),
        _ => return None,
    })
}

fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Integer(i) => i.to_string(),
        Value::Long(l) => l.to_string(),
        Value::Double(d) => d.to_string(),
        Value::Boolean(b) => if *b { "True" } else { "False" }.to_string(),
        other => format!("{other:?}"),
    }
}

/// Whether `fact`'s value satisfies `keyword` with the overlord's `wanted`.
fn matches(name: &str, keyword: &str, wanted: &Value, fact: &Value) -> Result<bool, QueryError> {
    if !matches!(
        keyword,
        "" | "contains" | "icontains" | "iexact" | "startswith" | "gt" | "gte" | "lt" | "lte" | "glob"
    ) {
        return Err(QueryError::UnknownKeyword(keyword.to_string()));
    }
    if let Value::Array(items) = fact {
        // A list fact: any item (an empty list matches nothing).
        for item in items {
            if matches(name, keyword, wanted, item)? {
                return Ok(true);
            }
        }
        return Ok(false);
    }
    let type_error = || QueryError::Type {
        fact: name.to_string(),
        kind: kind_name(fact),
        value: text_of(wanted),
    };
    // An ordering against a number: a fact that is not a number (a
    // runlevel `unknown`) does not match, and numbers written as text
    // compare as numbers (text order would put "unknown" above "2").
    if matches!(keyword, "gt" | "gte" | "lt" | "lte") {
        if let Some(w) = number(wanted) {
            let Some(f) = number(fact) else { return Ok(false) };
            return Ok(match keyword {
                "gt" => f > w,
                "gte" => f >= w,
                "lt" => f < w,
                _ => f <= w,
            });
        }
    }
    let fact_s = scalar(fact).ok_or_else(type_error)?;
    // The overlord's value, read as the fact's type (Func's rule).
    let wanted_s = match (&fact_s, wanted) {
        (Scalar::Int(_), Value::String(s)) => Scalar::Int(s.trim().parse().map_err(|_| type_error())?),
        (Scalar::Float(_), Value::String(s)) => Scalar::Float(s.trim().parse().map_err(|_| type_error())?),
        (Scalar::Bool(_), Value::String(s)) => Scalar::Bool(match s.trim().to_ascii_lowercase().as_str() {
            "true" | "1" | "yes" => true,
            "false" | "0" | "no" | "" => false,
            _ => return Err(type_error()),
        }),
        (Scalar::Text(_), other) => Scalar::Text(text_of(other)),
        (_, other) => scalar(other).ok_or_else(type_error)?,
    };
    let ordering = compare(&wanted_s, &fact_s).ok_or_else(type_error)?;
    use std::cmp::Ordering::*;
    let (f, w) = (text_of(fact), text_of(&scalar_value(&wanted_s)));
    Ok(match keyword {
        "" => ordering == Equal,
        "gt" => ordering == Less,
        "gte" => ordering != Greater,
        "lt" => ordering == Greater,
        "lte" => ordering != Less,
        "contains" => f.contains(&w),
        "icontains" => f.to_lowercase().contains(&w.to_lowercase()),
        "iexact" => f.to_lowercase() == w.to_lowercase(),
        "startswith" => f.starts_with(&w),
        // "glob"
        _ => glob::Pattern::new(&w).is_ok_and(|p| p.matches(&f)),
    })
}

/// `v` as a number, when it is one (or text that reads as one).
fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Integer(i) => Some(f64::from(*i)),
        Value::Long(l) => Some(*l as f64),
        Value::Double(d) => Some(*d),
        Value::String(s) => s.trim().parse::<f64>().ok().filter(|n| n.is_finite()),
        _ => None,
    }
}

fn scalar_value(s: &Scalar) -> Value {
    match s {
        Scalar::Int(i) => common::xmlrpc::int(*i),
        Scalar::Float(f) => Value::Double(*f),
        Scalar::Text(t) => Value::String(t.clone()),
        Scalar::Bool(b) => Value::Boolean(*b),
    }
}

/// `wanted` against `fact`, when they are comparable.
fn compare(wanted: &Scalar, fact: &Scalar) -> Option<std::cmp::Ordering> {
    match (wanted, fact) {
        (Scalar::Int(a), Scalar::Int(b)) => Some(a.cmp(b)),
        (Scalar::Int(a), Scalar::Float(b)) => (*a as f64).partial_cmp(b),
        (Scalar::Float(a), Scalar::Int(b)) => a.partial_cmp(&(*b as f64)),
        (Scalar::Float(a), Scalar::Float(b)) => a.partial_cmp(b),
        (Scalar::Text(a), Scalar::Text(b)) => Some(a.cmp(b)),
        (Scalar::Bool(a), Scalar::Bool(b)) => Some(a.cmp(b)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(t: &str) -> Value {
        Value::String(t.into())
    }

    /// Func's `QueryKeyword` tests (test_facts_minion.py), one keyword each.
    fn resolve(key: &str, wanted: Value, fact: Value) -> bool {
        let (_, keyword) = key.split_once("__").unwrap_or((key, ""));
        matches("os", keyword, &wanted, &fact).unwrap()
    }

    #[test]
    fn funcs_keyword_tests() {
        assert!(resolve("os__contains", s("f9"), s("os f9 2.16")));
        assert!(!resolve("os__contains", s("nonexisting"), s("os f9 2.16")));
        assert!(resolve("os__icontains", s("F9"), s("os f9 2.16")));
        assert!(!resolve("os__icontains", s("nonexisting"), s("os f9 2.16")));
        assert!(resolve("os__iexact", s("FeDorA9"), s("fedora9")));
        assert!(!resolve("os__iexact", s("nonexisting"), s("fedora9")));
        assert!(resolve("os__startswith", s("fed"), s("fedora10")));
        assert!(!resolve("os__startswith", s("nonexisting"), s("fedora10")));
        assert!(!resolve("os__gt", s("fedora101"), s("fedora10")));
        assert!(resolve("os__gt", s("fedora"), s("fedora10")));
        let n = Value::Integer(100);
        assert!(!resolve("os__gt", Value::Integer(101), n.clone()));
        assert!(!resolve("os__gt", s("101"), n.clone()));
        assert!(!resolve("os__gt", s("100"), n.clone()));
        assert!(!resolve("os__gt", Value::Integer(100), n.clone()));
        assert!(resolve("os__gte", s("fedora10"), s("fedora10")));
        assert!(resolve("os__gte", Value::Integer(100), n.clone()));
        assert!(!resolve("os__gte", s("101"), n.clone()));
        assert!(resolve("os__gte", s("100"), n.clone()));
        assert!(resolve("os__lte", s("fedora10"), s("fedora10")));
        assert!(!resolve("os__lte", s("fedora"), s("fedora10")));
        assert!(resolve("os__lte", Value::Integer(100), n.clone()));
        assert!(resolve("os__lte", s("101"), n.clone()));
        assert!(resolve("os__lte", s("100"), n.clone()));
        assert!(!resolve("os__lt", s("fedora10"), s("fedora10")));
        assert!(!resolve("os__lt", s("fedora"), s("fedora10")));
        assert!(!resolve("os__lt", Value::Integer(100), n.clone()));
        assert!(resolve("os__lt", s("101"), n.clone()));
        assert!(!resolve("os__lt", s("33"), n.clone()));
        assert!(resolve("os", s("fedora10"), s("fedora10")));
        assert!(!resolve("os", s("fedora"), s("fedora10")));
        assert!(resolve("os", Value::Integer(100), n.clone()));
        assert!(!resolve("os", s("101"), n));
        assert!(resolve("os__glob", s("Debi*"), s("Debian")));
        assert!(!resolve("os__glob", s("Red*"), s("Debian")));
    }

    /// Issue 47: `runlevel>2` matched a runlevel `unknown` (text order);
    /// Func's empty keyword `arch__` was refused.
    #[test]
    fn orderings_against_numbers_and_the_empty_keyword() {
        assert!(!resolve("os__gt", s("2"), s("unknown")));
        assert!(!resolve("os__lte", Value::Integer(2), s("unknown")));
        assert!(
            resolve("os__gt", s("2"), s("10")),
            "numbers written as text compare as numbers"
        );
        assert!(resolve("os__gte", s("2.5"), Value::Double(2.5)));
        assert!(
            resolve("os__gt", s("fedora"), s("fedora10")),
            "Func's text order stays"
        );
        let facts = |n: &str| (n == "arch").then(|| s("x86_64"));
        let eq = |v: &str| {
            super::judge(
                &Query::parse(&q("AND", vec![leaf("arch__", s(v))])).unwrap(),
                &facts,
            )
        };
        assert!(eq("x86_64").unwrap().0);
        assert!(!eq("aarch64").unwrap().0);
    }

    fn facts(name: &str) -> Option<Value> {
        match name {
            "os" => Some(s("Debian")),
            "num_cpus" => Some(Value::Integer(2)),
            "ipv4" => Some(Value::Array(vec![s("127.0.0.1"), s("10.0.0.5")])),
            "hardware.run_level" | "runlevel" => Some(Value::Integer(5)),
            _ => None,
        }
    }

    fn judge(wire: Value) -> Result<(bool, BTreeMap<String, Value>), QueryError> {
        super::judge(&Query::parse(&wire)?, &facts)
    }

    fn q(conn: &str, leaves: Vec<Value>) -> Value {
        Value::Array(vec![s(conn), Value::Array(leaves)])
    }

    fn leaf(key: &str, v: Value) -> Value {
        Value::Array(vec![s(key), v])
    }

    #[test]
    fn trees_as_func_serializes_them() {
        let debian2 = q(
            "AND",
            vec![leaf("os", s("Debian")), leaf("num_cpus__gte", s("2"))],
        );
        let (ok, seen) = judge(debian2).unwrap();
        assert!(ok);
        assert_eq!(seen.get("num_cpus"), Some(&Value::Integer(2)));
        assert!(
            !judge(q(
                "AND",
                vec![leaf("os", s("Debian")), leaf("num_cpus__gt", s("2"))]
            ))
            .unwrap()
            .0
        );
        assert!(
            judge(q(
                "OR",
                vec![leaf("os", s("Fedora")), leaf("num_cpus__gt", s("1"))]
            ))
            .unwrap()
            .0
        );
        let not = Value::Array(vec![s("NOT"), q("AND", vec![leaf("os", s("Debian"))])]);
        assert!(!judge(not).unwrap().0);
        // Func's run-level test: two keywords on one fact, one leaf of pairs.
        let pairs = q(
            "AND",
            vec![Value::Array(vec![
                s("hardware.run_level__lt"),
                Value::Integer(6),
                s("hardware.run_level__gt"),
                Value::Integer(2),
            ])],
        );
        assert!(judge(pairs).unwrap().0);
        // Nested: (os = Debian) AND NOT (num_cpus > 8 OR os = Fedora).
        let nested = q(
            "AND",
            vec![
                leaf("os", s("Debian")),
                Value::Array(vec![
                    s("NOT"),
                    q("OR", vec![leaf("num_cpus__gt", s("8")), leaf("os", s("Fedora"))]),
                ]),
            ],
        );
        assert!(judge(nested).unwrap().0);
        assert!(judge(q("AND", vec![leaf("ipv4__glob", s("10.0.*"))])).unwrap().0);
        assert!(!judge(q("AND", vec![leaf("ipv4", s("10.9.9.9"))])).unwrap().0);
    }

    #[test]
    fn bad_queries_are_errors_not_verdicts() {
        assert_eq!(
            judge(q("AND", vec![leaf("nosuch", s("x"))])).unwrap_err(),
            QueryError::UnknownFact("nosuch".into())
        );
        assert_eq!(
            judge(q("AND", vec![leaf("os__near", s("x"))])).unwrap_err(),
            QueryError::UnknownKeyword("near".into())
        );
        assert!(matches!(
            judge(q("AND", vec![leaf("num_cpus__gt", s("many"))])).unwrap_err(),
            QueryError::Type { .. }
        ));
        assert!(matches!(
            judge(s("os=Debian")).unwrap_err(),
            QueryError::Parse(ParseError::Shape(_))
        ));
        let mut deep = q("AND", vec![leaf("os", s("Debian"))]);
        for _ in 0..40 {
            deep = Value::Array(vec![s("NOT"), deep]);
        }
        assert_eq!(judge(deep).unwrap_err(), QueryError::Parse(ParseError::TooBig));
    }
}
