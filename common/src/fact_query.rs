//! Func's fact query on the wire (DESIGN §16): the first argument
//! `{"__fact__": QUERY}` of a call, Func's serialized `Q` tree —
//! `["AND", [["os", "Debian"], ["num_cpus__gte", 2]]]`, `["OR", […]]`,
//! `["NOT", ["AND", […]]]`, where a leaf is a list of `KEY, VALUE` pairs
//! (ANDed). Parsed into a bounded [`Query`] by the overlord (which sends
//! it) and by funcd (which judges it: `minion::facts::query`).

use crate::Value;

/// Deepest nesting of a query, and most leaves: a query is a filter, not a
/// program.
pub const MAX_DEPTH: usize = 16;
pub const MAX_LEAVES: usize = 256;

/// A parsed query.
#[derive(Debug, Clone, PartialEq)]
pub enum Query {
    Leaf { key: String, value: Value },
    And(Vec<Query>),
    Or(Vec<Query>),
    Not(Box<Query>),
}

/// Why a query could not be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ParseError {
    #[error("not a fact query: {0}")]
    Shape(String),
    #[error("the fact query nests deeper than {MAX_DEPTH} levels or has more than {MAX_LEAVES} terms")]
    TooBig,
}

impl Query {
    /// Reads Func's serialized form.
    pub fn parse(wire: &Value) -> Result<Query, ParseError> {
        let mut leaves = 0;
        parse_node(wire, 0, &mut leaves)
    }

    /// Func's serialized form again.
    pub fn wire(&self) -> Value {
        let text = |s: &str| Value::String(s.to_string());
        match self {
            Query::Leaf { key, value } => Value::Array(vec![text(key), value.clone()]),
            Query::And(terms) => Value::Array(vec![
                text("AND"),
                Value::Array(terms.iter().map(Query::wire).collect()),
            ]),
            Query::Or(terms) => Value::Array(vec![
                text("OR"),
                Value::Array(terms.iter().map(Query::wire).collect()),
            ]),
            Query::Not(inner) => Value::Array(vec![text("NOT"), inner.wire()]),
        }
    }
}

fn connector(text: &str) -> Option<bool> {
    match text {
        "AND" => Some(true),
        "OR" => Some(false),
        _ => None,
    }
}

fn parse_node(wire: &Value, depth: usize, leaves: &mut usize) -> Result<Query, ParseError> {
    if depth > MAX_DEPTH {
        return Err(ParseError::TooBig);
    }
    let Value::Array(items) = wire else {
        return Err(ParseError::Shape("a query is a list".into()));
    };
    match items.as_slice() {
        [Value::String(not), inner] if not == "NOT" => {
            Ok(Query::Not(Box::new(parse_node(inner, depth + 1, leaves)?)))
        }
        [Value::String(conn), Value::Array(children)] if connector(conn).is_some() => {
            // Every node counts against the bound, and an empty one means
            // nothing (Func never sent one).
            *leaves += 1;
            if *leaves > MAX_LEAVES {
                return Err(ParseError::TooBig);
            }
            if children.is_empty() {
                return Err(ParseError::Shape(format!("an empty {conn}")));
            }
            let terms = children
                .iter()
                .map(|c| parse_node(c, depth + 1, leaves))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(if connector(conn) == Some(true) {
                Query::And(terms)
            } else {
                Query::Or(terms)
            })
        }
        // KEY, VALUE pairs, ANDed (Func's leaf).
        [Value::String(_), _, ..] if items.len() % 2 == 0 => {
            let mut pairs = Vec::new();
            for pair in items.chunks(2) {
                let Value::String(key) = &pair[0] else {
                    return Err(ParseError::Shape("a fact's name is a string".into()));
                };
                *leaves += 1;
                if *leaves > MAX_LEAVES {
                    return Err(ParseError::TooBig);
                }
                if matches!(key.as_str(), "AND" | "OR" | "NOT") {
                    return Err(ParseError::Shape(format!("{key} needs a query after it")));
                }
                if key.is_empty() || key.len() > 200 {
                    return Err(ParseError::Shape("a fact's name is 1 to 200 characters".into()));
                }
                pairs.push(Query::Leaf {
                    key: key.clone(),
                    value: pair[1].clone(),
                });
            }
            Ok(match pairs.len() {
                1 => pairs.remove(0),
                _ => Query::And(pairs),
            })
        }
        _ => Err(ParseError::Shape(
            "expected [\"AND\"|\"OR\", [...]], [\"NOT\", query] or [KEY, VALUE, ...]".into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(t: &str) -> Value {
        Value::String(t.into())
    }

    /// Func's test_deserialize: queries built at random (connectors, NOTs,
    /// three facts each, chained), serialized, read back and serialized
    /// again come out the same.
    #[test]
    fn funcs_serialized_queries_read_back_the_same() {
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        for _ in 0..100 {
            let mut chain: Option<Query> = None;
            for _ in 0..1 + next(5) {
                let leaves: Vec<Query> = (0..3)
                    .map(|_| Query::Leaf {
                        key: ((b'a' + next(26) as u8) as char).to_string(),
                        value: Value::Boolean(next(2) == 0),
                    })
                    .collect();
                let mut q = if next(2) == 0 {
                    Query::And(leaves)
                } else {
                    Query::Or(leaves)
                };
                if next(2) == 0 {
                    q = Query::Not(Box::new(q));
                }
                chain = Some(match chain {
                    None => q,
                    Some(prev) if next(2) == 0 => Query::Or(vec![q, prev]),
                    Some(prev) => Query::And(vec![q, prev]),
                });
            }
            let query = chain.unwrap();
            let wire = query.wire();
            let back = Query::parse(&wire).unwrap();
            assert_eq!(back.wire(), wire);
            assert_eq!(back, query);
        }
    }

    #[test]
    fn what_is_not_a_query() {
        for bad in [
            s("os=Debian"),
            Value::Array(vec![]),
            Value::Array(vec![s("AND"), s("os")]),
            Value::Array(vec![s("os")]),
            Value::Array(vec![Value::Integer(1), s("x")]),
            Value::Array(vec![s("AND"), Value::Array(vec![])]),
        ] {
            assert!(matches!(Query::parse(&bad), Err(ParseError::Shape(_))), "{bad:?}");
        }
        let many = Value::Array(
            (0..=MAX_LEAVES)
                .flat_map(|i| [s(&format!("k{i}")), Value::Integer(1)])
                .collect(),
        );
        assert_eq!(Query::parse(&many), Err(ParseError::TooBig));
        // Nodes count too, not only leaves.
        let leaf = Value::Array(vec![s("k"), Value::Integer(1)]);
        let nested = Value::Array(vec![
            s("AND"),
            Value::Array(
                (0..=MAX_LEAVES)
                    .map(|_| Value::Array(vec![s("OR"), Value::Array(vec![leaf.clone()])]))
                    .collect(),
            ),
        ]);
        assert_eq!(Query::parse(&nested), Err(ParseError::TooBig));
    }
}
