//! The daemon's side of job results: a Unix socket (`var/run/funcd-jobs.sock`)
//! on which job processes announce a finished job (one id per line), and a
//! periodic sweep that catches what a notification missed (a job finishing
//! while the daemon restarted), ends jobs whose process died, and purges
//! expired records.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::AsyncBufReadExt;
use tokio::net::UnixListener;

use super::{Jobs, NextSweep};

/// How often the sweep runs while jobs run.
pub const SWEEP_EVERY: Duration = Duration::from_secs(1);

/// File name of the daemon's notification socket in `var/run`.
pub const SOCKET: &str = "funcd-jobs.sock";

/// Longest an idle minion goes without a sweep.
pub const IDLE_SWEEP_EVERY: Duration = Duration::from_secs(60);

/// Binds the notification socket below `run_dir` (replacing a stale one).
pub fn bind(run_dir: &std::path::Path) -> std::io::Result<UnixListener> {
    common::private::state_dir(run_dir, common::private::PUBLIC_DIR_MODE)?;
    let path = run_dir.join(SOCKET);
    let _ = std::fs::remove_file(&path);
    let listener = UnixListener::bind(&path)?;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))?;
    Ok(listener)
}

/// Takes in results as job processes announce them.
pub async fn listen(jobs: Arc<Jobs>, listener: UnixListener) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        let jobs = Arc::clone(&jobs);
        tokio::spawn(async move {
            // One short line (`ID`, or `ID FAILED why`); anything longer
            // is not from a job process.
            let mut line = String::new();
            let mut reader = tokio::io::BufReader::new(tokio::io::AsyncReadExt::take(stream, 512));
            let read = tokio::time::timeout(Duration::from_secs(2), reader.read_line(&mut line)).await;
            if !matches!(read, Ok(Ok(_))) {
                return;
            }
            let line = line.trim();
            let id = match line.split_once(" FAILED ") {
                Some((id, why)) => {
                    jobs.result_lost(id, why);
                    id.to_string()
                }
                None => line.to_string(),
            };
            let ingested = tokio::task::spawn_blocking(move || jobs.ingest(&id)).await;
            if let Ok(Err(e)) = ingested {
                tracing::warn!(error = %e, "cannot record a job result");
            }
        });
    }
}

/// Sweeps the spool and the running jobs every [`SWEEP_EVERY`] while jobs
/// run. With none running, the next sweep waits for a submission or for the
/// oldest record to expire (at most [`IDLE_SWEEP_EVERY`]): an idle minion
/// wakes about once a minute, not every second — at 10,000 minions on one
/// machine, per-second sweeps alone took most of two cores.
/// A failure is logged when it starts and when it ends, not every second.
pub async fn sweep(jobs: Arc<Jobs>) {
    let mut failing = false;
    loop {
        let swept = {
            let jobs = Arc::clone(&jobs);
            tokio::task::spawn_blocking(move || jobs.sweep()).await
        };
        let next = match swept {
            Ok(Ok(next)) => {
                if failing {
                    tracing::info!("job sweep works again");
                    failing = false;
                }
                next
            }
            Ok(Err(e)) => {
                if !failing {
                    tracing::warn!(error = %e, "job sweep failed; retrying every second (logged again when it works)");
                    failing = true;
                }
                NextSweep::WhileRunning
            }
            Err(_) => NextSweep::WhileRunning,
        };
        match next {
            NextSweep::WhileRunning => tokio::time::sleep(SWEEP_EVERY).await,
            NextSweep::Idle(due) => {
                // Past a submission, sweep a moment later, as while running.
                let due = due.clamp(SWEEP_EVERY, IDLE_SWEEP_EVERY);
                tokio::select! {
                    _ = tokio::time::sleep(due) => {}
                    _ = jobs.submitted() => tokio::time::sleep(SWEEP_EVERY).await,
                }
            }
        }
    }
}
