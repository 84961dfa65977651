//! A request object read with every key once, for the doors that read a
//! request document themselves (`func transmit`, `func-transmit`; func-api's
//! typed bodies refuse a repeated field through serde). A key given twice
//! is refused: a proxy or a log that kept the first value and a door that
//! kept the last would not be judging the same request.

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::{Map, Value};

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
                            "the key {:?} is given twice",
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

/// The key given twice in JSON `text`'s top-level object, if one is.
pub fn repeated_in_json(text: &str) -> Option<String> {
    match serde_json::from_str::<UniqueKeys>(text) {
        Err(e) if e.to_string().contains("is given twice") => Some(e.to_string()),
        _ => None,
    }
}

/// The key given twice in YAML `text`'s top-level mapping, if one is.
pub fn repeated_in_yaml(text: &str) -> Option<String> {
    match yaml_serde::from_str::<UniqueKeys>(text) {
        Err(e) if e.to_string().contains("is given twice") => Some(e.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_given_twice_is_found_in_json_and_yaml() {
        let e = repeated_in_json(r#"{"clients": "m1", "method": "ping", "clients": "*"}"#).unwrap();
        assert!(e.contains(r#"the key "clients" is given twice"#), "{e}");
        assert!(repeated_in_json(r#"{"clients": "m1", "parameters": [{"a": 1}, {"a": 2}]}"#).is_none());
        assert!(repeated_in_json("[1]").is_none());
        let e = repeated_in_yaml("clients: m1\nmethod: ping\nclients: '*'\n");
        // yaml_serde may refuse a duplicate key itself; either way it is found.
        assert!(e.is_some() || yaml_serde::from_str::<Value>("clients: m1\nclients: '*'\n").is_err());
    }
}
