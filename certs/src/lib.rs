//! The certificate authority of Func: CA creation, minion keys and CSRs,
//! signing with a fixed policy (never what the request asks for), the
//! overlord's marked client certificate, and careful key files.
//!
//! # Layout
//! - [`authority`]: the CA itself: create, load, sign a CSR, issue the overlord cert.
//! - [`request`]: a minion's key and certificate signing request.
//! - [`files`]: atomic writes with the right modes (keys 0600).
//! - [`layout`]: placing all of the above below a `--root` (DESIGN §3).
//!
//! The certmaster itself (its store, service and programs) is the
//! `certmaster-server` crate: a minion links this library only.

pub mod authority;
pub mod files;
pub mod layout;
pub mod request;

pub use authority::{Authority, Signed};

/// Everything that can go wrong in this crate.
#[derive(Debug, thiserror::Error)]
pub enum CertError {
    #[error("{action} {path}: {source}")]
    Io {
        action: &'static str,
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("certificate machinery: {0}")]
    Rcgen(#[from] rcgen::Error),
    #[error("certificate signing request cannot be read or its signature is invalid")]
    BadRequest,
    #[error("request names {0:?}, which is not a plain host name")]
    BadName(String),
    #[error("the name {0:?} is reserved (certmaster, overlord and localhost name the CA's own services)")]
    Reserved(String),
    #[error("the name {0:?} is an IP address: minions are named by host names")]
    IpLiteral(String),
    #[error("the request for {name} has another key than the fingerprint {expected}: not signed (compare with the fingerprint funcd printed on {name}; a request replaced meanwhile is not the one you compared)")]
    /// The request's own fingerprint is never carried: the one to give is
    /// the one the minion printed, not one copied from an error.
    FingerprintMismatch { name: String, expected: String },
    #[error("request carries no common name")]
    NoName,
    #[error("certificate cannot be parsed")]
    BadCertificate,
}

pub type Result<T> = std::result::Result<T, CertError>;
