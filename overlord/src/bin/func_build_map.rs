//! `func-build-map` (Func's program): see `overlord::build_map`.

fn main() -> std::process::ExitCode {
    overlord::build_map::main()
}
