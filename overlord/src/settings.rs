//! The overlord's settings below its root, shared by every front end and
//! by the detached drivers: its credentials, the job store, the largest
//! answer accepted, dispatch defaults, and the one parser of seconds.

use common::config::Ini;
use common::paths::Root;
use common::tls::Credentials;

use crate::store::Store;

/// Default per-host timeout when neither `-t` nor `socket_timeout` is set.
pub const DEFAULT_TIMEOUT: f64 = 30.0;
/// Hosts in flight at once inside one worker.
pub const WORKER_CONCURRENCY: usize = 64;

/// The overlord's credentials below `root`.
pub fn credentials(root: &Root) -> Credentials {
    Credentials {
        key: root.overlord_key(),
        cert: root.overlord_cert(),
        ca: root.ca_cert(),
        crl: Some(root.ca_crl()),
    }
}

/// `max_response_size` of overlord.conf: the largest answer accepted from
/// one minion (default 64 MiB); a larger one fails that host.
pub fn max_response(root: &Root) -> usize {
    Ini::load(&root.overlord_conf())
        .ok()
        .and_then(|ini| ini.u64("main", "max_response_size").ok().flatten())
        .map_or(common::rpc::client::MAX_RESPONSE, |v| v.max(1024) as usize)
}

/// The job store below `root`, with `keep_jobs` from overlord.conf.
pub fn store(root: &Root) -> Store {
    let keep = Ini::load(&root.overlord_conf())
        .ok()
        .and_then(|ini| ini.f64("main", "keep_jobs").ok().flatten())
        .filter(|k| k.is_finite() && *k >= 0.0)
        .unwrap_or(crate::store::DEFAULT_KEEP_JOBS);
    Store::new(root.status_dir().join("overlord.redb"), keep)
}

/// Longest time any option takes (30 days): a larger one (`-t 1e308`)
/// cannot be a deadline and would overflow a `Duration`.
pub const MAX_SECS: f64 = 30.0 * 86_400.0;

/// Seconds from `v`: a number above 0 (or 0 with `zero`) up to [`MAX_SECS`].
pub fn seconds(v: &str, zero: bool) -> Result<f64, String> {
    v.trim()
        .parse::<f64>()
        .ok()
        .filter(|t| t.is_finite() && (*t > 0.0 || (zero && *t == 0.0)) && *t <= MAX_SECS)
        .ok_or_else(|| {
            let low = if zero { "0" } else { "above 0" };
            format!(
                "takes seconds, {low} up to {MAX_SECS} (30 days), not {:?}",
                common::paths::shorten(v)
            )
        })
}

/// What a driver needs to call minions, passed to it by its front end:
/// the overlord's credentials and the largest answer accepted from one.
#[derive(Debug, Clone)]
pub struct Calling {
    pub credentials: Credentials,
    pub max_response: usize,
}

impl Calling {
    /// As configured below `root`.
    pub fn of_root(root: &Root) -> Self {
        Calling {
            credentials: credentials(root),
            max_response: max_response(root),
        }
    }
}
