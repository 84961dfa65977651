//! What every method returns and how a method describes itself: the
//! leaf the modules, the drop-ins, the job store and the limits all use.

use common::xmlrpc::args::ArgError;
use common::xmlrpc::remote_error;
use common::Value;

/// Python-style exception type for an unknown method, as Func reports it.
pub const INVALID_METHOD: &str = "func.minion.codes.InvalidMethodException";

/// A method's failure, returned to the caller as a `REMOTE_ERROR` list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MethodError {
    pub kind: String,
    pub message: String,
    pub detail: String,
}

impl MethodError {
    pub fn new(kind: &str, message: impl Into<String>) -> Self {
        Self {
            kind: kind.to_string(),
            message: message.into(),
            detail: String::new(),
        }
    }

    /// An I/O or OS failure.
    pub fn os(message: impl Into<String>) -> Self {
        Self::new("OSError", message)
    }

    /// A refused or invalid input value.
    pub fn value(message: impl Into<String>) -> Self {
        Self::new("ValueError", message)
    }

    pub fn into_value(self) -> Value {
        remote_error(&self.kind, &self.message, &self.detail)
    }
}

impl From<ArgError> for MethodError {
    fn from(e: ArgError) -> Self {
        Self::new(e.kind, e.message)
    }
}

pub type MethodResult = Result<Value, MethodError>;

/// One argument of a method, for `get_method_args`.
pub struct ArgInfo {
    pub name: &'static str,
    pub kind: &'static str,
    pub optional: bool,
    pub description: &'static str,
}

/// One method of a module.
pub struct MethodInfo {
    pub name: &'static str,
    pub description: &'static str,
    pub args: &'static [ArgInfo],
}

/// A list of strings as an XML-RPC array.
pub fn strings<S: Into<String>>(items: impl IntoIterator<Item = S>) -> Value {
    Value::Array(items.into_iter().map(|s| Value::String(s.into())).collect())
}

/// A struct from `(key, value)` pairs.
pub fn record<K: Into<String>>(pairs: impl IntoIterator<Item = (K, Value)>) -> Value {
    Value::Struct(pairs.into_iter().map(|(k, v)| (k.into(), v)).collect())
}

/// The registry only routes listed methods here; this answers a mismatch
/// between a module's method table and its `match` as an error, not a panic.
pub fn unreachable_method(method: &str) -> MethodResult {
    Err(MethodError::new(
        INVALID_METHOD,
        format!("method {method} is listed but not implemented"),
    ))
}
