//! What other XML-RPC clients send that the strict codec (dxr) refuses but
//! Python's `SimpleXMLRPCServer` — what Func's minion ran on — accepts,
//! made readable before decoding:
//!
//! - a body in the encoding its XML declaration names (Frontier::RPC
//!   declares `ISO-8859-1` and writes Latin-1 bytes): decoded with
//!   `encoding_rs`, answered in UTF-8;
//! - `<int>`/`<i4>` beyond 32 bits (node-xmlrpc, Frontier, Ruby): read as
//!   64-bit integers (`<i8>`);
//! - `dateTime.iso8601` as `20240105T11:59:00Z`, `2024-01-05T11:59:00`, with
//!   an offset (`+01:00`) or a fraction (`.123`): read as the date and time
//!   written (the value model holds whole seconds without a zone), and the
//!   text as sent is put back into the answer ([`restore_datetimes`]), as
//!   Python keeps it: an echo returns it unchanged.
//!
//! A body that needs none of this is passed through untouched (no copy).

use std::borrow::Cow;

use super::DecodeError;

/// `body` as UTF-8 text the strict decoder reads.
pub fn normalise(body: &[u8]) -> Result<Cow<'_, str>, DecodeError> {
    normalise_keeping(body).map(|(text, _)| text)
}

/// Text to decode, and each dateTime text rewritten: `(canonical, as sent)`.
pub type Normalised<'a> = (Cow<'a, str>, Vec<(String, String)>);

/// [`normalise`], also returning each dateTime text that was rewritten
/// with its canonical form: `(canonical, as sent)`, in document order.
pub fn normalise_keeping(body: &[u8]) -> Result<Normalised<'_>, DecodeError> {
    let text = decode_text(body)?;
    let text = widen_ints(text);
    let mut rewritten = Vec::new();
    let text = canonical_datetimes(text, &mut rewritten);
    Ok((text, rewritten))
}

/// Puts dateTime texts back as their sender wrote them (Python keeps the
/// text, so an echo must return it unchanged): each `(canonical, as sent)`
/// replaces the first remaining `canonical` value in `xml`.
pub fn restore_datetimes(xml: String, rewritten: &[(String, String)]) -> String {
    if rewritten.is_empty() {
        return xml;
    }
    let mut out = xml;
    let mut from = 0;
    for (canonical, sent) in rewritten {
        let needle = format!("<dateTime.iso8601>{canonical}</dateTime.iso8601>");
        let Some(at) = out[from..].find(&needle).map(|p| p + from) else {
            continue;
        };
        let replacement = format!("<dateTime.iso8601>{}</dateTime.iso8601>", escape_text(sent));
        out.replace_range(at..at + needle.len(), &replacement);
        from = at + replacement.len();
    }
    out
}

/// XML text escaping for a value we put back.
fn escape_text(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// The encoding an XML declaration at the start of `body` names, if any.
fn declared_encoding(body: &[u8]) -> Option<&str> {
    let start = body.iter().position(|b| !b.is_ascii_whitespace())?;
    let head = &body[start..body.len().min(start + 200)];
    if !head.starts_with(b"<?xml") {
        return None;
    }
    let end = head.windows(2).position(|w| w == b"?>")?;
    let decl = std::str::from_utf8(&head[..end]).ok()?;
    let at = decl.find("encoding")?;
    let rest = decl[at + "encoding".len()..]
        .trim_start()
        .strip_prefix('=')?
        .trim_start();
    let quote = rest.chars().next().filter(|q| *q == '"' || *q == '\'')?;
    let value = &rest[1..];
    value.find(quote).map(|e| &value[..e])
}

fn decode_text(body: &[u8]) -> Result<Cow<'_, str>, DecodeError> {
    let label = declared_encoding(body);
    let encoding = label.and_then(|l| encoding_rs::Encoding::for_label(l.as_bytes()));
    match encoding {
        Some(enc) if enc != encoding_rs::UTF_8 => {
            let text = enc
                .decode_without_bom_handling_and_without_replacement(body)
                .ok_or(DecodeError::NotUtf8 { offset: 0 })?;
            // The text is UTF-8 now; say so, for whoever reads the declaration.
            let label = label.unwrap_or_default();
            Ok(Cow::Owned(text.replacen(label, "UTF-8", 1)))
        }
        _ => std::str::from_utf8(body)
            .map(Cow::Borrowed)
            .map_err(|e| DecodeError::NotUtf8 {
                offset: e.valid_up_to(),
            }),
    }
}

/// Rewrites `<int>N</int>`/`<i4>N</i4>` whose N does not fit 32 bits as `<i8>N</i8>`.
fn widen_ints(text: Cow<'_, str>) -> Cow<'_, str> {
    let needs = ["<int>", "<i4>"].iter().any(|tag| {
        let mut from = 0;
        while let Some(at) = text[from..].find(tag) {
            let start = from + at + tag.len();
            let digits = text[start..].split('<').next().unwrap_or("").trim();
            if digits.parse::<i32>().is_err() && digits.parse::<i64>().is_ok() {
                return true;
            }
            from = start;
        }
        false
    });
    if !needs {
        return text;
    }
    let mut out = String::with_capacity(text.len() + 16);
    let mut rest: &str = &text;
    loop {
        let next = [("<int>", "</int>"), ("<i4>", "</i4>")]
            .iter()
            .filter_map(|(open, close)| rest.find(open).map(|at| (at, *open, *close)))
            .min_by_key(|(at, _, _)| *at);
        let Some((at, open, close)) = next else {
            out.push_str(rest);
            break;
        };
        out.push_str(&rest[..at]);
        let after = &rest[at + open.len()..];
        match after.find(close) {
            Some(end) => {
                let digits = after[..end].trim();
                if digits.parse::<i32>().is_err() && digits.parse::<i64>().is_ok() {
                    out.push_str("<i8>");
                    out.push_str(digits);
                    out.push_str("</i8>");
                } else {
                    out.push_str(open);
                    out.push_str(&after[..end]);
                    out.push_str(close);
                }
                rest = &after[end + close.len()..];
            }
            None => {
                out.push_str(&rest[at..]);
                break;
            }
        }
    }
    Cow::Owned(out)
}

/// `YYYYMMDDTHH:MM:SS` from the forms clients send, or `None` when `v` is
/// not a date and time at all (left for the decoder to refuse).
fn canonical(v: &str) -> Option<String> {
    let v = v.trim();
    let (date, time) = v.split_once('T')?;
    let date: String = date.chars().filter(|c| *c != '-').collect();
    if date.len() != 8 || !date.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // The time: HH:MM:SS or HHMMSS, then an optional fraction and zone.
    let end = time.find(['.', 'Z', 'z', '+', '-']).unwrap_or(time.len());
    let clock: String = time[..end].chars().filter(|c| *c != ':').collect();
    if clock.len() != 6 || !clock.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let tail = &time[end..];
    let tail = tail
        .strip_prefix('.')
        .map_or(tail, |t| t.trim_start_matches(|c: char| c.is_ascii_digit()));
    let zone_ok = tail.is_empty()
        || tail.eq_ignore_ascii_case("z")
        || ((tail.starts_with('+') || tail.starts_with('-'))
            && tail[1..].chars().filter(|c| *c != ':').count() == 4
            && tail[1..].chars().all(|c| c.is_ascii_digit() || c == ':'));
    zone_ok.then(|| format!("{date}T{}:{}:{}", &clock[..2], &clock[2..4], &clock[4..]))
}

/// Rewrites every `dateTime.iso8601` value that is not in the canonical
/// form, noting `(canonical, as sent)` for each in `rewritten`.
fn canonical_datetimes<'a>(text: Cow<'a, str>, rewritten: &mut Vec<(String, String)>) -> Cow<'a, str> {
    const OPEN: &str = "<dateTime.iso8601>";
    const CLOSE: &str = "</dateTime.iso8601>";
    if !text.contains(OPEN) {
        return text;
    }
    let mut out = String::with_capacity(text.len());
    let mut rest: &str = &text;
    let mut changed = false;
    while let Some(at) = rest.find(OPEN) {
        out.push_str(&rest[..at + OPEN.len()]);
        let after = &rest[at + OPEN.len()..];
        let Some(end) = after.find(CLOSE) else {
            rest = after;
            break;
        };
        let value = &after[..end];
        match canonical(value) {
            Some(c) if c != value => {
                out.push_str(&c);
                rewritten.push((c, value.to_string()));
                changed = true;
            }
            _ => out.push_str(value),
        }
        rest = &after[end..];
    }
    out.push_str(rest);
    match changed {
        true => Cow::Owned(out),
        false => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latin1_declared_is_read() {
        let body = b"<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><methodCall><methodName>test.echo</methodName><params><param><value><string>caf\xe9</string></value></param></params></methodCall>";
        let text = normalise(body).unwrap();
        assert!(text.contains("caf\u{e9}") && text.contains("UTF-8"), "{text}");
        assert!(
            normalise(b"<methodCall>\xe9</methodCall>").is_err(),
            "undeclared non-UTF-8 is still refused"
        );
        let plain = "<methodCall><methodName>a.b</methodName></methodCall>";
        assert!(
            matches!(normalise(plain.as_bytes()).unwrap(), Cow::Borrowed(_)),
            "no copy when nothing changes"
        );
    }

    #[test]
    fn wide_ints_and_datetime_forms() {
        let t = normalise(
            b"<i4>5</i4><int> 4294967296 </int><int>-2147483649</int><int>99999999999999999999</int>",
        )
        .unwrap();
        assert_eq!(
            t,
            "<i4>5</i4><i8>4294967296</i8><i8>-2147483649</i8><int>99999999999999999999</int>"
        );
        for (form, want) in [
            ("20240105T11:59:00", "20240105T11:59:00"),
            ("20240105T11:59:00Z", "20240105T11:59:00"),
            ("2024-01-05T11:59:00", "20240105T11:59:00"),
            ("2024-01-05T11:59:00+01:00", "20240105T11:59:00"),
            ("2024-01-05T11:59:00.123", "20240105T11:59:00"),
            ("20240105T115900-0500", "20240105T11:59:00"),
        ] {
            assert_eq!(canonical(form).as_deref(), Some(want), "{form}");
        }
        assert_eq!(canonical("yesterday"), None);
        let body = b"<v><dateTime.iso8601>2024-01-05T11:59:00+01:00</dateTime.iso8601><dateTime.iso8601>20240105T11:59:00Z</dateTime.iso8601></v>";
        let (text, kept) = normalise_keeping(body).unwrap();
        assert_eq!(kept.len(), 2, "{text}");
        let back = restore_datetimes(text.into_owned(), &kept);
        assert_eq!(back.as_bytes(), body, "an echo gets the texts back unchanged");
    }
}
