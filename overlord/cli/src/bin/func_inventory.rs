//! `func-inventory` (Func's program): see `overlord_cli::inventory`. It calls
//! minions through the engine, so it is also what the engine re-spawns
//! (`overlord::respawned`), as every door is.

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    overlord::respawned::engine_exit(&args).unwrap_or_else(overlord_cli::inventory::main)
}
