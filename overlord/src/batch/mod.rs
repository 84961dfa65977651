//! Batches (DESIGN §7): `--batch N|P%` sliding windows, sync and async,
//! stoppable and recoverable.
//!
//! - [`machine`]: the pure state machine.

pub mod machine;
