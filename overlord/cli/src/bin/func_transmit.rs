//! `func-transmit` (Func's program): see `overlord_cli::func_transmit`. Like
//! every door, it is also what the engine re-spawns (its worker and job and
//! batch drivers: `overlord::respawned`).

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    overlord::respawned::engine_exit(&args).unwrap_or_else(overlord_cli::func_transmit::main)
}
