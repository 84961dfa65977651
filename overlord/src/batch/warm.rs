//! A batch through the warm path (a warm func, DESIGN §14): while a
//! func-api serves the root, the driver hands each wave's starts
//! (`async.M.m`, with the batch's signed request identity: each minion
//! runs it at most once) to it, and its watcher follows the started hosts
//! over its kept connections and records each end in the store, where the
//! driver reads them. So a wave costs the driver no TLS handshake and no
//! connection. The batch record says so (`warm`), which is what tells the
//! watcher to follow a batch's hosts (it leaves other batches to their
//! drivers). If func-api goes away, the driver follows the hosts still
//! running itself, as any batch. The driver's runtime lives from wave to
//! wave and keeps its connection to func-api: a wave costs no handshake
//! on either side.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::paths::Root;
use common::Value;

use crate::jobs::poller::Reply;
use crate::reach::Direct as _;
use crate::relay::local::{wait_change, Handed, Waited};
use crate::store::{HostState, JobMeta, JobStore, StoreError};
use crate::targets::Target;

/// How often the store is looked at for ends.
const STORE_PAUSE: Duration = Duration::from_millis(10);

/// The warm part of a driver: how starts are handed, and the hosts started
/// whose end the watcher records (host → minion job).
pub struct WarmBatch {
    handed: Handed,
    /// Where the hand-offs run, wave after wave (their kept connection's
    /// task lives on it).
    runtime: tokio::runtime::Runtime,
    root: Root,
    watched: BTreeMap<String, String>,
    seen: Option<u64>,
}

/// func-api went away: the hosts still running (host → minion job), for
/// the driver to follow itself.
pub struct Gone(pub BTreeMap<String, String>);

impl WarmBatch {
    /// When a func-api serves `root` (and this process may hand to it).
    pub fn new(root: &Root, meta: &JobMeta, calling: &crate::settings::Calling) -> Option<Self> {
        let mut handed = Handed::for_job(root, meta, calling)?;
        handed.client = handed.client.clone().keeping();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .ok()?;
        Some(WarmBatch {
            handed,
            runtime,
            root: root.clone(),
            watched: BTreeMap::new(),
            seen: None,
        })
    }

    /// Starts `function(params)` (`async.M.m`) on `hosts` through func-api:
    /// each host's answer, as the poller's calls give it.
    pub fn start(&mut self, hosts: &[String], function: &str, params: &[Value]) -> Vec<(String, Reply)> {
        // A func-api restarted since may listen elsewhere: its address now.
        if let Some(now) = crate::relay::local::announced(&self.root) {
            if now.addr != self.handed.client.relay.addr {
                if let Ok(mut client) = crate::relay::client::RelayClient::new(&self.root, now) {
                    client.timeout = self.handed.client.timeout;
                    self.handed.client = client.keeping();
                }
            }
        }
        // func-api reads their addresses (Handed reads them if it calls them itself).
        let targets = hosts
            .iter()
            .map(|h| Target {
                name: h.clone(),
                addr: String::new(),
            })
            .collect();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let calling = self.handed.call(targets, function, params, tx);
        let collect = async {
            let mut answers = BTreeMap::new();
            while let Some((host, value)) = rx.recv().await {
                answers.entry(host).or_insert(value);
            }
            answers
        };
        let both = async { tokio::join!(calling, collect).1 };
        let runtime = &self.runtime;
        let answers = crate::relay::fanout::outside_runtime(|| runtime.block_on(both));
        answers
            .into_iter()
            .map(|(host, value)| (host, Reply::Value(value)))
            .collect()
    }

    /// `host` runs minion job `job`: its end is awaited in the store.
    pub fn follow(&mut self, host: String, job: String) {
        self.watched.insert(host, job);
    }

    pub fn unfollow(&mut self, host: &str) {
        self.watched.remove(host);
    }

    /// The followed hosts whose end the watcher recorded: waits up to
    /// `pause` for the first, looking at the store when it changes.
    pub fn ended(
        &mut self,
        store: &dyn JobStore,
        id: &str,
        pause: Duration,
    ) -> Result<Result<Vec<(String, Value)>, Gone>, StoreError> {
        let until = Instant::now() + pause;
        loop {
            match wait_change(&self.root, store, self.seen, Some(until), STORE_PAUSE)? {
                Waited::Gone => {
                    // What its watcher recorded before it went still counts.
                    let ends = self.recorded(store, id)?;
                    if !ends.is_empty() {
                        return Ok(Ok(ends));
                    }
                    return Ok(Err(Gone(std::mem::take(&mut self.watched))));
                }
                Waited::Changed(generation) => {
                    self.seen = Some(generation);
                    let ends = self.recorded(store, id)?;
                    if !ends.is_empty() {
                        return Ok(Ok(ends));
                    }
                }
                Waited::Quiet => return Ok(Ok(Vec::new())),
            }
        }
    }

    /// The followed hosts the store has finished, taken off the list.
    fn recorded(&mut self, store: &dyn JobStore, id: &str) -> Result<Vec<(String, Value)>, StoreError> {
        if self.watched.is_empty() {
            return Ok(Vec::new());
        }
        let Some(record) = store.load(id)? else {
            return Ok(Vec::new());
        };
        let mut ends = Vec::new();
        for (host, entry) in &record.hosts {
            if entry.state != HostState::Finished || !self.watched.contains_key(host) {
                continue;
            }
            if let Some(xml) = &entry.result_xml {
                self.watched.remove(host);
                ends.push((host.clone(), crate::jobs::decode_result(xml)));
            }
        }
        Ok(ends)
    }
}
