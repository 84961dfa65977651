//! XML-RPC values ↔ the JSON drop-in modules read and print (docs/MODULES.md):
//! plain JSON for what JSON has (nil ↔ null), tagged objects for the two it
//! lacks — `{"__base64__": "..."}` and `{"__datetime__": "<dateTime text>"}`.
//! Numbers come back as `int` when they fit 32 bits, `i8` when they need 64,
//! `double` when written with a fraction or exponent.

use base64::Engine;
use common::Value;
use serde_json::{Map, Number, Value as Json};

/// Tag of base64 data in JSON.
pub const BASE64_TAG: &str = "__base64__";
/// Tag of a dateTime in JSON.
pub const DATETIME_TAG: &str = "__datetime__";

/// Why a module's JSON is not a value.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum JsonValueError {
    #[error("number {0} is outside XML-RPC's 64-bit integers")]
    Number(String),
    #[error("{tag} is not valid: {why}")]
    Tagged { tag: &'static str, why: String },
    #[error("it nests deeper than {MAX_DEPTH} levels")]
    TooDeep,
}

/// Deepest nesting of arrays and objects in a module's value (XML-RPC
/// spends three elements per level; the reply's limit is 256).
pub const MAX_DEPTH: usize = 64;

/// An upper bound of the number of values in JSON text, without parsing it:
/// one plus the commas, brackets and braces outside strings.
pub fn count_values(text: &[u8]) -> usize {
    let (mut count, mut in_string, mut escaped) = (1usize, false, false);
    for &b in text {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
        } else {
            match b {
                b'"' => in_string = true,
                b',' | b'[' | b'{' => count += 1,
                _ => {}
            }
        }
    }
    count
}

/// The JSON form of an XML-RPC value.
pub fn to_json(value: &Value) -> Json {
    match value {
        Value::Integer(i) => Json::from(*i),
        Value::Long(l) => Json::from(*l),
        Value::Boolean(b) => Json::Bool(*b),
        Value::String(s) => Json::String(s.clone()),
        // JSON has no NaN or infinity; serde_json writes them as null.
        Value::Double(d) => Number::from_f64(*d).map_or(Json::Null, Json::Number),
        Value::DateTime(dt) => tagged(DATETIME_TAG, dt.to_string()),
        Value::Base64(b) => tagged(BASE64_TAG, base64::engine::general_purpose::STANDARD.encode(b)),
        Value::Struct(s) => Json::Object(s.iter().map(|(k, v)| (k.clone(), to_json(v))).collect()),
        Value::Array(a) => Json::Array(a.iter().map(to_json).collect()),
        // Nil, and any variant a later dxr adds.
        _ => Json::Null,
    }
}

fn tagged(tag: &str, text: String) -> Json {
    let mut m = Map::new();
    m.insert(tag.to_string(), Json::String(text));
    Json::Object(m)
}

/// The XML-RPC value of a module's JSON.
pub fn from_json(json: &Json) -> Result<Value, JsonValueError> {
    from_json_at(json, 0)
}

fn from_json_at(json: &Json, depth: usize) -> Result<Value, JsonValueError> {
    if depth > MAX_DEPTH {
        return Err(JsonValueError::TooDeep);
    }
    let from_json = |j: &Json| from_json_at(j, depth + 1);
    Ok(match json {
        Json::Null => Value::Nil,
        Json::Bool(b) => Value::Boolean(*b),
        Json::String(s) => Value::String(s.clone()),
        Json::Number(n) => number(n)?,
        Json::Array(a) => Value::Array(a.iter().map(from_json).collect::<Result<_, _>>()?),
        Json::Object(m) => match single_tag(m) {
            Some((BASE64_TAG, text)) => Value::Base64(
                base64::engine::general_purpose::STANDARD
                    .decode(text.split_ascii_whitespace().collect::<String>())
                    .map_err(|e| JsonValueError::Tagged {
                        tag: BASE64_TAG,
                        why: e.to_string(),
                    })?,
            ),
            Some((DATETIME_TAG, text)) => {
                Value::DateTime(text.trim().parse().map_err(|_| JsonValueError::Tagged {
                    tag: DATETIME_TAG,
                    why: format!(
                        "{:?} is not an XML-RPC dateTime (like 20261123T21:05:00)",
                        common::paths::shorten(text)
                    ),
                })?)
            }
            _ => Value::Struct(
                m.iter()
                    .map(|(k, v)| Ok((k.clone(), from_json(v)?)))
                    .collect::<Result<_, JsonValueError>>()?,
            ),
        },
    })
}

/// `("__base64__" | "__datetime__", text)` when `m` is exactly one such tag
/// with a string value.
fn single_tag(m: &Map<String, Json>) -> Option<(&'static str, &str)> {
    if m.len() != 1 {
        return None;
    }
    let (k, v) = m.iter().next()?;
    let tag = [BASE64_TAG, DATETIME_TAG].into_iter().find(|t| t == k)?;
    Some((tag, v.as_str()?))
}

fn number(n: &Number) -> Result<Value, JsonValueError> {
    if let Some(i) = n.as_i64() {
        return Ok(i32::try_from(i).map_or(Value::Long(i), Value::Integer));
    }
    if n.is_u64() {
        return Err(JsonValueError::Number(n.to_string()));
    }
    n.as_f64()
        .map(Value::Double)
        .ok_or_else(|| JsonValueError::Number(n.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn every_type() -> Value {
        let mut s = std::collections::BTreeMap::new();
        s.insert("int".to_string(), Value::Integer(-2_147_483_648));
        s.insert("i8".to_string(), Value::Long(1 << 40));
        s.insert("double".to_string(), Value::Double(0.1));
        s.insert("whole double".to_string(), Value::Double(2.0));
        s.insert("bool".to_string(), Value::Boolean(false));
        s.insert("string".to_string(), Value::String("tab\t<&>\"'é✓ \n".into()));
        s.insert("empty".to_string(), Value::String(String::new()));
        s.insert("nil".to_string(), Value::Nil);
        s.insert("base64".to_string(), Value::Base64(vec![0, 255, 10, 13]));
        s.insert(
            "datetime".to_string(),
            Value::DateTime("20261123T21:05:07".parse().unwrap()),
        );
        s.insert(
            "array".to_string(),
            Value::Array(vec![Value::Array(vec![]), Value::Struct(Default::default())]),
        );
        Value::Struct(s)
    }

    #[test]
    fn every_type_survives_the_round_trip_through_json_text() {
        let v = every_type();
        let text = serde_json::to_string(&to_json(&v)).unwrap();
        let back = from_json(&serde_json::from_str(&text).unwrap()).unwrap();
        assert_eq!(back, v);
    }

    #[test]
    fn tags_and_numbers_read_as_documented() {
        let j: Json = serde_json::from_str(
            r#"[1, 4294967296, 1.5, 1e3, {"__base64__": "aGk=\n"}, {"__datetime__": "20261123T01:02:03"},
                {"__base64__": "x", "other": 1}, {"__datetime__": 5}]"#,
        )
        .unwrap();
        let Value::Array(a) = from_json(&j).unwrap() else {
            panic!()
        };
        assert_eq!(a[0], Value::Integer(1));
        assert_eq!(a[1], Value::Long(4_294_967_296));
        assert_eq!(a[2], Value::Double(1.5));
        assert_eq!(a[3], Value::Double(1000.0));
        assert_eq!(a[4], Value::Base64(b"hi".to_vec()));
        assert!(matches!(a[5], Value::DateTime(_)));
        assert!(matches!(a[6], Value::Struct(_)), "two keys: a plain struct");
        assert!(
            matches!(a[7], Value::Struct(_)),
            "a non-string tag value: a plain struct"
        );
    }

    #[test]
    fn values_are_counted_from_above_without_parsing() {
        assert_eq!(count_values(b"1"), 1);
        assert!(count_values(br#"[1, 2, {"a": [3]}]"#) >= 5);
        assert_eq!(
            count_values(br#""a,b,[{\",""#),
            1,
            "inside a string nothing counts"
        );
        let deep = format!("{}1{}", "[".repeat(70), "]".repeat(70));
        let j: Json = serde_json::from_str(&deep).unwrap();
        assert_eq!(from_json(&j), Err(JsonValueError::TooDeep));
        let ok = format!("{}1{}", "[".repeat(60), "]".repeat(60));
        assert!(from_json(&serde_json::from_str(&ok).unwrap()).is_ok());
    }

    #[test]
    fn what_xmlrpc_cannot_hold_is_an_error() {
        let big: Json = serde_json::from_str("18446744073709551615").unwrap();
        assert!(matches!(from_json(&big), Err(JsonValueError::Number(_))));
        let bad: Json = serde_json::from_str(r#"{"__base64__": "***"}"#).unwrap();
        assert!(matches!(from_json(&bad), Err(JsonValueError::Tagged { .. })));
        let bad: Json = serde_json::from_str(r#"{"__datetime__": "yesterday"}"#).unwrap();
        assert!(matches!(from_json(&bad), Err(JsonValueError::Tagged { .. })));
    }
}
