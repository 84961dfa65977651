//! Times on the command line and in listings: epoch seconds shown as UTC
//! `YYYY-MM-DD HH:MM:SS`, and `--since`/`--until` values read as epoch
//! seconds, an age (`90s`, `10m`, `2h`, `7d`: that long ago) or a UTC date
//! (`2026-11-21`, `2026-11-21T08:30`, `2026-11-21 08:30:15`).

/// `YYYY-MM-DD HH:MM:SS` (UTC).
pub fn show(epoch: f64) -> String {
    let at = time::OffsetDateTime::from_unix_timestamp(epoch.floor() as i64)
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02}",
        at.year(),
        u8::from(at.month()),
        at.day(),
        at.hour(),
        at.minute(),
        at.second()
    )
}

/// Epoch seconds of a UTC civil date and time, if it is one.
fn epoch_of(y: i64, m: i64, d: i64, hh: i64, mm: i64, ss: i64) -> Option<f64> {
    let month = time::Month::try_from(u8::try_from(m).ok()?).ok()?;
    let date = time::Date::from_calendar_date(i32::try_from(y).ok()?, month, u8::try_from(d).ok()?).ok()?;
    // A leap second (:60) reads as the next second, as before.
    let clock = time::Time::from_hms(u8::try_from(hh).ok()?, u8::try_from(mm).ok()?, 0).ok()?;
    Some((date.with_time(clock).assume_utc().unix_timestamp() + ss) as f64)
}

/// Reads a `--since`/`--until` value relative to `now`.
pub fn parse(text: &str, now: f64) -> Option<f64> {
    let text = text.trim();
    if let Ok(epoch) = text.parse::<f64>() {
        return epoch.is_finite().then_some(epoch);
    }
    let unit = match text.chars().last()? {
        's' => Some(1.0),
        'm' => Some(60.0),
        'h' => Some(3600.0),
        'd' => Some(86_400.0),
        _ => None,
    };
    if let Some(unit) = unit {
        if let Ok(n) = text[..text.len() - 1].parse::<f64>() {
            return (n.is_finite() && n >= 0.0).then_some(now - n * unit);
        }
    }
    let (date, time) = match text.split_once(['T', ' ']) {
        Some((d, t)) => (d, t),
        None => (text, "00:00:00"),
    };
    let num = |s: &str| s.parse::<i64>().ok();
    let mut dparts = date.split('-').map(num);
    let (y, m, d) = (dparts.next()??, dparts.next()??, dparts.next()??);
    let mut tparts = time.trim_end_matches('Z').split(':').map(num);
    let (hh, mm, ss) = (
        tparts.next()??,
        tparts.next().unwrap_or(Some(0))?,
        tparts.next().unwrap_or(Some(0))?,
    );
    let valid = (1..=12).contains(&m) && (1..=31).contains(&d) && hh < 24 && mm < 60 && ss < 61;
    if !valid || dparts.next().is_some() || tparts.next().is_some() || !(1970..=9999).contains(&y) {
        return None;
    }
    epoch_of(y, m, d, hh, mm, ss)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_forms() {
        assert_eq!(show(0.0), "1970-01-01 00:00:00");
        assert_eq!(show(1_795_262_677.85), "2026-11-21 12:04:37");
        assert_eq!(parse("2026-11-21 12:04:37", 0.0), Some(1_795_262_677.0));
        assert_eq!(parse("2026-11-21T12:04", 0.0), Some(1_795_262_640.0));
        assert_eq!(parse("2026-11-21", 0.0), Some(1_795_219_200.0));
        assert_eq!(
            parse("2000-02-29", 0.0).map(show).as_deref(),
            Some("2000-02-29 00:00:00")
        );
        assert_eq!(parse("1795262677.5", 0.0), Some(1_795_262_677.5));
        assert_eq!(parse("10m", 1000.0), Some(400.0));
        assert_eq!(parse("2h", 10_000.0), Some(2_800.0));
        for bad in [
            "",
            "yesterday",
            "2026-13-01",
            "2026-11-21T25:00",
            "-5m",
            "1x",
            "2026-11",
            "nan",
        ] {
            assert_eq!(parse(bad, 1000.0), None, "{bad:?}");
        }
    }
}
