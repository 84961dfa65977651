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

/// Reaps the drivers the engine starts (nobody needs their exit status):
/// one thread of this process looks at them twice a second, so none stays
/// a zombie that would pass for a live driver, however many are started.
pub fn reap(child: std::process::Child) {
    static CHILDREN: std::sync::OnceLock<std::sync::Mutex<Vec<std::process::Child>>> =
        std::sync::OnceLock::new();
    let mut started = false;
    let list = CHILDREN.get_or_init(|| {
        started = true;
        std::sync::Mutex::new(Vec::new())
    });
    list.lock().unwrap_or_else(|p| p.into_inner()).push(child);
    if started {
        let spawned = std::thread::Builder::new()
            .name("func-reap".into())
            .spawn(move || loop {
                std::thread::sleep(std::time::Duration::from_millis(500));
                let mut children = list.lock().unwrap_or_else(|p| p.into_inner());
                children.retain_mut(|c| matches!(c.try_wait(), Ok(None)));
            });
        if spawned.is_err() {
            crate::log::line("cannot start the thread that reaps drivers");
        }
    }
}
