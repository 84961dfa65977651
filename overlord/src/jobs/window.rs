//! Which hosts one `jobs.wait_job` round asks, when more are running than
//! one `func` may hold connections to (memory: about 20 KiB a connection,
//! over 120 MiB at 10,000 hosts).
//!
//! A round asks the hosts whose connections are kept first (each waits on
//! its job, so it costs no new handshake), then others in name order,
//! starting after the last one let in before, so every host gets its turn
//! even when the first ones never answer. Hosts not asked this round keep
//! their last known state (running).

use std::collections::HashMap;

/// The asks of one round (at most `size`), and the rotation point for the
/// next one: the last host let in without a kept connection.
pub fn select<T, V>(
    mut asks: Vec<(T, String)>,
    kept: &HashMap<String, V>,
    after: Option<&str>,
    size: usize,
    name: impl Fn(&T) -> &str,
) -> (Vec<(T, String)>, Option<String>) {
    if asks.len() <= size {
        return (asks, after.map(str::to_string));
    }
    asks.sort_by(|a, b| name(&a.0).cmp(name(&b.0)));
    let (mut chosen, rest): (Vec<_>, Vec<_>) =
        asks.into_iter().partition(|(t, _)| kept.contains_key(name(t)));
    chosen.truncate(size);
    let room = size - chosen.len();
    let start = after.map_or(0, |last| rest.partition_point(|(t, _)| name(t) <= last));
    let mut rest = rest;
    rest.rotate_left(start);
    let admitted: Vec<_> = rest.into_iter().take(room).collect();
    let next = admitted
        .last()
        .map(|(t, _)| name(t).to_string())
        .or_else(|| after.map(str::to_string));
    chosen.extend(admitted);
    (chosen, next)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asks(names: &[&str]) -> Vec<(String, String)> {
        names
            .iter()
            .map(|n| (n.to_string(), format!("job-{n}")))
            .collect()
    }

    fn names(chosen: &[(String, String)]) -> Vec<&str> {
        chosen.iter().map(|(n, _)| n.as_str()).collect()
    }

    #[test]
    fn all_are_asked_when_they_fit() {
        let kept: HashMap<String, ()> = HashMap::new();
        let (chosen, next) = select(asks(&["b", "a"]), &kept, None, 2, String::as_str);
        assert_eq!(names(&chosen), ["b", "a"]);
        assert_eq!(next, None);
    }

    #[test]
    fn kept_connections_first_then_others_in_turn() {
        let kept: HashMap<String, ()> = [("d".to_string(), ())].into();
        let all = ["a", "b", "c", "d", "e"];
        let (chosen, next) = select(asks(&all), &kept, None, 3, String::as_str);
        assert_eq!(names(&chosen), ["d", "a", "b"]);
        assert_eq!(next.as_deref(), Some("b"));
        // The next round goes on after "b", wrapping around: hosts that
        // never answer cannot keep the others out.
        let (chosen, next) = select(asks(&all), &kept, next.as_deref(), 3, String::as_str);
        assert_eq!(names(&chosen), ["d", "c", "e"]);
        assert_eq!(next.as_deref(), Some("e"));
        let (chosen, _) = select(asks(&all), &kept, next.as_deref(), 3, String::as_str);
        assert_eq!(names(&chosen), ["d", "a", "b"]);
    }

    #[test]
    fn never_more_than_the_window() {
        let kept: HashMap<String, ()> = ["a", "b", "c"].iter().map(|n| (n.to_string(), ())).collect();
        let (chosen, next) = select(asks(&["a", "b", "c", "d"]), &kept, Some("x"), 2, String::as_str);
        assert_eq!(names(&chosen), ["a", "b"]);
        assert_eq!(next.as_deref(), Some("x"));
    }
}
