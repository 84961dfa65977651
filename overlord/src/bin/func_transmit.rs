//! `func-transmit` (Func's program): see `overlord::func_transmit`.

fn main() -> std::process::ExitCode {
    overlord::func_transmit::main()
}
