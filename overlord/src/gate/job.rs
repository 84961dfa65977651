//! A job named by a request: `job_status ID`, `jobs lookup|kill ID`,
//! `GET /api/v1/jobs/{id}`, Func's `{"method": "job_status", "parameters":
//! ID}`. Every door reads the id here: printable, not empty, bounded, and
//! `last` for the newest job of the caller (resolved against the store by
//! the engine, `jobs::resolve_id`).

use super::error::GateError;

/// Longest job id accepted (a SPEC of [`super::call::MAX_SPEC`], a
/// function, a time stamp).
pub const MAX_JOB_ID: usize = super::call::MAX_SPEC + 2 * super::call::MAX_NAME + 64;

/// A job id as a request gives it, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobRef(String);

impl JobRef {
    /// The one check of a job id.
    pub fn parse(text: &str) -> Result<JobRef, GateError> {
        if text.is_empty() || text.len() > MAX_JOB_ID || text.chars().any(char::is_control) {
            return Err(GateError::Invalid(format!(
                "a job id is 1 to {MAX_JOB_ID} printable characters (or last)"
            )));
        }
        Ok(JobRef(text.to_string()))
    }

    /// `last`: the newest job of the caller.
    pub fn is_last(&self) -> bool {
        self.0 == "last"
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_ids_are_printable_and_bounded() {
        assert!(JobRef::parse("web*-test-ping-1700000000.5").is_ok());
        assert!(JobRef::parse("last").unwrap().is_last());
        for bad in ["", "a\u{1b}[2J", &"x".repeat(MAX_JOB_ID + 1)] {
            assert!(
                matches!(JobRef::parse(bad), Err(GateError::Invalid(_))),
                "{bad:?}"
            );
        }
    }
}
