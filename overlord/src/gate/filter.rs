//! Targeting by facts: the typed filter every door reads
//! (`common::fact_filter`, shared with the wire), under the gate's name.
//! Its refusals are the gate's `Invalid` (`impl From<Invalid> for GateError`).

pub use common::fact_filter::*;
