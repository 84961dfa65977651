//! What the job-management requests share, read once for every door
//! (`func jobs list|kill`, `func transmit {"command": [...]}`, func-api's
//! `GET /api/v1/jobs` and `POST /api/v1/jobs/{id}/kill`): the signal a kill
//! sends and the globs a listing filters by.

use nix::sys::signal::Signal;

use super::error::GateError;

/// Longest filter glob accepted.
pub const MAX_GLOB: usize = 1000;

/// The signal a kill sends, by name (`KILL`, `TERM`, `SIGINT`, `9`, …).
pub fn signal(name: &str) -> Result<Signal, GateError> {
    common::process::parse_signal(name).ok_or_else(|| {
        GateError::Invalid(format!(
            "unknown signal {:?} (KILL, TERM, INT, HUP, USR1, USR2, or a number)",
            common::paths::shorten(name)
        ))
    })
}

/// A listing filter (`function`, `target`): a glob of at most [`MAX_GLOB`]
/// characters; `what` names the filter in the message.
pub fn glob(what: &str, text: &str) -> Result<glob::Pattern, GateError> {
    if text.len() > MAX_GLOB {
        return Err(GateError::Invalid(format!(
            "{what}: at most {MAX_GLOB} characters"
        )));
    }
    glob::Pattern::new(text).map_err(|e| GateError::Invalid(format!("{what}: bad glob: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signals_and_globs_are_read_once() {
        assert_eq!(signal("TERM").unwrap(), Signal::SIGTERM);
        assert!(
            matches!(signal("FROB"), Err(GateError::Invalid(m)) if m.contains("unknown signal \"FROB\""))
        );
        assert!(glob("function", "test.*").unwrap().matches("test.ping"));
        assert!(
            matches!(glob("function", "[bad"), Err(GateError::Invalid(m)) if m.starts_with("function: bad glob"))
        );
        assert!(glob("target", &"x".repeat(MAX_GLOB + 1)).is_err());
    }
}
