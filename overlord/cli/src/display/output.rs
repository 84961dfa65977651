//! Showing results: one block per host, sorted, errors marked (human), or
//! one JSON document `{host: result}` (`--json`). The exit status is 0 when
//! every host succeeded and 1 when any failed: a `REMOTE_ERROR`, or what the
//! method's own rule calls a failure (`common::outcome`: a non-zero exit
//! status of `command.run`), marked `FAILED: …` under its block.
//!
//! Text from a minion is data, never terminal control: in human and `txt`
//! output every string and key goes through [`shown`] (C0 controls but tab,
//! CR, DEL, C1 controls such as U+009B CSI, bidi overrides, zero-width and
//! line-separator characters become `\u{..}` escapes), and a line break
//! inside a value is either indented under its host or escaped, so only
//! host headers start a line. JSON and YAML documents keep their format's
//! escapes and also write those characters as `\uXXXX` ([`json_safe`]):
//! the same document to a parser, inert on a terminal.
use std::collections::BTreeMap;
use std::fmt::Write as _;

use common::xmlrpc::is_remote_error;
use common::Value;

pub use overlord::out::{error_line, hazard, shown, shown_line, Format};
pub use overlord::values::{from_json, to_json};

/// A JSON or YAML document's text with every [`hazard`] that is not
/// already escaped written as `\uXXXX` (they can only be inside strings,
/// so the document means the same).
pub fn json_safe(text: String) -> String {
    if !text.chars().any(hazard) {
        return text;
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if hazard(c) {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                let _ = write!(out, "\\u{:04x}", unit);
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Human-readable blocks of `method`'s results.
pub fn human(method: &str, results: &BTreeMap<String, Value>) -> String {
    let mut out = String::new();
    for host in overlord::values::natural(results.keys()) {
        let value = &results[host];
        let _ = writeln!(out, "{host}:");
        if is_remote_error(value) {
            let _ = writeln!(out, "    {}", error_line(value));
        } else {
            render(value, 1, &mut out);
            if let Some(why) = common::outcome::failure(method, value) {
                let _ = writeln!(out, "    FAILED: {why}");
            }
        }
    }
    out
}

fn scalar(value: &Value) -> Option<String> {
    Some(match value {
        Value::Integer(i) => i.to_string(),
        Value::Long(l) => l.to_string(),
        Value::Double(d) => d.to_string(),
        Value::Boolean(b) => b.to_string(),
        Value::String(s) if s.is_empty() => "\"\"".into(),
        Value::String(s) if !s.trim_end_matches('\n').contains('\n') => {
            shown(s.trim_end_matches('\n')).into_owned()
        }
        Value::DateTime(d) => d.to_string(),
        Value::Base64(b) => format!("<{} bytes of binary data>", b.len()),
        Value::Nil => "None".into(),
        Value::Array(a) if a.is_empty() => "[]".into(),
        Value::Struct(s) if s.is_empty() => "{}".into(),
        _ => return None,
    })
}

fn render(value: &Value, depth: usize, out: &mut String) {
    let pad = "    ".repeat(depth);
    if let Some(s) = scalar(value) {
        let _ = writeln!(out, "{pad}{s}");
        return;
    }
    match value {
        Value::String(s) => {
            // Every line indented under the host: none can pass for a header.
            for line in s.lines() {
                let _ = writeln!(out, "{pad}{}", shown(line));
            }
        }
        Value::Array(items) => {
            for item in items {
                match scalar(item) {
                    Some(s) => {
                        let _ = writeln!(out, "{pad}- {s}");
                    }
                    None => {
                        let _ = writeln!(out, "{pad}-");
                        render(item, depth + 1, out);
                    }
                }
            }
        }
        Value::Struct(members) => {
            for (k, item) in members {
                let k = shown_line(k);
                match scalar(item) {
                    Some(s) => {
                        let _ = writeln!(out, "{pad}{k}: {s}");
                    }
                    None => {
                        let _ = writeln!(out, "{pad}{k}:");
                        render(item, depth + 1, out);
                    }
                }
            }
        }
        _ => {}
    }
}

/// `{host: result}` in `format`.
pub fn results_as(format: Format, results: &BTreeMap<String, Value>) -> String {
    match format {
        Format::Json => json_safe(json(results)),
        Format::Yaml => json_safe(yaml(&serde_json::Value::Object(
            results.iter().map(|(h, v)| (h.clone(), to_json(v))).collect(),
        ))),
        Format::Xmlrpc => xmlrpc(Value::Struct(results.clone().into_iter().collect())),
        Format::Txt => {
            let mut out = String::new();
            for host in overlord::values::natural(results.keys()) {
                let _ = writeln!(out, "{}: {}", shown_line(host), txt(&to_json(&results[host])));
            }
            out.trim_end().to_string()
        }
    }
}

/// A document in `format` (`txt` prints it as compact JSON on one line).
pub fn doc_as(format: Format, doc: &serde_json::Value) -> String {
    match format {
        Format::Xmlrpc => xmlrpc(from_json(doc)),
        Format::Json => json_safe(serde_json::to_string_pretty(doc).unwrap_or_default()),
        Format::Yaml => json_safe(yaml(doc)),
        Format::Txt => json_safe(doc.to_string()),
    }
}

/// Prints `rows` (the first the header) as aligned columns, each cell
/// terminal-safe and on one line.
pub fn print_table<const N: usize>(rows: &mut [[String; N]]) {
    for row in rows.iter_mut() {
        for cell in row.iter_mut() {
            *cell = shown_line(cell).into_owned();
        }
    }
    let widths: Vec<usize> = (0..N)
        .map(|c| rows.iter().map(|row| row[c].chars().count()).max().unwrap_or(0))
        .collect();
    for row in rows.iter() {
        let line: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        overlord::outln!("{}", line.join("  ").trim_end());
    }
}

/// Prints a command's document in the `--out` format (JSON by default).
pub fn print_doc(format: Format, doc: &impl serde::Serialize) {
    let value = serde_json::to_value(doc).unwrap_or(serde_json::Value::Null);
    overlord::outln!("{}", doc_as(format, &value));
}

/// `value` as one XML-RPC `methodResponse` (what `xmlrpc.client.loads`
/// reads); characters XML cannot carry become U+FFFD, as on the wire.
pub fn xmlrpc(value: Value) -> String {
    let xml = common::xmlrpc::encode_response(value, usize::MAX)
        .unwrap_or_else(|e| common::xmlrpc::encode_fault(1, &e.to_string()));
    // Terminal hazards XML allows (CR, U+009B, U+202E) as character
    // references: the same document to a parser, inert on a terminal.
    if !xml.chars().any(hazard) {
        return xml;
    }
    let mut out = String::with_capacity(xml.len() + 16);
    for c in xml.chars() {
        match hazard(c) {
            true => {
                let _ = write!(out, "&#x{:x};", c as u32);
            }
            false => out.push(c),
        }
    }
    out
}

/// One line: strings as they are (line breaks as `\n`), the rest as compact JSON.
fn txt(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => shown_line(s.trim_end_matches('\n')).into_owned(),
        other => json_safe(other.to_string()),
    }
}

/// YAML for a JSON value: block maps and lists, scalars as JSON (which YAML
/// reads). Written here rather than by yaml_serde because every string must
/// be double-quoted: only there can YAML carry a terminal hazard as an
/// escape ([`json_safe`]); yaml_serde writes plain and block scalars.
pub fn yaml(v: &serde_json::Value) -> String {
    let mut out = String::new();
    yaml_into(v, 0, &mut out);
    out.trim_end().to_string()
}

fn yaml_into(v: &serde_json::Value, depth: usize, out: &mut String) {
    use serde_json::Value as J;
    // A non-empty map or list goes on the lines below its key or dash.
    let nested =
        |v: &J| matches!(v, J::Object(x) if !x.is_empty()) || matches!(v, J::Array(x) if !x.is_empty());
    let pad = "  ".repeat(depth);
    let entry = |lead: String, item: &J, out: &mut String| match nested(item) {
        true => {
            let _ = writeln!(out, "{pad}{lead}");
            yaml_into(item, depth + 1, out);
        }
        false => {
            let _ = writeln!(out, "{pad}{lead} {item}");
        }
    };
    match v {
        J::Object(m) if !m.is_empty() => {
            for (k, item) in m {
                entry(format!("{}:", J::String(k.clone())), item, out);
            }
        }
        J::Array(items) if !items.is_empty() => {
            for item in items {
                entry("-".into(), item, out);
            }
        }
        scalar => {
            let _ = writeln!(out, "{pad}{scalar}");
        }
    }
}

/// One JSON document for all hosts.
pub fn json(results: &BTreeMap<String, Value>) -> String {
    let doc: serde_json::Map<String, serde_json::Value> =
        results.iter().map(|(h, v)| (h.clone(), to_json(v))).collect();
    serde_json::to_string_pretty(&doc).unwrap_or_else(|_| "{}".into())
}

/// What a command reports in lines: printed as they come, or with
/// `--json` collected into one document `{"ok": bool, "messages": [...]}`
/// (plus fields the command adds) printed by [`Lines::finish`].
pub struct Lines {
    json: bool,
    format: Format,
    messages: Vec<String>,
    fields: serde_json::Map<String, serde_json::Value>,
}

impl Lines {
    pub fn new(json: bool, format: Format) -> Self {
        Self {
            json,
            format,
            messages: Vec::new(),
            fields: serde_json::Map::new(),
        }
    }

    /// One line of the report.
    pub fn line(&mut self, text: String) {
        match self.json {
            true => self.messages.push(text),
            false => overlord::out::write(&format!("{text}\n")),
        }
    }

    /// A field of the JSON document (ignored without `--json`).
    pub fn field(&mut self, key: &str, value: serde_json::Value) {
        self.fields.insert(key.to_string(), value);
    }

    /// Prints the JSON document (with `--json`); returns `code`.
    pub fn finish(mut self, code: i32) -> i32 {
        if self.json {
            self.fields
                .insert("ok".into(), serde_json::Value::Bool(code == 0));
            self.fields
                .insert("messages".into(), serde_json::json!(self.messages));
            print_doc(self.format, &serde_json::Value::Object(self.fields));
        }
        code
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use overlord::status::all_ok;

    /// Nothing in `text` a terminal acts on, and no line but `m1:` at column 0.
    fn inert(text: &str) {
        assert!(!text.chars().any(hazard), "raw control characters: {text:?}");
        for line in text.lines() {
            assert!(
                line == "m1:" || line.starts_with(' ') || line.is_empty(),
                "a forged line: {line:?} in {text:?}"
            );
        }
    }

    #[test]
    fn minion_text_cannot_forge_the_screen() {
        let forged = "x\n\rm2:\n\r    1";
        let mut hostile = BTreeMap::new();
        hostile.insert("k\nm2:\n    - all good".to_string(), Value::String(forged.into()));
        hostile.insert(
            "csi\u{9b}2J".to_string(),
            Value::String("bidi \u{202e}olleh, esc \u{1b}[2J, nel \u{85}m2:, ls \u{2028}m2:".into()),
        );
        let mut results = BTreeMap::new();
        results.insert("m1".to_string(), Value::Struct(hostile.into_iter().collect()));
        inert(&human("test.echo", &results));
        results.insert(
            "m1".to_string(),
            common::xmlrpc::remote_error("x\nm2:", forged, "detail\n\u{9b}"),
        );
        let text = human("test.echo", &results);
        inert(&text);
        assert!(text.contains("\\r") && text.contains("\\n"), "{text}");
        results.insert(
            "m1".to_string(),
            Value::Array(vec![
                Value::String(forged.into()),
                Value::Struct(vec![("a\u{202e}".to_string(), Value::Nil)].into_iter().collect()),
            ]),
        );
        inert(&human("test.echo", &results));
        // txt: one line per host; json and yaml: the same data, inert.
        for format in [Format::Txt, Format::Json, Format::Yaml] {
            let text = results_as(format, &results);
            assert!(!text.chars().any(hazard), "{format:?}: {text:?}");
            if format == Format::Txt {
                assert_eq!(text.lines().count(), 1, "{text}");
            }
        }
        let json = results_as(Format::Json, &results);
        let back: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(
            back["m1"][1]["a\u{202e}"],
            serde_json::Value::Null,
            "the same document: {json}"
        );
        assert!(back["m1"][1].as_object().unwrap().contains_key("a\u{202e}"));
        // YAML too reads back as the same document (hazards escaped, not mangled).
        let yaml: serde_json::Value = yaml_serde::from_str(&results_as(Format::Yaml, &results)).unwrap();
        assert_eq!(yaml, back, "the same document in YAML");
        assert_eq!(
            shown("plain\ttab"),
            "plain\ttab",
            "tabs and ordinary text untouched"
        );
    }

    #[test]
    fn human_and_json() {
        let mut r = BTreeMap::new();
        r.insert(
            "b".to_string(),
            common::xmlrpc::remote_error("exceptions.Exception", "boom", ""),
        );
        r.insert(
            "a".to_string(),
            Value::Array(vec![Value::Integer(0), Value::String("out\nmore".into())]),
        );
        let text = human("test.echo", &r);
        assert_eq!(
            text,
            "a:\n    - 0\n    -\n        out\n        more\nb:\n    ERROR (exceptions.Exception): boom\n"
        );
        assert!(!all_ok("test.echo", &r));
        let mut failed = BTreeMap::new();
        failed.insert(
            "c".to_string(),
            Value::Array(vec![
                Value::Integer(3),
                Value::String("".into()),
                Value::String("".into()),
            ]),
        );
        assert!(!all_ok("command.run", &failed) && all_ok("test.echo", &failed));
        assert!(human("command.run", &failed).ends_with("    FAILED: exit status 3\n"));
        let parsed: serde_json::Value = serde_json::from_str(&json(&r)).unwrap();
        assert_eq!(parsed["a"][0], 0);
    }
}
