//! What other XML-RPC clients send that the strict codec (dxr) refuses but
//! Python's `SimpleXMLRPCServer` — what Func's minion ran on — accepts,
//! made readable before decoding:
//!
//! - a body in the encoding its XML declaration names (Frontier::RPC
//!   declares `ISO-8859-1` and writes Latin-1 bytes): decoded with
//!   `encoding_rs`, answered in UTF-8. A body declared ASCII (RPC::XML's
//!   `us-ascii`) that holds bytes above 0x7F was written in UTF-8 by its
//!   sender and is read as UTF-8 when it is valid UTF-8 (the WHATWG table
//!   `encoding_rs` follows maps ASCII labels to windows-1252, which would
//!   turn `café` into `cafÃ©`);
//! - `<int>`/`<i4>` beyond 32 bits (node-xmlrpc, Frontier, Ruby): read as
//!   64-bit integers (`<i8>`), and the answer's wide integers are written
//!   with the sender's tag ([`restore`]): those clients cannot read `<i8>`;
//! - `dateTime.iso8601` as `20240105T11:59:00Z`, `2024-01-05T11:59:00`, with
//!   an offset (`+01:00`) or a fraction (`.123`): read as the date and time
//!   written (the value model holds whole seconds without a zone), and the
//!   text as sent is put back into the answer ([`restore`]), as Python
//!   keeps it: an echo returns it unchanged.
//!
//! A body that needs none of this is passed through untouched (no copy).

use std::borrow::Cow;

use super::errors::DecodeError;

/// `body` as UTF-8 text the strict decoder reads.
pub fn normalise(body: &[u8]) -> Result<Cow<'_, str>, DecodeError> {
    normalise_keeping(body).map(|(text, _)| text)
}

/// The forms a request wrote that the answer should be written in too.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AsSent {
    /// Each dateTime text that was rewritten: `(canonical, as sent)`, in
    /// document order.
    pub datetimes: Vec<(String, String)>,
    /// The tag (`int` or `i4`) the request wrote integers beyond 32 bits
    /// in, if it wrote any that way.
    pub wide_int_tag: Option<&'static str>,
}

/// Text to decode, and the forms the sender used.
pub type Normalised<'a> = (Cow<'a, str>, AsSent);

/// [`normalise`], also returning the forms the sender used ([`AsSent`]).
pub fn normalise_keeping(body: &[u8]) -> Result<Normalised<'_>, DecodeError> {
    let text = decode_text(body)?;
    let mut sent = AsSent::default();
    let text = widen_ints(text, &mut sent.wide_int_tag);
    let text = canonical_datetimes(text, &mut sent.datetimes);
    Ok((text, sent))
}

/// Writes the answer `xml` in the forms its request used: wide integers
/// with the sender's tag instead of `<i8>`, and dateTime texts as sent.
pub fn restore(xml: String, sent: &AsSent) -> String {
    let xml = match sent.wide_int_tag {
        // Our encoder escapes '<' in strings, so these are only tags.
        Some(tag) => xml
            .replace("<i8>", &format!("<{tag}>"))
            .replace("</i8>", &format!("</{tag}>")),
        None => xml,
    };
    restore_datetimes(xml, &sent.datetimes)
}

/// Puts dateTime texts back as their sender wrote them (Python keeps the
/// text, so an echo must return it unchanged): each `(canonical, as sent)`
/// replaces the first remaining `canonical` value in `xml`.
fn restore_datetimes(xml: String, rewritten: &[(String, String)]) -> String {
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

/// Labels of US-ASCII (the WHATWG table maps them all to windows-1252).
fn is_ascii_label(label: &str) -> bool {
    const ASCII: [&str; 11] = [
        "us-ascii",
        "ascii",
        "ansi_x3.4-1968",
        "ansi_x3.4-1986",
        "iso-ir-6",
        "iso_646.irv:1991",
        "iso646-us",
        "us",
        "ibm367",
        "cp367",
        "csascii",
    ];
    let label = label.trim();
    ASCII.iter().any(|a| a.eq_ignore_ascii_case(label))
}

fn decode_text(body: &[u8]) -> Result<Cow<'_, str>, DecodeError> {
    let label = declared_encoding(body);
    let encoding = label.and_then(|l| encoding_rs::Encoding::for_label(l.as_bytes()));
    // Declared ASCII but holding UTF-8 (RPC::XML): read what was written.
    let utf8_as_ascii = label.is_some_and(is_ascii_label) && std::str::from_utf8(body).is_ok();
    match encoding {
        Some(enc) if enc != encoding_rs::UTF_8 => {
            let text = match utf8_as_ascii {
                true => Cow::Borrowed(std::str::from_utf8(body).unwrap_or_default()),
                false => enc
                    .decode_without_bom_handling_and_without_replacement(body)
                    .ok_or(DecodeError::NotUtf8 { offset: 0 })?,
            };
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

/// Rewrites `<int>N</int>`/`<i4>N</i4>` whose N does not fit 32 bits as
/// `<i8>N</i8>`, noting in `tag` the tag the first of them was sent in.
fn widen_ints<'a>(text: Cow<'a, str>, tag: &mut Option<&'static str>) -> Cow<'a, str> {
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
                    tag.get_or_insert(if open == "<int>" { "int" } else { "i4" });
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
    fn ascii_declared_utf8_is_read_as_utf8_and_latin1_stays_latin1() {
        let body = "<?xml version=\"1.0\" encoding=\"us-ascii\"?><methodCall><methodName>test.echo</methodName><params><param><value><string>café ✓</string></value></param></params></methodCall>";
        let text = normalise(body.as_bytes()).unwrap();
        assert!(text.contains("café ✓"), "{text}");
        // Declared ASCII, not UTF-8: read leniently as before (windows-1252).
        let text = normalise(b"<?xml version=\"1.0\" encoding=\"US-ASCII\"?><s>caf\xe9</s>").unwrap();
        assert!(text.contains("caf\u{e9}"), "{text}");
        // Latin-1 that happens to be valid UTF-8 stays Latin-1.
        let text = normalise(b"<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><s>\xc3\xa9</s>").unwrap();
        assert!(text.contains("\u{c3}\u{a9}"), "{text}");
    }

    #[test]
    fn wide_ints_go_back_in_the_senders_tag() {
        let (text, sent) = normalise_keeping(b"<int>5</int><int>4294967296</int>").unwrap();
        assert_eq!(sent.wide_int_tag, Some("int"));
        assert_eq!(
            restore(text.into_owned(), &sent),
            "<int>5</int><int>4294967296</int>"
        );
        let (_, sent) = normalise_keeping(b"<i4>-4294967296</i4>").unwrap();
        assert_eq!(sent.wide_int_tag, Some("i4"));
        let (text, sent) = normalise_keeping(b"<i8>4294967296</i8>").unwrap();
        assert_eq!(sent.wide_int_tag, None);
        assert_eq!(restore(text.into_owned(), &sent), "<i8>4294967296</i8>");
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
        assert_eq!(kept.datetimes.len(), 2, "{text}");
        assert_eq!(kept.wide_int_tag, None);
        let back = restore(text.into_owned(), &kept);
        assert_eq!(back.as_bytes(), body, "an echo gets the texts back unchanged");
    }
}
