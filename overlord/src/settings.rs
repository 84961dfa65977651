//! The overlord's settings below its root, shared by every front end and
//! by the detached drivers: its credentials, the job store, the largest
//! answer accepted, dispatch defaults, and the one parser of seconds.

use common::paths::Root;
use common::tls::Credentials;

use crate::conf::OverlordConf;
use crate::store::Store;

/// Default per-host timeout when neither `-t` nor `socket_timeout` is set.
pub const DEFAULT_TIMEOUT: f64 = 30.0;
/// Hosts in flight at once inside one worker.
pub const WORKER_CONCURRENCY: usize = 64;

/// The overlord's credentials below `root` (the CRL: the newest known,
/// local or shared, `revocation.rs`).
pub fn credentials(root: &Root) -> Credentials {
    Credentials {
        key: root.overlord_key(),
        cert: root.overlord_cert(),
        ca: root.ca_cert(),
        crl: Some(crate::revocation::effective(
            root,
            store_url(root).and_then(Result::ok).as_ref(),
        )),
    }
}

/// `max_response_size` of overlord.conf: the largest answer accepted from
/// one minion (default 64 MiB); a larger one fails that host.
pub fn max_response(root: &Root) -> usize {
    OverlordConf::or_defaults(root).max_response
}

/// The job store of `root`, with `keep_jobs` from overlord.conf: the
/// PostgreSQL store of `[store] url` when set, else the embedded file below
/// the root. A malformed URL gives a store whose every use says why.
pub fn store(root: &Root) -> Store {
    let conf = OverlordConf::or_defaults(root);
    store_of(root, conf.store_url.clone(), conf.keep_jobs)
}

/// The store `url` names (`None`: the embedded file below `root`), jobs
/// kept `keep_jobs` seconds; a malformed URL gives a store that says why.
pub fn store_of(root: &Root, url: Option<Result<pgconn::StoreUrl, String>>, keep_jobs: f64) -> Store {
    match url {
        Some(Ok(url)) => Store::Postgres(std::sync::Arc::new(crate::store::postgres::PgStore::new(
            url, keep_jobs,
        ))),
        Some(Err(e)) => Store::Broken(e),
        None => Store::embedded(root, keep_jobs),
    }
}

/// `[store] url` of overlord.conf, parsed, if set.
pub fn store_url(root: &Root) -> Option<Result<pgconn::StoreUrl, String>> {
    OverlordConf::or_defaults(root).store_url.clone()
}

/// `[store] batch_lease`: how long a batch driver's lease lasts unrenewed
/// before another overlord may take the batch over (default 30 s).
pub fn batch_lease(root: &Root) -> f64 {
    OverlordConf::or_defaults(root).batch_lease
}

pub use crate::conf::MAX_SECS;

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
