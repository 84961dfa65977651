//! `etc/func/overlord.conf`, read once per process (per root) into typed
//! settings. Parsing ([`OverlordConf::parse`]) does no I/O; a value of the
//! wrong type is an error naming the file, the section and the key, never
//! a default taken silently. Values out of range keep their documented
//! bounds (a `keep_jobs` below 0 is 0 …). `[api]` is func-api's
//! (`api/config.rs`), read from the same [`Ini`].

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use common::config::{ConfigError, Ini};
use common::paths::Root;

/// Longest time any option takes (30 days): a larger one (`-t 1e308`)
/// cannot be a deadline and would overflow a `Duration`.
pub const MAX_SECS: f64 = 30.0 * 86_400.0;

/// What overlord.conf says (defaults where it is silent).
#[derive(Debug)]
pub struct OverlordConf {
    /// `[main] socket_timeout`: each host's time when `-t` is not given.
    pub socket_timeout: Option<f64>,
    /// `[main] max_response_size`: the largest answer accepted from one minion.
    pub max_response: usize,
    /// `[main] keep_jobs`: seconds a finished job is kept.
    pub keep_jobs: f64,
    /// `[store] url`: the shared store, parsed (a malformed one keeps its
    /// error, which every use of the store then says).
    pub store_url: Option<Result<pgconn::StoreUrl, String>>,
    /// `[store] batch_lease`: seconds a batch driver's lease lasts unrenewed.
    pub batch_lease: f64,
    /// The file itself, for the sections other parts read.
    pub ini: Ini,
}

impl OverlordConf {
    /// The settings in `ini` (no I/O).
    pub fn parse(ini: Ini) -> Result<Self, ConfigError> {
        let (max, d) = (MAX_SECS, Self::defaults());
        Ok(OverlordConf {
            socket_timeout: ini
                .f64("main", "socket_timeout")?
                .filter(|t| *t > 0.0)
                .map(|t| t.min(max)),
            max_response: ini
                .u64("main", "max_response_size")?
                .map_or(d.max_response, |v| v.max(1024) as usize),
            keep_jobs: ini
                .f64("main", "keep_jobs")?
                .filter(|k| k.is_finite() && *k >= 0.0)
                .unwrap_or(d.keep_jobs),
            store_url: ini
                .str("store", "url")
                .map(str::trim)
                .filter(|u| !u.is_empty())
                .map(|u| pgconn::StoreUrl::parse(u).map_err(|e| e.to_string())),
            batch_lease: ini
                .f64("store", "batch_lease")?
                .filter(|v| v.is_finite() && *v >= 1.0)
                .map_or(d.batch_lease, |v| v.min(max)),
            ini,
        })
    }

    /// The settings of `root`, read the first time they are asked for.
    pub fn of(root: &Root) -> Result<Arc<Self>, Arc<ConfigError>> {
        type Cache = Mutex<Option<HashMap<PathBuf, Result<Arc<OverlordConf>, Arc<ConfigError>>>>>;
        static CACHE: Cache = Mutex::new(None);
        let mut cache = CACHE.lock().unwrap_or_else(|p| p.into_inner());
        let cache = cache.get_or_insert_with(HashMap::new);
        cache
            .entry(root.dir().to_path_buf())
            .or_insert_with(|| {
                Ini::load(&root.overlord_conf())
                    .and_then(Self::parse)
                    .map(Arc::new)
                    .map_err(Arc::new)
            })
            .clone()
    }

    /// [`Self::of`], or the defaults when the file cannot be used (said
    /// once on the log: a front end has already refused to start with it,
    /// `plan.rs`; a detached driver keeps going with what it can).
    pub fn or_defaults(root: &Root) -> Arc<Self> {
        Self::of(root).unwrap_or_else(|e| {
            static SAID: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
            if !SAID.swap(true, std::sync::atomic::Ordering::Relaxed) {
                crate::log::line(&format!("func: {e}; using the defaults"));
            }
            Arc::new(Self::defaults())
        })
    }

    /// What a file that says nothing gives.
    fn defaults() -> Self {
        OverlordConf {
            socket_timeout: None,
            max_response: common::rpc::client::MAX_RESPONSE,
            keep_jobs: crate::store::DEFAULT_KEEP_JOBS,
            store_url: None,
            batch_lease: 30.0,
            ini: Ini::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<OverlordConf, ConfigError> {
        OverlordConf::parse(Ini::parse(std::path::Path::new("/r/etc/func/overlord.conf"), text).unwrap())
    }

    #[test]
    fn typed_values_with_their_bounds_and_errors_that_name_the_key() {
        let c = parse("[main]\nsocket_timeout = 5\nkeep_jobs = -1\n[store]\nbatch_lease = 0.5\n").unwrap();
        assert_eq!(
            (c.socket_timeout, c.keep_jobs, c.batch_lease),
            (Some(5.0), crate::store::DEFAULT_KEEP_JOBS, 30.0)
        );
        assert!(c.store_url.is_none());
        for bad in [
            "[main]\nkeep_jobs = soon\n",
            "[main]\nmax_response_size = big\n",
            "[store]\nbatch_lease = x\n",
        ] {
            let e = parse(bad).unwrap_err().to_string();
            assert!(
                e.contains("overlord.conf")
                    && (e.contains("keep_jobs")
                        || e.contains("max_response_size")
                        || e.contains("batch_lease")),
                "{e}"
            );
        }
        let c = parse("[store]\nurl = notaurl://x\n").unwrap();
        assert!(matches!(c.store_url, Some(Err(_))));
    }
}
