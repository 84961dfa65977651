//! Who did something, spelled one way wherever it is recorded or shown (a
//! job's user, a schedule's owner, the audit trail's `who`, the web UI):
//! `cli:USER` for the command line (the invoking user under sudo),
//! `api:NAME` for a func-api token, `cert:CN` for a certificate,
//! `schedule:NAME` for the scheduler acting on a schedule, `?` for a caller
//! not authenticated. Records written before this spelling named the
//! command line's user bare in jobs and a token bare in the audit trail;
//! they are read in this spelling.

/// The command line's principal: `cli:USER`.
pub fn cli_user() -> String {
    format!("cli:{}", crate::process::invoking_user())
}

/// A job's recorded user in this spelling (a bare name is the command
/// line's, as older records wrote it).
pub fn job_user(recorded: &str) -> String {
    if recorded.contains(':') || recorded.is_empty() {
        recorded.to_string()
    } else {
        format!("cli:{recorded}")
    }
}

/// An audit line's `who` in this spelling (a bare name is a token's, as
/// older func-api lines wrote it).
pub fn audit_who(recorded: &str) -> String {
    if recorded.contains(':') || recorded.is_empty() || recorded == "?" {
        recorded.to_string()
    } else {
        format!("api:{recorded}")
    }
}

/// The spellings a job of `user` may be recorded under: the user, and for
/// the command line's the bare name older records used.
pub fn job_user_spellings(user: &str) -> Vec<String> {
    let mut all = vec![user.to_string()];
    if let Some(bare) = user.strip_prefix("cli:") {
        all.push(bare.to_string());
    }
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn older_spellings_are_read_in_this_one() {
        assert_eq!(job_user("root"), "cli:root");
        assert_eq!(job_user("cli:root"), "cli:root");
        assert_eq!(job_user("api:web"), "api:web");
        assert_eq!(audit_who("web"), "api:web");
        assert_eq!(audit_who("?"), "?");
        assert_eq!(audit_who("schedule:tick"), "schedule:tick");
        assert_eq!(audit_who("cli:alice"), "cli:alice");
        assert_eq!(job_user_spellings("cli:alice"), ["cli:alice", "alice"]);
        assert_eq!(job_user_spellings("api:web"), ["api:web"]);
    }
}
