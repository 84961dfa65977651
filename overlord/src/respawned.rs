//! What a door's program is when the engine re-spawns it: the engine starts
//! its worker processes and its job and batch drivers as the running
//! executable again (`__worker`, `__driver ARGS`, `__batch ARGS`), so no
//! running runtime is ever forked and every door works alone. Each door's
//! `main` asks [`engine_role`] first; this is the one place that knows the
//! roles.

/// Runs the engine role `args` names (the program's arguments without its
/// name) and answers its exit status; `None`: `args` are the door's own.
pub fn engine_role(args: &[String]) -> Option<i32> {
    match args.first().map(String::as_str) {
        Some("__worker") => Some(crate::worker::main()),
        Some("__driver") => Some(crate::jobs::driver::main(&args[1..])),
        Some("__batch") => Some(crate::batch::driver::main(&args[1..])),
        _ => None,
    }
}

/// [`engine_role`] as a process exit code.
pub fn engine_exit(args: &[String]) -> Option<std::process::ExitCode> {
    engine_role(args).map(|code| std::process::ExitCode::from(u8::try_from(code).unwrap_or(1)))
}
