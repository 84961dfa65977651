//! Why the engine could not do something, as one typed value for every
//! front end, with the exit status each maps to (`func` exits 1 for all of
//! them: a runtime failure, not a usage error). Remote failures are never
//! errors here: a host that failed is a `REMOTE_ERROR` value in the results.

use crate::store::StoreError;

/// A runtime failure of the engine.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The job store could not be read or written.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A process the engine needs could not be started.
    #[error("cannot start {what}: {source}")]
    Spawn {
        what: &'static str,
        #[source]
        source: std::io::Error,
    },
    /// This overlord's setup (overlord.conf, a file it reads) cannot be used.
    #[error("{0}")]
    Setup(String),
    /// The overlord's credentials cannot be used.
    #[error("{0}")]
    Credentials(String),
    /// A batch or job record that cannot be used as it is.
    #[error("{0}")]
    Record(String),
    /// A job or batch request whose signature does not verify (DESIGN §9).
    #[error("{0}")]
    Untrusted(String),
    /// Another live process holds the batch.
    #[error("another driver (pid {0}) is driving this batch")]
    Held(u32),
}

impl EngineError {
    /// The exit status a front end ends with.
    pub fn exit_status(&self) -> i32 {
        1
    }
}
