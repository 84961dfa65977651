//! `func-inventory` (Func's program): see `overlord::inventory`. It calls
//! minions through the engine's workers, so it is its own worker too
//! (`__worker`), as `func` and `func-transmit` are.

use std::process::ExitCode;

fn main() -> ExitCode {
    match std::env::args().nth(1).as_deref() {
        Some("__worker") => ExitCode::from(overlord::worker::main() as u8),
        _ => overlord::inventory::main(),
    }
}
