//! Why the gate refused a request or the engine could not carry it out, as
//! one typed value for every door, with the one mapping from its kind to
//! `func`'s exit status and to func-api's HTTP status. A host that failed
//! is never an error here: it is a `REMOTE_ERROR` value in the results.

use crate::error::EngineError;
use crate::targets::TargetError;

/// A refused or failed request.
#[derive(Debug, thiserror::Error)]
pub enum GateError {
    /// The request itself is wrong (a bad value, a missing field, options
    /// that do not go together): exit 2, HTTP 400. Nothing was done.
    #[error("{0}")]
    Invalid(String),
    /// The SPEC matched nothing, or could not be read: exit 1; HTTP 404
    /// for no match, 400 for a bad pattern or an unknown group.
    #[error(transparent)]
    Targets(#[from] TargetError),
    /// The caller may not do this: exit 1, HTTP 403. Nothing was sent.
    #[error("{0}")]
    Forbidden(String),
    /// What the request names does not exist (an unknown or foreign job,
    /// an unknown schedule): exit 1, HTTP 404.
    #[error("{0}")]
    NotFound(String),
    /// It cannot be done as things stand (a schedule name taken, nothing
    /// failed to re-run, a limit reached): exit 1, HTTP 409.
    #[error("{0}")]
    Conflict(String),
    /// The engine could not carry it out: exit 1; HTTP 503 when the job
    /// store is unavailable, else 500.
    #[error(transparent)]
    Engine(#[from] EngineError),
}

impl From<common::fact_filter::Invalid> for GateError {
    /// A filter that cannot be read is a usage error, as any bad input.
    fn from(e: common::fact_filter::Invalid) -> Self {
        GateError::Invalid(e.0)
    }
}

impl GateError {
    /// The exit status `func`, `func transmit` and `func-transmit` end with.
    pub fn exit_status(&self) -> i32 {
        match self {
            GateError::Invalid(_) => 2,
            GateError::Engine(e) => e.exit_status(),
            GateError::Targets(_)
            | GateError::Forbidden(_)
            | GateError::NotFound(_)
            | GateError::Conflict(_) => 1,
        }
    }

    /// Its kind in a word, for programs (the `kind` of an error document):
    /// `invalid`, `no_match`, `bad_target`, `forbidden`, `not_found`,
    /// `conflict`, `store` or `engine`.
    pub fn kind(&self) -> &'static str {
        match self {
            GateError::Invalid(_) => "invalid",
            GateError::Targets(t) => target_kind(t),
            GateError::Forbidden(_) => "forbidden",
            GateError::NotFound(_) => "not_found",
            GateError::Conflict(_) => "conflict",
            GateError::Engine(EngineError::Store(_)) => "store",
            GateError::Engine(_) => "engine",
        }
    }

    /// The HTTP status func-api answers with.
    pub fn http_status(&self) -> u16 {
        match self {
            GateError::Invalid(_) => 400,
            GateError::Targets(TargetError::NoMatch(_)) => 404,
            GateError::Targets(_) => 400,
            GateError::Forbidden(_) => 403,
            GateError::NotFound(_) => 404,
            GateError::Conflict(_) => 409,
            GateError::Engine(EngineError::Store(_)) => 503,
            GateError::Engine(_) => 500,
        }
    }
}

/// A SPEC's refusal in a word: `no_match` (nothing matched), else
/// `bad_target` (a pattern or group that cannot be read).
pub fn target_kind(e: &TargetError) -> &'static str {
    match e {
        TargetError::NoMatch(_) => "no_match",
        _ => "bad_target",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_mapping_from_kind_to_statuses() {
        let cases = [
            (GateError::Invalid("x".into()), 2, 400),
            (GateError::Targets(TargetError::NoMatch("m9".into())), 1, 404),
            (GateError::Targets(TargetError::UnknownGroup("g".into())), 1, 400),
            (GateError::Forbidden("no".into()), 1, 403),
            (GateError::NotFound("j".into()), 1, 404),
            (GateError::Conflict("taken".into()), 1, 409),
            (GateError::Engine(EngineError::Record("r".into())), 1, 500),
        ];
        for (e, exit, http) in cases {
            assert_eq!((e.exit_status(), e.http_status()), (exit, http), "{e:?}");
        }
    }
}
