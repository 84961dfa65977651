//! Async jobs on one minion: detached job processes that outlive a crashed
//! funcd, deaths detected by pid and start time, expiry after completion,
//! and no zombies left behind.

use std::time::Duration;

use common::Value;
use func_tests::fixture::{wait_until, FuncdProcess};

use crate::helper::{remote_error, s, OneMinion};

/// `jobs.job_status(id)` as (status, result).
fn status(m: &OneMinion, id: &str) -> (i32, Value) {
    match m
        .call("jobs.job_status", vec![s(id)])
        .expect("job_status answers")
    {
        Value::Array(a) if a.len() == 2 => match &a[0] {
            Value::Integer(code) => (*code, a[1].clone()),
            other => panic!("status code {other:?}"),
        },
        other => panic!("job_status returned {other:?}"),
    }
}

fn submit(m: &OneMinion, method: &str, args: Vec<Value>) -> String {
    match m
        .call(&format!("async.{method}"), args)
        .expect("async call answers")
    {
        Value::String(id) => id,
        other => panic!("async call returned {other:?}"),
    }
}

fn wait_finished(m: &OneMinion, id: &str) -> Value {
    let mut result = None;
    assert!(
        wait_until(Duration::from_secs(120), || {
            let (code, value) = status(m, id);
            result = Some(value);
            code == 1
        }),
        "job {id} finished"
    );
    result.expect("polled")
}

/// Children of `pid`: (child pid, state letter, command line).
fn children_of(pid: u32) -> Vec<(u32, String, String)> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|child| {
            let stat = std::fs::read_to_string(format!("/proc/{child}/stat")).ok()?;
            let fields: Vec<&str> = stat.rsplit(')').next().unwrap_or("").split_whitespace().collect();
            if fields.get(1) != Some(&pid.to_string().as_str()) {
                return None;
            }
            let cmdline = std::fs::read(format!("/proc/{child}/cmdline")).unwrap_or_default();
            let state = fields.first().unwrap_or(&"").to_string();
            Some((child, state, String::from_utf8_lossy(&cmdline).into_owned()))
        })
        .collect()
}

/// Zombie children of `pid`.
fn zombies_of(pid: u32) -> usize {
    children_of(pid)
        .iter()
        .filter(|(_, state, _)| state == "Z")
        .count()
}

#[test]
fn results_of_jobs_that_ran_while_funcd_was_dead_are_there_after_restart() {
    let mut m = OneMinion::start("m1");
    let ids: Vec<String> = (0..20).map(|_| submit(&m, "test.sleep", vec![s("1")])).collect();
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), 20);
    m.minion.crash();
    // The jobs run on without their daemon and leave their results in the spool.
    let spool = m.root.status_dir().join("jobs");
    let done = |id: &String| spool.join(format!("{id}.done")).exists();
    // 20 job processes on a loaded 2-core machine: room for a busy CI
    // (issue 47: 30 s ran out inside a full make test).
    assert!(
        wait_until(Duration::from_secs(180), || ids.iter().all(done)),
        "all 20 jobs wrote results"
    );
    // The crashed daemon's store lock is gone with it: a new funcd opens it.
    let restarted = FuncdProcess::start(&m.root, "m1").expect("funcd restarts on the same root");
    let old = std::mem::replace(&mut m.minion, restarted);
    drop(old);
    for id in &ids {
        let (code, value) = status(&m, id);
        assert_eq!(code, 1, "{id}");
        assert!(matches!(value, Value::Double(t) if t > 1.7e9), "{id}: {value:?}");
    }
    assert!(!ids.iter().any(done), "ingested results leave the spool");
}

#[test]
fn a_job_killed_from_outside_ends_as_an_error_not_running_forever() {
    let m = OneMinion::start("m1");
    let id = submit(&m, "test.sleep", vec![s("300")]);
    let Value::Struct(job) = m.call("jobs.find_job", vec![s(&id)]).unwrap() else {
        panic!("find_job")
    };
    let Some(Value::Integer(pid)) = job.get("pid") else {
        panic!("pid in {job:?}")
    };
    assert_eq!(status(&m, &id).0, 0);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(*pid),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let result = wait_finished(&m, &id);
    let (kind, message) = remote_error(&result).expect("a REMOTE_ERROR");
    assert_eq!(kind, "func.minion.JobDied");
    assert!(
        message.contains(&format!("process {pid} ended without a result")),
        "{message}"
    );
    assert!(
        wait_until(Duration::from_secs(10), || zombies_of(m.minion.pid()) == 0),
        "no zombies"
    );
}

/// Children of `pid` (not zombies) whose command line contains `word`.
fn children_running(pid: u32, word: &str) -> Vec<u32> {
    children_of(pid)
        .into_iter()
        .filter(|(_, state, cmdline)| state != "Z" && cmdline.contains(word))
        .map(|(child, _, _)| child)
        .collect()
}

#[test]
fn jobs_come_from_a_zygote_that_is_replaced_when_killed_and_hold_no_daemon_descriptors() {
    let m = OneMinion::start("m1");
    let id = submit(&m, "test.sleep", vec![s("300")]);
    let Value::Struct(job) = m.call("jobs.find_job", vec![s(&id)]).unwrap() else {
        panic!("find_job")
    };
    let Some(Value::Integer(pid)) = job.get("pid").cloned() else {
        panic!("pid in {job:?}")
    };
    // The job holds only its standard streams (on /dev/null) and the spool
    // directory it opened itself (close-on-exec, so nothing it runs gets
    // it): not the daemon's listener, store or sockets, nor the zygote's pipes.
    let spool = m.root.status_dir().join("jobs");
    let fds: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    let links: Vec<_> = fds
        .iter()
        .map(|fd| std::fs::read_link(format!("/proc/{pid}/fd/{fd}")))
        .collect();
    for fd in &fds {
        let target = std::fs::read_link(format!("/proc/{pid}/fd/{fd}")).unwrap();
        if ["0", "1", "2"].contains(&fd.as_str()) {
            assert_eq!(target, std::path::Path::new("/dev/null"), "fd {fd}");
            continue;
        }
        assert_eq!(target, spool, "fd {fd}: {fds:?} {links:?}");
        let info = std::fs::read_to_string(format!("/proc/{pid}/fdinfo/{fd}")).unwrap();
        let flags = info
            .lines()
            .find_map(|l| l.strip_prefix("flags:"))
            .and_then(|f| u32::from_str_radix(f.trim(), 8).ok())
            .unwrap();
        assert!(
            flags & 0o2000000 != 0,
            "the spool descriptor is close-on-exec: {info}"
        );
    }
    let zygotes = children_running(m.minion.pid(), "--job-zygote");
    assert_eq!(zygotes.len(), 1, "one zygote: {zygotes:?}");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(zygotes[0] as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    // The next job starts through a new zygote; the killed one is reaped.
    let next = submit(&m, "test.ping", vec![]);
    assert_eq!(wait_finished(&m, &next), Value::Integer(1));
    let again = children_running(m.minion.pid(), "--job-zygote");
    assert!(again.len() == 1 && again != zygotes, "{zygotes:?} then {again:?}");
    assert!(
        wait_until(Duration::from_secs(10), || zombies_of(m.minion.pid()) == 0),
        "no zombies"
    );
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL).unwrap();
    assert!(remote_error(&wait_finished(&m, &id)).is_some());
    // Nor does a command funcd runs inherit what funcd's starter left open
    // (here the test harness's descriptors): only its own.
    let Value::Array(ran) = m.call("command.run", vec![s("ls /proc/self/fd")]).unwrap() else {
        panic!("command.run")
    };
    let Some(Value::String(listed)) = ran.get(1) else {
        panic!("{ran:?}")
    };
    let fds: Vec<&str> = listed.split_whitespace().collect();
    assert!(fds.len() <= 4, "0, 1, 2 and ls's own directory: {fds:?}");
}

#[test]
fn records_expire_keep_jobs_after_completion_and_running_jobs_never() {
    let m = OneMinion::start_with("m1", "keep_jobs = 1", "");
    let quick = submit(&m, "test.ping", vec![]);
    let slow = submit(&m, "test.sleep", vec![s("4")]);
    assert_eq!(wait_finished(&m, &quick), Value::Integer(1));
    // Expired one second after it finished; the slow job, older than that, still runs.
    assert!(
        wait_until(Duration::from_secs(20), || status(&m, &quick)
            == (2, Value::Integer(0))),
        "finished record expired"
    );
    assert_eq!(status(&m, &slow).0, 0, "running jobs never expire");
    assert!(matches!(wait_finished(&m, &slow), Value::Double(_)));
}

#[test]
fn an_idle_minion_sweeps_when_a_record_expires_not_every_second() {
    // With no job running the sweep sleeps until the oldest record is due
    // to expire (or a job is submitted): the record still goes on time.
    let m = OneMinion::start_with("m1", "keep_jobs = 3", "");
    let quick = submit(&m, "test.ping", vec![]);
    assert_eq!(wait_finished(&m, &quick), Value::Integer(1));
    assert!(
        wait_until(Duration::from_secs(20), || status(&m, &quick)
            == (2, Value::Integer(0))),
        "finished record expired on an idle minion"
    );
}

#[test]
fn job_processes_leave_no_zombies_and_errors_come_back_as_values() {
    let m = OneMinion::start("m1");
    let ids: Vec<String> = (0..10).map(|_| submit(&m, "test.explode", vec![])).collect();
    for id in &ids {
        let result = wait_finished(&m, id);
        assert!(remote_error(&result).is_some(), "{result:?}");
    }
    let bad_args = submit(&m, "test.add", vec![s("1")]);
    assert!(remote_error(&wait_finished(&m, &bad_args)).is_some());
    assert!(
        wait_until(Duration::from_secs(10), || zombies_of(m.minion.pid()) == 0),
        "no zombies"
    );
}
