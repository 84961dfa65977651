//! Why delegation could not be done; how a relay job stands in a job's host
//! map (`relay:NAME:ID`, where a minion job id would stand); and what a
//! host gets when its relay could not do its part: unreachable, never a
//! silent gap.

use common::xmlrpc::remote_error;
use common::Value;

/// Why delegation could not be done.
#[derive(Debug, thiserror::Error)]
pub enum RelayError {
    #[error("relays: {0}")]
    Config(String),
    #[error("the map {path}: {detail}")]
    Map {
        path: std::path::PathBuf,
        detail: String,
    },
    #[error("relay request: {0}")]
    Request(String),
    #[error("refused: the relay request cannot be trusted: {0}")]
    Untrusted(String),
    /// The relay answered for a host it was not sent, or twice for one.
    #[error("relay {relay} answered falsely: {detail}")]
    Lied { relay: String, detail: String },
    #[error("relay {relay} not reached: {detail}")]
    Unreachable { relay: String, detail: String },
    #[error("relay {relay} refused ({status}): {message}")]
    Refused {
        relay: String,
        status: u16,
        message: String,
    },
}

/// How a relay job stands in a job's host map: `relay:NAME:ID`.
pub fn job_ref(relay: &str, id: &str) -> String {
    format!("relay:{relay}:{id}")
}

/// The relay and its job id of a host's job, if it went through a relay.
pub fn parse_job_ref(job: &str) -> Option<(&str, &str)> {
    job.strip_prefix("relay:")?.split_once(':')
}

/// What a host answers when its relay could not do its part.
pub fn unreachable(e: &RelayError) -> Value {
    let kind = match e {
        RelayError::Unreachable { .. } => "socket.error",
        RelayError::Lied { relay, detail } => {
            tracing::warn!("relay {relay} answered falsely: {detail}");
            "func.overlord.RelayError"
        }
        _ => "func.overlord.RelayError",
    };
    remote_error(kind, &e.to_string(), "")
}
