//! `func-swarm`: simulated minions for tests and benchmarks (DESIGN §17);
//! the program is `func_tests::swarm`.

use clap::Parser;

fn main() -> std::process::ExitCode {
    let args = func_tests::swarm::Args::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("func-swarm: cannot start: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    match runtime.block_on(func_tests::swarm::run(args)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("func-swarm: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
