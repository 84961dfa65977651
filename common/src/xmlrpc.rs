//! XML-RPC codec on `dxr` with the limits and leniency Func needs.
//!
//! `dxr` provides the value model and (de)serialisation; this module adds what
//! it lacks (see `reference/crates.md` §1.4): a nesting limit checked before
//! parsing (deep input must not exhaust the stack), short error messages that
//! never echo the body, a trimmed method name, UTF-8 checks, sanitising of
//! characters XML 1.0 cannot carry, and Func's `REMOTE_ERROR` value.

pub mod args;
pub mod errors;
pub mod json;
pub mod lenient;

pub use errors::{DecodeError, FAULT_ENCODING, FAULT_FUNC, FAULT_INVALID_REQUEST, FAULT_PARSE};

use dxr::{Fault, FaultResponse, MethodCall, MethodResponse, Value};

/// Default largest request body accepted (16 MiB).
pub const DEFAULT_MAX_BODY: usize = 16 << 20;
/// Default deepest element nesting accepted. One array level costs three
/// elements (`value/array/data`), so this allows about 80 nested containers.
pub const DEFAULT_MAX_DEPTH: usize = 256;

/// First element of Func's error list: `["REMOTE_ERROR", type, message, detail]`.
pub const REMOTE_ERROR: &str = "REMOTE_ERROR";

/// Size and depth limits applied to every decoded document.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_body: usize,
    pub max_depth: usize,
    /// Values (`<value>` elements) a document may hold: decoding costs
    /// about ten times a document's size when it is all tiny values, so
    /// the count is checked before anything is built.
    pub max_values: usize,
}

/// Values a request or response may hold by default (the drop-in reader's
/// default too): far above any method's answer, and about 30 MiB decoded.
pub const DEFAULT_MAX_VALUES: usize = 250_000;

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_body: DEFAULT_MAX_BODY,
            max_depth: DEFAULT_MAX_DEPTH,
            max_values: DEFAULT_MAX_VALUES,
        }
    }
}

/// Why a value could not be encoded.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum EncodeError {
    #[error("result nests deeper than {limit} elements")]
    TooDeep { limit: usize },
    #[error("cannot serialise value: {0}")]
    Serialise(String),
}

/// A decoded method call.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub method: String,
    pub params: Vec<Value>,
    /// The forms the request wrote (dateTime texts, wide integer tags),
    /// for [`lenient::restore`] on the answer.
    pub as_sent: lenient::AsSent,
}

/// Decodes a `<methodCall>` body.
pub fn decode_call(body: &[u8], limits: &Limits) -> Result<Call, DecodeError> {
    let (text, as_sent) = checked_text_keeping(body, limits)?;
    let call = MethodCall::from_xml(&text).map_err(|_| DecodeError::Malformed { what: "methodCall" })?;
    let method = call.name.trim().to_string();
    if method.is_empty() {
        return Err(DecodeError::EmptyMethod);
    }
    Ok(Call {
        method,
        params: call.params,
        as_sent,
    })
}

/// Decodes a `<methodResponse>` body into the value or the fault it carries.
pub fn decode_response(body: &[u8], limits: &Limits) -> Result<Result<Value, Fault>, DecodeError> {
    let text = checked_text(body, limits)?;
    if let Ok(resp) = MethodResponse::from_xml(&text) {
        return Ok(Ok(resp.value));
    }
    match FaultResponse::from_xml(&text) {
        Ok(f) => Ok(Err(f.fault)),
        Err(_) => Err(DecodeError::Malformed {
            what: "methodResponse",
        }),
    }
}

/// Encodes a successful response (with XML declaration).
pub fn encode_response(value: Value, max_depth: usize) -> Result<String, EncodeError> {
    let value = prepare(value, max_depth)?;
    let xml = MethodResponse { value }
        .to_xml()
        .map_err(|e| EncodeError::Serialise(short_error(&e)))?;
    Ok(with_declaration(xml))
}

/// Encodes a fault response (with XML declaration). Cannot fail: the fault
/// string is sanitised first.
pub fn encode_fault(code: i32, message: &str) -> String {
    let fault = Fault::new(code, sanitize_str(message).into_owned());
    let xml = FaultResponse { fault }.to_xml().unwrap_or_else(|_| {
        // A two-member struct of an int and a sanitised string always
        // serialises; this branch exists only so no input can panic.
        String::from("<methodResponse><fault><value><struct><member><name>faultCode</name><value><int>1</int></value></member><member><name>faultString</name><value><string>fault</string></value></member></struct></value></fault></methodResponse>")
    });
    with_declaration(xml)
}

/// Encodes a `<methodCall>` (with XML declaration).
pub fn encode_call(method: &str, params: Vec<Value>, max_depth: usize) -> Result<String, EncodeError> {
    let params = params
        .into_iter()
        .map(|p| prepare(p, max_depth))
        .collect::<Result<Vec<_>, _>>()?;
    let call = MethodCall {
        name: method.into(),
        params,
    };
    let xml = call
        .to_xml()
        .map_err(|e| EncodeError::Serialise(short_error(&e)))?;
    Ok(with_declaration(xml))
}

/// Func's error value: `["REMOTE_ERROR", type, message, detail]`.
pub fn remote_error(kind: &str, message: &str, detail: &str) -> Value {
    Value::Array(vec![
        Value::String(REMOTE_ERROR.into()),
        Value::String(kind.into()),
        Value::String(message.into()),
        Value::String(detail.into()),
    ])
}

/// Func's `utils.is_error`: a non-empty list whose first item is `"REMOTE_ERROR"`.
pub fn is_remote_error(value: &Value) -> bool {
    matches!(value, Value::Array(items) if matches!(items.first(), Some(Value::String(s)) if s == REMOTE_ERROR))
}

/// An integer as the narrowest XML-RPC type that holds it (`<int>` within
/// i32, `<i8>` beyond), so Python 2/3 clients read it as they would expect.
pub fn int(n: i64) -> Value {
    match i32::try_from(n) {
        Ok(small) => Value::Integer(small),
        Err(_) => Value::Long(n),
    }
}

fn checked_text<'a>(body: &'a [u8], limits: &Limits) -> Result<std::borrow::Cow<'a, str>, DecodeError> {
    checked_text_keeping(body, limits).map(|(text, _)| text)
}

fn checked_text_keeping<'a>(body: &'a [u8], limits: &Limits) -> Result<lenient::Normalised<'a>, DecodeError> {
    if body.len() > limits.max_body {
        return Err(DecodeError::TooLarge {
            size: body.len(),
            limit: limits.max_body,
        });
    }
    if count_values(body) > limits.max_values {
        return Err(DecodeError::TooManyValues {
            limit: limits.max_values,
        });
    }
    let (text, kept) = lenient::normalise_keeping(body)?;
    if nesting_exceeds(&text, limits.max_depth) {
        return Err(DecodeError::TooDeep {
            limit: limits.max_depth,
        });
    }
    Ok((text, kept))
}

/// How many `<value>` (or `<value/>`) tags `xml` holds: a linear scan of
/// the bytes (a string's text cannot hold a raw `<`; CDATA that mentions
/// one only counts against its sender).
pub fn count_values(xml: &[u8]) -> usize {
    const TAG: &[u8] = b"<value";
    let mut count = 0;
    let mut rest = xml;
    while let Some(at) = rest.windows(TAG.len()).position(|w| w == TAG) {
        let after = rest.get(at + TAG.len()).copied();
        if matches!(after, Some(b'>' | b'/' | b' ' | b'\t' | b'\r' | b'\n')) {
            count += 1;
        }
        rest = &rest[at + TAG.len()..];
    }
    count
}

/// Whether the element nesting of `xml` exceeds `limit`. A linear scan that
/// only counts tags; it skips comments, CDATA, processing instructions and
/// declarations, and never recurses, so hostile input cannot overflow it.
pub fn nesting_exceeds(xml: &str, limit: usize) -> bool {
    let bytes = xml.as_bytes();
    let mut depth: usize = 0;
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'<' {
            i += 1;
            continue;
        }
        let rest = &xml[i..];
        let skip_to = |end: &str| rest.find(end).map(|p| i + p + end.len()).unwrap_or(bytes.len());
        if rest.starts_with("<!--") {
            i = skip_to("-->");
        } else if rest.starts_with("<![CDATA[") {
            i = skip_to("]]>");
        } else if rest.starts_with("<?") {
            i = skip_to("?>");
        } else if rest.starts_with("<!") {
            i = skip_to(">");
        } else if rest.starts_with("</") {
            depth = depth.saturating_sub(1);
            i = skip_to(">");
        } else {
            let end = skip_to(">");
            let self_closing = end >= 2 && bytes[end - 2] == b'/' && bytes[end - 1] == b'>';
            if !self_closing {
                depth += 1;
                if depth > limit {
                    return true;
                }
            }
            i = end;
        }
    }
    false
}

fn with_declaration(xml: String) -> String {
    let mut out = String::with_capacity(xml.len() + 22);
    out.push_str("<?xml version=\"1.0\"?>\n");
    out.push_str(&xml);
    out
}

fn short_error(e: &dxr::Error) -> String {
    crate::paths::shorten(&e.to_string())
}

/// Checks depth and replaces characters XML 1.0 cannot carry.
fn prepare(value: Value, max_depth: usize) -> Result<Value, EncodeError> {
    // value + array + data per level, plus methodResponse/params/param.
    if value_depth(&value, 0, max_depth / 3 + 1) > max_depth / 3 {
        return Err(EncodeError::TooDeep { limit: max_depth });
    }
    Ok(sanitize(value))
}

/// Container depth of `v`, counting at most to `cap` (iterative bound: the
/// recursion stops at `cap`, so it is bounded by the limit, not the input).
fn value_depth(v: &Value, level: usize, cap: usize) -> usize {
    if level >= cap {
        return level;
    }
    match v {
        Value::Array(items) => items
            .iter()
            .map(|i| value_depth(i, level + 1, cap))
            .max()
            .unwrap_or(level + 1),
        Value::Struct(members) => members
            .values()
            .map(|i| value_depth(i, level + 1, cap))
            .max()
            .unwrap_or(level + 1),
        _ => level,
    }
}

/// Replaces characters XML 1.0 forbids (C0 controls other than tab, LF and
/// CR, and U+FFFE/U+FFFF) with U+FFFD, in strings and struct keys.
pub fn sanitize(value: Value) -> Value {
    match value {
        Value::String(s) => match sanitize_str(&s) {
            std::borrow::Cow::Borrowed(_) => Value::String(s),
            std::borrow::Cow::Owned(clean) => Value::String(clean),
        },
        Value::Array(items) => Value::Array(items.into_iter().map(sanitize).collect()),
        Value::Struct(members) => Value::Struct(
            members
                .into_iter()
                .map(|(k, v)| (sanitize_str(&k).into_owned(), sanitize(v)))
                .collect(),
        ),
        other => other,
    }
}

fn xml_allowed(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..='\u{10FFFF}')
}

/// `s` with every character XML 1.0 forbids replaced by U+FFFD.
pub fn sanitize_str(s: &str) -> std::borrow::Cow<'_, str> {
    if s.chars().all(xml_allowed) {
        return std::borrow::Cow::Borrowed(s);
    }
    std::borrow::Cow::Owned(
        s.chars()
            .map(|c| if xml_allowed(c) { c } else { '\u{FFFD}' })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> Limits {
        Limits::default()
    }

    #[test]
    fn decodes_python_call_with_int_and_nil() {
        let body = b"<?xml version='1.0'?>\n<methodCall>\n<methodName> test.add </methodName>\n<params>\n<param>\n<value><int>1</int></value>\n</param>\n<param>\n<value><nil/></value>\n</param>\n</params>\n</methodCall>\n";
        let call = decode_call(body, &limits()).unwrap();
        assert_eq!(call.method, "test.add");
        assert_eq!(call.params, vec![Value::Integer(1), Value::Nil]);
    }

    #[test]
    fn malformed_errors_do_not_echo_the_body() {
        let body = b"<methodCall><methodName>secret-token-123</methodName><params><param><value><int>x";
        let err = decode_call(body, &limits()).unwrap_err();
        assert_eq!(err, DecodeError::Malformed { what: "methodCall" });
        assert!(!err.to_string().contains("secret"));
        assert!(!err.fault().string().contains("secret"));
    }

    #[test]
    fn refuses_non_utf8_oversized_deep_and_empty_name() {
        let bad = b"<methodCall><methodName>a\xff</methodName></methodCall>";
        assert!(matches!(
            decode_call(bad, &limits()),
            Err(DecodeError::NotUtf8 { offset: 25 })
        ));
        let small = Limits {
            max_body: 10,
            max_depth: 10,
            max_values: DEFAULT_MAX_VALUES,
        };
        assert!(matches!(
            decode_call(&[b' '; 11], &small),
            Err(DecodeError::TooLarge { .. })
        ));
        let deep = format!(
            "<methodCall><methodName>a</methodName><params><param>{}{}</param></params></methodCall>",
            "<value><array><data>".repeat(10_000),
            "</data></array></value>".repeat(10_000)
        );
        assert_eq!(
            decode_call(deep.as_bytes(), &limits()),
            Err(DecodeError::TooDeep {
                limit: DEFAULT_MAX_DEPTH
            })
        );
        let empty = b"<methodCall><methodName> x </methodName></methodCall>";
        assert_eq!(decode_call(empty, &limits()).unwrap().method, "x");
        let empty = b"<methodCall><methodName>  </methodName><params></params></methodCall>";
        assert!(
            decode_call(empty, &limits()).is_err(),
            "a blank method name is refused"
        );
    }

    #[test]
    fn nesting_scan_skips_comments_cdata_and_self_closing() {
        assert!(!nesting_exceeds(
            "<a><!-- <b><c><d> --><![CDATA[<x><y><z>]]><e/><f/></a>",
            1
        ));
        assert!(nesting_exceeds("<a><b></b></a>", 1));
        assert!(!nesting_exceeds("<a><b></b><c></c></a>", 2));
    }

    #[test]
    fn response_round_trip_with_big_int_and_fault() {
        let xml = encode_response(
            Value::Array(vec![int(4294967296), int(7), Value::Nil]),
            DEFAULT_MAX_DEPTH,
        )
        .unwrap();
        assert!(
            xml.contains("<i8>4294967296</i8>") && xml.contains("<i4>7</i4>"),
            "{xml}"
        );
        let back = decode_response(xml.as_bytes(), &limits()).unwrap().unwrap();
        assert_eq!(
            back,
            Value::Array(vec![Value::Long(4294967296), Value::Integer(7), Value::Nil])
        );
        let fault = encode_fault(1, "denied <&>");
        let f = decode_response(fault.as_bytes(), &limits()).unwrap().unwrap_err();
        assert_eq!((f.code(), f.string()), (1, "denied <&>"));
        assert!(decode_response(b"<methodResponse><params/></methodResponse>", &limits()).is_err());
    }

    #[test]
    fn control_characters_become_valid_xml() {
        let xml = encode_response(Value::String("a\x01b\x1b[0m\tc".into()), DEFAULT_MAX_DEPTH).unwrap();
        assert!(!xml.contains('\x01') && !xml.contains('\x1b'));
        let back = decode_response(xml.as_bytes(), &limits()).unwrap().unwrap();
        assert_eq!(back, Value::String("a\u{FFFD}b\u{FFFD}[0m\tc".into()));
    }

    #[test]
    fn too_deep_result_is_an_encode_error() {
        let mut v = Value::Integer(1);
        for _ in 0..200 {
            v = Value::Array(vec![v]);
        }
        assert_eq!(
            encode_response(v, DEFAULT_MAX_DEPTH),
            Err(EncodeError::TooDeep {
                limit: DEFAULT_MAX_DEPTH
            })
        );
    }

    #[test]
    fn remote_error_shape() {
        let e = remote_error("TypeError", "bad", "");
        assert!(is_remote_error(&e));
        assert!(!is_remote_error(&Value::Array(vec![])));
        assert!(!is_remote_error(&Value::String(REMOTE_ERROR.into())));
    }
}
