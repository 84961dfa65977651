//! `func-build-map` (Func's program): see `overlord_cli::build_map`.

fn main() -> std::process::ExitCode {
    overlord_cli::build_map::main()
}
