//! Batches (DESIGN §7): `--batch N|P%` sliding windows, sync and async,
//! stoppable and recoverable.
//!
//! - [`machine`]: the pure state machine (its own crate, `overlord-batch`:
//!   no I/O can creep in).
//! - [`record`]: what is persisted after every step, and the event log.
//! - [`driver`]: the I/O loop around the machine (sync and async).
//! - [`control`]: state in words and as a document, stop, recover.
//! - [`warm`]: a batch whose starts and ends go through the root's func-api.

pub mod control;
pub mod driver;
pub use overlord_batch as machine;
pub mod record;
pub mod warm;
