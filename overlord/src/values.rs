//! Values as every layer needs them (`common::values`: JSON, the text of a
//! `REMOTE_ERROR`, the natural order of host names), under the name the
//! engine's doors know.

pub use common::values::*;
