//! Following one minion job to its end, the same for every caller (the
//! CLI's and drivers' poller, func-api's pool): `jobs.wait_job` again and
//! again (it answers the moment the job ends); on a minion without it
//! (a fault or a method error in answer), `jobs.job_status` polled once a
//! second. A host that cannot be reached is asked again after a pause that
//! grows to 5 s; whoever follows decides when to give up. Replies are typed
//! ([`Reply`]): how a call failed is known from the error, never from its text.

use std::time::Duration;

use common::Value;

use common::xmlrpc::remote_error;

/// How long one `jobs.wait_job` asks the minion to wait.
pub const WAIT_STEP: Duration = Duration::from_secs(5);
/// Pause between `jobs.job_status` polls, and before asking again a
/// minion that answered "running" at once.
pub const POLL_PAUSE: Duration = Duration::from_secs(1);
/// Longest pause before asking an unreachable host again.
pub const MAX_PAUSE: Duration = Duration::from_secs(5);

/// The pauses before asking again what could not be reached: `first`,
/// doubling, at most [`MAX_PAUSE`], for as long as it takes (backon's
/// exponential schedule; the caller's deadline decides when to give up).
pub fn pauses(first: Duration) -> backon::ExponentialBackoff {
    use backon::BackoffBuilder as _;
    backon::ExponentialBuilder::new()
        .with_min_delay(first)
        .with_max_delay(MAX_PAUSE)
        .with_factor(2.0)
        .without_max_times()
        .build()
}

/// The first pause before asking an unreachable host again.
const FIRST_PAUSE: Duration = Duration::from_millis(100);

/// What one call to one host brought back.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// The method's answer.
    Value(Value),
    /// The minion answered with a fault (as the host's `REMOTE_ERROR` value).
    Fault(Value),
    /// No answer: no connection, TLS refused, the connection broke, the
    /// deadline passed (why, for people).
    Unreachable(String),
}

/// What to do next.
#[derive(Debug, PartialEq)]
pub enum Step {
    /// The job ended with this result.
    Ended(Value),
    /// Ask again, after this pause (none: at once).
    Again(Option<Duration>),
}

/// One job followed on one host.
#[derive(Debug)]
pub struct Follow {
    job: String,
    long_poll: bool,
    pauses: backon::ExponentialBackoff,
}

impl Follow {
    pub fn new(job: &str) -> Self {
        Follow {
            job: job.to_string(),
            long_poll: true,
            pauses: pauses(FIRST_PAUSE),
        }
    }

    /// The next call: method, parameters, and how long to give it beyond
    /// a call's own `limit`.
    pub fn ask(&self, limit: Duration) -> (&'static str, Vec<Value>, Duration) {
        let id = Value::String(self.job.clone());
        if self.long_poll {
            (
                "jobs.wait_job",
                vec![id, Value::Double(WAIT_STEP.as_secs_f64())],
                limit + WAIT_STEP,
            )
        } else {
            ("jobs.job_status", vec![id], limit)
        }
    }

    /// Reads `reply` from `host`, which took `took` to come.
    pub fn step(&mut self, host: &str, reply: Reply, took: Duration) -> Step {
        let value = match reply {
            Reply::Unreachable(_) => {
                return Step::Again(Some(self.pauses.next().unwrap_or(MAX_PAUSE)));
            }
            // No `wait_job` there (an older or other minion): poll instead.
            Reply::Fault(_) if self.long_poll => {
                self.long_poll = false;
                return Step::Again(None);
            }
            Reply::Value(v) if self.long_poll && common::xmlrpc::is_remote_error(&v) => {
                self.long_poll = false;
                return Step::Again(None);
            }
            // job_status itself failed on the minion: that is the end.
            Reply::Fault(err) => return Step::Ended(err),
            Reply::Value(v) if common::xmlrpc::is_remote_error(&v) => return Step::Ended(v),
            Reply::Value(v) => v,
        };
        self.pauses = pauses(FIRST_PAUSE);
        match interpret(host, &self.job, value) {
            Answer::Finished(result) => Step::Ended(result),
            // A minion that answers "running" at once instead of waiting
            // is asked again no more than once a second.
            _ if self.long_poll && took >= POLL_PAUSE => Step::Again(None),
            _ => Step::Again(Some(POLL_PAUSE)),
        }
    }
}

/// What one host said about its minion job.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    Running,
    /// The host's final result (possibly a `REMOTE_ERROR`).
    Finished(Value),
    /// No answer this round (the host may come back).
    Unreachable(String),
}

/// `[0, -1]`, `[1, result]`, `[2, 0]` → an answer.
pub fn interpret(host: &str, job: &str, value: Value) -> Answer {
    match value {
        Value::Array(mut items) if items.len() == 2 => match items[0] {
            Value::Integer(0) => Answer::Running,
            Value::Integer(1) => Answer::Finished(items.swap_remove(1)),
            Value::Integer(2) => Answer::Finished(remote_error(
                "func.overlord.LostJob",
                &format!("{host} no longer knows job {job} (expired, or its records were lost)"),
                "",
            )),
            _ => Answer::Finished(bad_answer(host)),
        },
        _ => Answer::Finished(bad_answer(host)),
    }
}

fn bad_answer(host: &str) -> Value {
    remote_error(
        "func.overlord.BadAnswer",
        &format!("{host} answered jobs.job_status with something other than [status, result]"),
        "",
    )
}

/// The message of a `REMOTE_ERROR` value, for people.
pub fn why(err: &Value) -> String {
    match err {
        Value::Array(items) => match items.get(2) {
            Some(Value::String(s)) => s.clone(),
            _ => "unreachable".into(),
        },
        _ => "unreachable".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn running() -> Reply {
        Reply::Value(Value::Array(vec![Value::Integer(0), Value::Integer(-1)]))
    }

    #[test]
    fn long_polls_until_the_end_and_falls_back_to_polling() {
        let mut f = Follow::new("j1");
        assert_eq!(f.ask(Duration::from_secs(1)).0, "jobs.wait_job");
        // wait_job waited its full step: ask again at once.
        assert_eq!(f.step("m1", running(), Duration::from_secs(5)), Step::Again(None));
        // It answered at once: not more than once a second.
        assert_eq!(
            f.step("m1", running(), Duration::ZERO),
            Step::Again(Some(POLL_PAUSE))
        );
        let done = Reply::Value(Value::Array(vec![Value::Integer(1), Value::Integer(42)]));
        assert_eq!(
            f.step("m1", done, Duration::ZERO),
            Step::Ended(Value::Integer(42))
        );

        let mut f = Follow::new("j2");
        let fault = remote_error("xmlrpc.Fault", "no such method", "");
        assert_eq!(
            f.step("m1", Reply::Fault(fault.clone()), Duration::ZERO),
            Step::Again(None)
        );
        assert_eq!(f.ask(Duration::from_secs(1)).0, "jobs.job_status");
        assert_eq!(
            f.step("m1", Reply::Fault(fault.clone()), Duration::ZERO),
            Step::Ended(fault)
        );
    }

    #[test]
    fn an_unreachable_host_is_asked_again_ever_later_and_a_lost_job_ends() {
        let mut f = Follow::new("j");
        let gone = || Reply::Unreachable("refused".into());
        let pauses: Vec<Step> = (0..8).map(|_| f.step("m1", gone(), Duration::ZERO)).collect();
        assert_eq!(pauses[0], Step::Again(Some(Duration::from_millis(100))));
        assert_eq!(pauses[7], Step::Again(Some(MAX_PAUSE)));
        let lost = Reply::Value(Value::Array(vec![Value::Integer(2), Value::Integer(0)]));
        assert!(
            matches!(f.step("m1", lost, Duration::ZERO), Step::Ended(v) if common::xmlrpc::is_remote_error(&v))
        );
    }
}
