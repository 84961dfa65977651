//! A request object read with every key once, for the doors that read a
//! request document themselves (`func transmit`, `func-transmit`; func-api's
//! typed bodies refuse a repeated field through serde). A key given twice
//! is refused: a proxy or a log that kept the first value and a door that
//! kept the last would not be judging the same request.

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::{Map, Value};

use super::GateError;

/// The top-level keys of a request, each once.
pub struct UniqueKeys(pub Map<String, Value>);

impl<'de> Deserialize<'de> for UniqueKeys {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Keys;
        impl<'de> Visitor<'de> for Keys {
            type Value = UniqueKeys;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a mapping of keys to values")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<UniqueKeys, A::Error> {
                let mut out = Map::new();
                while let Some((k, v)) = m.next_entry::<String, Value>()? {
                    if out.contains_key(&k) {
                        return Err(serde::de::Error::custom(format!(
                            "the key {:?} {TWICE}",
                            common::paths::shorten(&k)
                        )));
                    }
                    out.insert(k, v);
                }
                Ok(UniqueKeys(out))
            }
        }
        d.deserialize_map(Keys)
    }
}

/// Why a request document could not be read.
pub enum Unread {
    /// Not JSON (or YAML) at all: the parser's words.
    Syntax(String),
    /// A top-level key is given twice.
    Repeated(String),
}

const TWICE: &str = "is given twice";

/// JSON `text`, each top-level key once: one parse for an object (a
/// request), a second only to describe a document that is not one.
pub fn json(text: &str) -> Result<Value, Unread> {
    read(serde_json::from_str::<UniqueKeys>(text), || {
        serde_json::from_str(text)
    })
}

/// YAML `text`, as [`json`].
pub fn yaml(text: &str) -> Result<Value, Unread> {
    read(yaml_serde::from_str::<UniqueKeys>(text), || {
        yaml_serde::from_str(text)
    })
}

fn read<E: std::fmt::Display>(
    unique: Result<UniqueKeys, E>,
    any: impl FnOnce() -> Result<Value, E>,
) -> Result<Value, Unread> {
    match unique {
        Ok(UniqueKeys(map)) => Ok(Value::Object(map)),
        Err(e) if e.to_string().contains(TWICE) => Err(Unread::Repeated(e.to_string())),
        Err(_) => any().map_err(|e| Unread::Syntax(e.to_string())),
    }
}

/// A request object's values read by key, for the doors that read a
/// request document themselves. Each refusal names the key and says what
/// was given by its kind ([`kind`]), never echoing a value whole.
pub struct Fields<'a>(pub &'a Map<String, Value>);

impl Fields<'_> {
    /// A string, or a number as its text (the gate reads numbers).
    pub fn text(&self, key: &str) -> Result<Option<String>, GateError> {
        match self.0.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(Value::Number(n)) => Ok(Some(n.to_string())),
            Some(other) => Err(invalid(key, "a string or a number", other)),
        }
    }

    /// A string only: names, SPECs and job ids (a number is not one).
    pub fn name(&self, key: &str) -> Result<Option<String>, GateError> {
        match self.0.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(invalid(key, "a string", other)),
        }
    }

    /// `true` or `false` (absent: false).
    pub fn flag(&self, key: &str) -> Result<bool, GateError> {
        match self.0.get(key) {
            None | Some(Value::Null) => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(other) => Err(invalid(key, "true or false", other)),
        }
    }
}

/// `"key" must be WHAT, not KIND`.
fn invalid(key: &str, what: &str, given: &Value) -> GateError {
    GateError::Invalid(format!("{key:?} must be {what}, not {}", kind(given)))
}

/// What a request value is, for an error message (the value itself may be
/// large: it is never echoed whole).
pub fn kind(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => common::paths::shorten(&n.to_string()),
        Value::String(s) => format!("the string {:?}", common::paths::shorten(s)),
        Value::Array(a) => format!("a list of {}", a.len()),
        Value::Object(o) => format!("a mapping of {} keys", o.len()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_given_twice_is_found_in_json_and_yaml() {
        let Err(Unread::Repeated(e)) = json(r#"{"clients": "m1", "method": "ping", "clients": "*"}"#) else {
            panic!("a repeated key was read")
        };
        assert!(e.contains(r#"the key "clients" is given twice"#), "{e}");
        assert!(json(r#"{"clients": "m1", "parameters": [{"a": 1}, {"a": 2}]}"#).is_ok());
        assert!(matches!(json("[1]"), Ok(Value::Array(_))));
        assert!(matches!(json("{"), Err(Unread::Syntax(_))));
        assert!(yaml("clients: m1\nmethod: ping\nclients: '*'\n").is_err());
        assert!(matches!(yaml("clients: m1\n"), Ok(Value::Object(_))));
    }
}
