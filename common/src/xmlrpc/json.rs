//! XML-RPC values to and from JSON, for the doors that speak JSON (the
//! API, func-transmit, `--json`) and the stores that keep typed arguments
//! as JSON text.

use crate::Value;

/// An XML-RPC value as JSON: numbers, strings, lists, objects, `null`;
/// binary as base64 text, dates as their XML-RPC text.
pub fn to_json(value: &Value) -> serde_json::Value {
    use serde_json::Value as J;
    match value {
        Value::Integer(i) => J::from(*i),
        Value::Long(l) => J::from(*l),
        Value::Double(d) => serde_json::Number::from_f64(*d)
            .map(J::Number)
            .unwrap_or_else(|| J::String(d.to_string())),
        Value::Boolean(b) => J::Bool(*b),
        Value::String(s) => J::String(s.clone()),
        Value::DateTime(d) => J::String(d.to_string()),
        Value::Base64(b) => J::String(base64(b)),
        Value::Array(items) => J::Array(items.iter().map(to_json).collect()),
        Value::Struct(m) => J::Object(m.iter().map(|(k, v)| (k.clone(), to_json(v))).collect()),
        _ => J::Null,
    }
}

/// [`to_json`] that [`from_json`] reads back as the same types: binary
/// and dates [`tagged`] (a relay request's arguments: the relay calls its
/// hosts with what the overlord was given).
pub fn to_tagged_json(value: &Value) -> serde_json::Value {
    use serde_json::Value as J;
    match value {
        Value::DateTime(d) => serde_json::json!({ "__datetime__": d.to_string() }),
        Value::Base64(b) => serde_json::json!({ "__base64__": base64(b) }),
        Value::Array(items) => J::Array(items.iter().map(to_tagged_json).collect()),
        Value::Struct(m) => J::Object(m.iter().map(|(k, v)| (k.clone(), to_tagged_json(v))).collect()),
        other => to_json(other),
    }
}

/// The two XML-RPC types JSON lacks, tagged as drop-in modules write them
/// (docs/MODULES.md): `{"__base64__": TEXT}` and `{"__datetime__": TEXT}`.
/// `None` for any other object; an error for a tag whose text is not one.
pub fn tagged(map: &serde_json::Map<String, serde_json::Value>) -> Option<Result<Value, String>> {
    use base64::Engine as _;
    let (tag, serde_json::Value::String(text)) = map.iter().next().filter(|_| map.len() == 1)? else {
        return None;
    };
    Some(match tag.as_str() {
        "__base64__" => base64::engine::general_purpose::STANDARD
            .decode(text.split_ascii_whitespace().collect::<String>())
            .map(Value::Base64)
            .map_err(|e| format!("__base64__ is not base64: {e}")),
        "__datetime__" => text
            .trim()
            .parse()
            .map(Value::DateTime)
            .map_err(|_| "__datetime__ is not an XML-RPC dateTime (like 20261126T04:05:06)".to_string()),
        _ => return None,
    })
}

/// A JSON value as an XML-RPC value (typed arguments): whole numbers as
/// `<int>` or, beyond 32 bits, `<i8>`; other numbers `<double>`; `null`
/// as `<nil/>`; objects as structs, but the [`tagged`] base64 and
/// dateTime (checked by the gate first).
pub fn from_json(value: &serde_json::Value) -> Value {
    use serde_json::Value as J;
    match value {
        J::Null => Value::Nil,
        J::Bool(b) => Value::Boolean(*b),
        J::Number(n) => match n.as_i64() {
            Some(i) => crate::xmlrpc::int(i),
            None => Value::Double(n.as_f64().unwrap_or(f64::NAN)),
        },
        J::String(s) => Value::String(s.clone()),
        J::Array(items) => Value::Array(items.iter().map(from_json).collect()),
        J::Object(m) => match tagged(m) {
            Some(Ok(v)) => v,
            _ => Value::Struct(m.iter().map(|(k, v)| (k.clone(), from_json(v))).collect()),
        },
    }
}

fn base64(data: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tagged_json_reads_back_as_the_same_types() {
        let value = Value::Array(vec![
            Value::Base64(vec![0, 1, 2]),
            Value::DateTime("20261127T10:11:12".parse().unwrap()),
            Value::Struct(
                [("k".to_string(), Value::Base64(b"hi".to_vec()))]
                    .into_iter()
                    .collect(),
            ),
            Value::String("aGk=".into()),
            Value::Integer(7),
            Value::Double(1.5),
        ]);
        assert_eq!(from_json(&to_tagged_json(&value)), value);
        // The untagged form is for people: binary becomes text.
        assert_ne!(from_json(&to_json(&value)), value);
    }
}
