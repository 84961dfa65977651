//! Why an XML-RPC document could not be decoded, and the fault codes a
//! server answers with: a leaf that the codec (`xmlrpc.rs`) and its lenient
//! reader (`lenient.rs`) both use.

use dxr::Fault;

/// Fault code for every fault a Func minion raises (ACL denial, unencodable
/// result), as Python's `SimpleXMLRPCServer` does.
pub const FAULT_FUNC: i32 = 1;
/// Interoperability fault codes (xmlrpc-epi "specification for fault code
/// interoperability") for requests that cannot be read at all.
pub const FAULT_PARSE: i32 = -32700;
pub const FAULT_ENCODING: i32 = -32701;
pub const FAULT_INVALID_REQUEST: i32 = -32600;

/// Why a document could not be decoded. Messages are short and never
/// contain the document itself.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DecodeError {
    #[error("body of {size} bytes is over the limit of {limit} bytes")]
    TooLarge { size: usize, limit: usize },
    #[error("body is not valid UTF-8 (first bad byte at offset {offset})")]
    NotUtf8 { offset: usize },
    #[error("XML nesting deeper than {limit} elements")]
    TooDeep { limit: usize },
    #[error("more than {limit} values in one document")]
    TooManyValues { limit: usize },
    #[error("malformed XML-RPC {what}")]
    Malformed { what: &'static str },
    #[error("empty method name")]
    EmptyMethod,
}

impl DecodeError {
    /// The fault a server answers this error with.
    pub fn fault(&self) -> Fault {
        let code = match self {
            DecodeError::NotUtf8 { .. } => FAULT_ENCODING,
            DecodeError::EmptyMethod => FAULT_INVALID_REQUEST,
            _ => FAULT_PARSE,
        };
        Fault::new(code, self.to_string())
    }
}
