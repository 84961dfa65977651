//! Targeting by facts (DESIGN §16): `--filter 'os=Debian,num_cpus>=2'`
//! (every term holds), `--filteror 'os=Debian,os=Ubuntu'` (any term holds)
//! and Salt's `-G 'os_family:Debi*'` (a glob on one fact), as the same
//! typed [`Filter`] through every door (`"filter"`, `"filteror"`, `"grain"`
//! in `func transmit`, func-transmit and func-api). A term is `KEY OP
//! VALUE` with Func's operators `=`, `<`, `>`, `<=`, `>=`, `in` (contains)
//! and `ini` (contains, any case), or Func's own keyword form
//! (`runlevel__gt=2`). The minions judge it: [`Filter::wire`] is Func's
//! serialized query (`["AND", [["os", "Debian"], ["num_cpus__gte", "2"]]]`),
//! the first argument `{"__fact__": QUERY}` Func's overlord sent.

use crate::fact_query::Query;
use crate::Value;

/// Why a filter cannot be read (the gate's `Invalid`: a usage error).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Invalid(pub String);

/// Longest filter text, and most terms in all.
pub const MAX_TEXT: usize = 4096;
pub const MAX_TERMS: usize = 64;

/// Func's keywords a key may carry after `__`.
const KEYWORDS: &[&str] = &[
    "contains",
    "icontains",
    "iexact",
    "startswith",
    "gt",
    "gte",
    "lt",
    "lte",
    "glob",
];

/// One term: a fact (with Func's keyword) and the value it is compared with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Term {
    /// `NAME` or `NAME__KEYWORD`.
    pub key: String,
    pub value: String,
}

/// A checked filter.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Filter {
    /// `--filter`: every term holds.
    pub all: Vec<Term>,
    /// `--filteror`: at least one term holds.
    pub any: Vec<Term>,
    /// `-G`: a glob on one fact.
    pub grain: Option<Term>,
    /// `--fact-query`: Func's serialized query as such (the Python API's
    /// `filter`, `filter_or`, ... build it, as Func's overlord did).
    pub query: Option<Query>,
}

impl Filter {
    /// The filter of a request, `None` when it gives none.
    pub fn parse(
        filter: Option<&str>,
        filteror: Option<&str>,
        grain: Option<&str>,
        query: Option<&serde_json::Value>,
    ) -> Result<Option<Filter>, Invalid> {
        let all = terms("filter", filter)?;
        let any = terms("filteror", filteror)?;
        let grain = grain.map(grain_term).transpose()?;
        if all.len() + any.len() + usize::from(grain.is_some()) > MAX_TERMS {
            return Err(Invalid(format!("a filter has at most {MAX_TERMS} terms")));
        }
        let query = query
            .map(|q| {
                let wire = wire_value(q, 0)?;
                Query::parse(&wire).map_err(|e| Invalid(format!("fact_query: {e}")))
            })
            .transpose()?;
        let given = !all.is_empty() || !any.is_empty() || grain.is_some() || query.is_some();
        Ok(given.then_some(Filter {
            all,
            any,
            grain,
            query,
        }))
    }

    /// Func's serialized query: `--filter`'s terms ANDed, `--filteror`'s
    /// ORed, `-G`'s glob, all three ANDed together.
    pub fn wire(&self) -> Value {
        let text = |s: &str| Value::String(s.to_string());
        let leaf = |t: &Term| Value::Array(vec![text(&t.key), text(&t.value)]);
        let group = |conn: &str, terms: &[Term]| {
            Value::Array(vec![text(conn), Value::Array(terms.iter().map(leaf).collect())])
        };
        let mut parts = Vec::new();
        if !self.all.is_empty() {
            parts.push(group("AND", &self.all));
        }
        if !self.any.is_empty() {
            parts.push(group("OR", &self.any));
        }
        if let Some(g) = &self.grain {
            parts.push(group("AND", std::slice::from_ref(g)));
        }
        if let Some(q) = &self.query {
            parts.push(q.wire());
        }
        match parts.len() {
            1 => parts.remove(0),
            _ => Value::Array(vec![text("AND"), Value::Array(parts)]),
        }
    }

    /// The filter in words, for messages and job listings.
    pub fn describe(&self) -> String {
        let show = |t: &Term| format!("{}={}", t.key, t.value);
        let mut parts = Vec::new();
        if !self.all.is_empty() {
            parts.push(format!(
                "--filter '{}'",
                self.all.iter().map(show).collect::<Vec<_>>().join(",")
            ));
        }
        if !self.any.is_empty() {
            parts.push(format!(
                "--filteror '{}'",
                self.any.iter().map(show).collect::<Vec<_>>().join(",")
            ));
        }
        if let Some(g) = &self.grain {
            let name = g.key.trim_end_matches("__glob");
            parts.push(format!("-G '{name}:{}'", g.value));
        }
        if self.query.is_some() {
            parts.push("a fact query".into());
        }
        parts.join(" ")
    }
}

/// `--fact-query JSON` read (the query itself is checked by [`Filter::parse`]).
pub fn query_text(text: Option<&str>) -> Result<Option<serde_json::Value>, Invalid> {
    text.map(|t| serde_json::from_str(t).map_err(|e| Invalid(format!("fact_query is not JSON: {e}"))))
        .transpose()
}

/// A JSON fact query as the XML-RPC value it is sent as: strings, numbers,
/// booleans and lists (Func's form has no structs or nulls).
fn wire_value(json: &serde_json::Value, depth: usize) -> Result<Value, Invalid> {
    use serde_json::Value as J;
    if depth > crate::fact_query::MAX_DEPTH * 2 + 2 {
        return Err(Invalid("fact_query: nests too deep".into()));
    }
    Ok(match json {
        J::String(s) => {
            check_text("fact_query", s)?;
            Value::String(s.clone())
        }
        J::Bool(b) => Value::Boolean(*b),
        J::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => crate::xmlrpc::int(i),
            (None, Some(f)) => Value::Double(f),
            _ => return Err(Invalid("fact_query: a number out of range".into())),
        },
        J::Array(items) => Value::Array(
            items
                .iter()
                .map(|i| wire_value(i, depth + 1))
                .collect::<Result<_, _>>()?,
        ),
        J::Null | J::Object(_) => {
            return Err(Invalid(
                "fact_query: Func's serialized query is lists, strings, numbers and booleans".into(),
            ))
        }
    })
}

fn check_text(what: &str, text: &str) -> Result<(), Invalid> {
    if text.len() > MAX_TEXT {
        return Err(Invalid(format!("{what}: at most {MAX_TEXT} characters")));
    }
    if text.chars().any(char::is_control) {
        return Err(Invalid(format!("{what}: control characters are not allowed")));
    }
    Ok(())
}

fn terms(what: &str, text: Option<&str>) -> Result<Vec<Term>, Invalid> {
    let Some(text) = text else { return Ok(Vec::new()) };
    check_text(what, text)?;
    if text.trim().is_empty() {
        return Err(Invalid(format!("{what}: empty (KEY=VALUE[,KEY>=VALUE...])")));
    }
    text.split(',').map(|t| term(what, t.trim())).collect()
}

/// `KEY OP VALUE`.
fn term(what: &str, text: &str) -> Result<Term, Invalid> {
    let bad = |why: &str| {
        Invalid(format!(
            "{what} {:?}: {why} (KEY=VALUE, KEY<VALUE, KEY>=VALUE, 'KEY in VALUE', 'KEY ini VALUE', or KEY__gt=VALUE)",
            crate::paths::shorten(text)
        ))
    };
    // Words first: `kernel in el8`, `os ini deb`.
    let words: Vec<&str> = text.splitn(3, char::is_whitespace).collect();
    let (key, keyword, value) = match words.as_slice() {
        [key, "in", value] => (*key, "contains", value.trim()),
        [key, "ini", value] => (*key, "icontains", value.trim()),
        _ => {
            let at = text.find(['=', '<', '>']).ok_or_else(|| bad("no operator"))?;
            let (key, rest) = text.split_at(at);
            // `role==web` matched nothing (a value `=web`): say so.
            if rest.starts_with("==")
                || rest.starts_with("!=")
                || rest.starts_with("=<")
                || rest.starts_with("=>")
            {
                return Err(bad(&format!(
                    "{:?} is no operator: equality is '=' (then <, >, <=, >=)",
                    &rest[..2]
                )));
            }
            let (op, value) = [">=", "<=", "=", "<", ">"]
                .iter()
                .find_map(|op| rest.strip_prefix(op).map(|v| (*op, v)))
                .ok_or_else(|| bad("no operator"))?;
            let keyword = match op {
                ">=" => "gte",
                "<=" => "lte",
                "<" => "lt",
                ">" => "gt",
                _ => "",
            };
            (key.trim(), keyword, value.trim())
        }
    };
    let (name, given) = key.split_once("__").unwrap_or((key, ""));
    if name.is_empty()
        || name.len() > 128
        || !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b))
    {
        return Err(bad("a fact's name is letters, digits, '_', '.' and '-'"));
    }
    let keyword = match (given, keyword) {
        ("", k) => k,
        (k, "") if KEYWORDS.contains(&k) => k,
        (k, "") => {
            return Err(bad(&format!(
                "unknown keyword __{k} (one of {})",
                KEYWORDS.join(", ")
            )))
        }
        _ => return Err(bad("a keyword and an operator other than '=' together")),
    };
    if value.is_empty() {
        return Err(bad("no value"));
    }
    Ok(Term {
        key: if keyword.is_empty() {
            name.to_string()
        } else {
            format!("{name}__{keyword}")
        },
        value: value.to_string(),
    })
}

/// Salt's `-G KEY:GLOB` (the first `:` ends the key).
fn grain_term(text: &str) -> Result<Term, Invalid> {
    check_text("grain", text)?;
    let (key, glob) = text.split_once(':').ok_or_else(|| {
        Invalid(format!(
            "grain {:?}: expected KEY:GLOB (os_family:Debian*)",
            crate::paths::shorten(text)
        ))
    })?;
    let key = key.trim();
    if key.is_empty()
        || key.len() > 128
        || !key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b))
    {
        return Err(Invalid(format!("grain: {key:?} is not a fact's name")));
    }
    glob::Pattern::new(glob).map_err(|e| Invalid(format!("grain: bad glob {glob:?}: {e}")))?;
    Ok(Term {
        key: format!("{key}__glob"),
        value: glob.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(f: Option<&str>, o: Option<&str>, g: Option<&str>) -> Filter {
        Filter::parse(f, o, g, None).unwrap().unwrap()
    }

    fn refused(f: &str) -> String {
        match Filter::parse(Some(f), None, None, None) {
            Err(Invalid(why)) => why,
            other => panic!("{f}: {other:?}"),
        }
    }

    #[test]
    fn funcs_operators_and_keywords_become_funcs_query() {
        let f = parse(
            Some("os=Debian, num_cpus>=2,mem_total<4096,kernel in 6.1,os ini deb,runlevel__gt=2"),
            None,
            None,
        );
        let keys: Vec<&str> = f.all.iter().map(|t| t.key.as_str()).collect();
        assert_eq!(
            keys,
            [
                "os",
                "num_cpus__gte",
                "mem_total__lt",
                "kernel__contains",
                "os__icontains",
                "runlevel__gt"
            ]
        );
        let s = |t: &str| Value::String(t.into());
        assert_eq!(
            parse(Some("os=Debian"), None, None).wire(),
            Value::Array(vec![
                s("AND"),
                Value::Array(vec![Value::Array(vec![s("os"), s("Debian")])])
            ])
        );
        let both = parse(
            Some("os=Debian"),
            Some("role=web,role=db"),
            Some("os_family:Deb*"),
        );
        let Value::Array(top) = both.wire() else { panic!() };
        assert_eq!(top[0], s("AND"));
        assert!(matches!(&top[1], Value::Array(parts) if parts.len() == 3));
        assert_eq!(both.grain.unwrap().key, "os_family__glob");
        assert_eq!(Filter::parse(None, None, None, None).unwrap(), None);
        // Func's own serialized query, as the Python API sends it.
        let q = serde_json::json!(["OR", [["role", "web"], ["NOT", ["AND", [["num_cpus__gt", 8]]]]]]);
        let f = Filter::parse(None, None, None, Some(&q)).unwrap().unwrap();
        assert_eq!(crate::values::to_json(&f.wire()), q);
        for bad in [
            serde_json::json!({"os": "x"}),
            serde_json::json!("os=x"),
            serde_json::json!(["AND", "os"]),
        ] {
            assert!(Filter::parse(None, None, None, Some(&bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn bad_filters_say_what_is_wrong() {
        assert!(refused("os").contains("no operator"));
        assert!(refused("os=").contains("no value"));
        assert!(refused("o s=x").contains("a fact's name"));
        assert!(refused("os__near=x").contains("unknown keyword __near"));
        assert!(refused("os__gt>=x").contains("a keyword and an operator"));
        assert!(
            refused("role==web").contains("equality is '='"),
            "{}",
            refused("role==web")
        );
        assert!(refused("").contains("empty"));
        assert!(refused("os=\u{1b}[2J").contains("control characters"));
        assert!(Filter::parse(None, None, Some("os_family"), None).is_err());
        assert!(Filter::parse(None, None, Some("os:["), None).is_err());
        let many = vec!["a=1"; MAX_TERMS + 1].join(",");
        assert!(refused(&many).contains("at most"));
    }
}
