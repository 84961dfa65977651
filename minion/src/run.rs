//! A working minion, started in full: the job notification listener, the
//! job sweep, the CRL refresh (when a certmaster is configured) and the
//! server, on a listener the caller bound, until `shutdown` completes.
//! `funcd` calls it after enrolling; a test can run a minion in process.

use std::future::Future;
use std::sync::Arc;

use tokio::net::TcpListener;

use crate::enroll::{self, EnrollConfig};
use crate::state::Minion;

/// Starts the minion's background tasks, calls `ready` (the daemon
/// announces itself there), then serves `listener` until `shutdown`.
pub async fn run(
    minion: Arc<Minion>,
    listener: TcpListener,
    enroll_cfg: EnrollConfig,
    ready: impl FnOnce(),
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    match crate::jobs::notify::bind(&minion.config.root.run_dir()) {
        Ok(sock) => {
            tokio::spawn(crate::jobs::notify::listen(Arc::clone(&minion.jobs), sock));
        }
        Err(e) => tracing::warn!(error = %e, "no job notification socket; results arrive by the sweep"),
    }
    tokio::spawn(crate::jobs::notify::sweep(Arc::clone(&minion.jobs)));
    ready();
    if enroll_cfg.configured {
        tokio::spawn(enroll::refresh_crl(Arc::clone(&minion), enroll_cfg));
    }
    crate::server::serve(minion, listener, shutdown).await
}
