//! `func-transmit` (Func's program): see `overlord::func_transmit`. Like
//! `func`, it is also its own worker and async-job driver, which the engine
//! re-spawns (`__worker`, `__driver`, `__batch`).

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("__worker") => ExitCode::from(overlord::worker::main() as u8),
        Some("__driver") => ExitCode::from(overlord::jobs::driver::main(&args[1..]) as u8),
        Some("__batch") => ExitCode::from(overlord::batch::driver::main(&args[1..]) as u8),
        _ => overlord::func_transmit::main(),
    }
}
