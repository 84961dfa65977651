//! The fan-out to relays: a call on every relay of a set of hosts at once,
//! now (each host's result as its relay streams it) or as relay jobs;
//! collecting relay jobs' results; signalling them.

use std::collections::BTreeMap;

use common::paths::Root;
use common::Value;

use super::client;
use super::error::{job_ref, parse_job_ref, unreachable, RelayError};
use super::map::{self, Routes};
use super::request::{Mode, RelayRequest, SealedRequest};

/// A call to hand to relays: everything but the hosts and the mode.
#[derive(Debug, Clone)]
pub struct Order {
    pub id: String,
    pub spec: String,
    pub function: String,
    pub params: Vec<Value>,
    pub user: String,
    pub rights: Option<Vec<String>>,
    pub timeout: f64,
    /// At a relay: the request a top overlord signed, handed on to this
    /// relay's relays unchanged (a relay signs no request for another).
    pub forward: Option<SealedRequest>,
    /// The signed job request the calls belong to (its identity: each
    /// minion runs it at most once), when the order dispatches a job.
    pub job_request: Option<String>,
}

impl Order {
    /// The order's request for `hosts` (its audience: who calls which of
    /// them itself, from `routes`), signed with the overlord key below `root`.
    pub fn sealed(
        &self,
        signer: &crate::seal::Signer,
        routes: &Routes,
        hosts: Vec<String>,
        mode: Mode,
    ) -> Result<SealedRequest, RelayError> {
        if let Some(sealed) = &self.forward {
            // Handed on unchanged; the next relay answers for its part.
            let mut sealed = sealed.clone();
            sealed.only = Some(hosts);
            return Ok(sealed);
        }
        self.sealed_to(signer, routes.callers(&hosts), hosts, mode)
    }

    /// The order's request for `hosts` with its audience given (relay →
    /// the hosts it calls itself), signed.
    pub fn sealed_to(
        &self,
        signer: &crate::seal::Signer,
        audience: BTreeMap<String, Vec<String>>,
        hosts: Vec<String>,
        mode: Mode,
    ) -> Result<SealedRequest, RelayError> {
        let mut nonce = [0u8; 16];
        ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut nonce)
            .map_err(|_| RelayError::Request("no randomness for a nonce".into()))?;
        RelayRequest {
            v: 2,
            id: self.id.clone(),
            spec: self.spec.clone(),
            function: self.function.clone(),
            // Typed exactly: the relay calls its hosts with what was given.
            params: serde_json::Value::Array(
                self.params
                    .iter()
                    .map(common::xmlrpc::json::to_tagged_json)
                    .collect(),
            ),
            user: self.user.clone(),
            rights: self.rights.clone(),
            routes: audience,
            hosts,
            mode,
            timeout: self.timeout,
            issued: crate::store::now(),
            nonce: nonce.iter().map(|b| format!("{b:02x}")).collect(),
            job_request: self.job_request.clone(),
        }
        .seal(signer)
    }

    /// The order of a recorded job (its driver hands it to relays).
    pub fn of_job(meta: &crate::store::JobMeta) -> Self {
        Order {
            id: meta.id.clone(),
            spec: meta.spec.clone(),
            function: meta.function.clone(),
            params: meta.params(),
            user: meta.user.clone(),
            rights: meta.rights.clone(),
            timeout: meta.timeout_secs,
            forward: None,
            job_request: None,
        }
    }

    /// The order a verified request makes at a relay: `sealed` itself is
    /// handed on to further relays.
    pub fn of(request: &RelayRequest, sealed: SealedRequest) -> Self {
        Order {
            id: request.id.clone(),
            spec: request.spec.clone(),
            function: request.function.clone(),
            params: request.values(),
            user: request.user.clone(),
            rights: request.rights.clone(),
            timeout: request.timeout,
            forward: Some(sealed),
            job_request: request.job_request.clone(),
        }
    }
}

/// A client for `relay` and `order`'s request for `hosts` there, signed.
fn prepare(
    root: &Root,
    routes: &Routes,
    signer: &Result<crate::seal::Signer, crate::seal::SealError>,
    order: &Order,
    relay: &str,
    hosts: &[String],
    mode: Mode,
) -> Result<(client::RelayClient, SealedRequest), RelayError> {
    match (signer, routes.relay(relay)) {
        (Ok(signer), Some(addr)) => {
            let client = client::RelayClient::new(root, addr.clone())?;
            Ok((client, order.sealed(signer, routes, hosts.to_vec(), mode)?))
        }
        (Err(e), _) => Err(RelayError::Config(e.to_string())),
        (_, None) => Err(RelayError::Config(format!("no address for relay {relay}"))),
    }
}

/// Calls `order` now on every relay of `relayed` (relay → its hosts) at
/// once; `tx` gets each host's result as it arrives, and every host a
/// relay did not answer gets why (unreachable). Returns when every relay
/// is done.
pub async fn call_now(
    root: &Root,
    routes: &Routes,
    order: &Order,
    relayed: BTreeMap<String, Vec<String>>,
    tx: tokio::sync::mpsc::UnboundedSender<(String, Value)>,
) {
    let signer = crate::seal::Signer::load(root);
    let mut tasks = tokio::task::JoinSet::new();
    for (relay, hosts) in relayed {
        let prepared = prepare(root, routes, &signer, order, &relay, &hosts, Mode::Now);
        let tx = tx.clone();
        let timeout = std::time::Duration::from_secs_f64(order.timeout.max(1.0));
        tasks.spawn(async move {
            let mut answered = std::collections::HashSet::new();
            let outcome = match prepared {
                Ok((mut client, sealed)) => {
                    client.timeout = client.timeout.max(timeout);
                    client
                        .call_now(&sealed, &hosts, |host, value| {
                            answered.insert(host.clone());
                            let _ = tx.send((host, value));
                        })
                        .await
                }
                Err(e) => Err(e),
            };
            if let Err(e) = outcome {
                let value = unreachable(&e);
                for h in hosts.into_iter().filter(|h| !answered.contains(h)) {
                    let _ = tx.send((h, value.clone()));
                }
            }
        });
    }
    while tasks.join_next().await.is_some() {}
}

/// Starts `order` as a job on every relay of `relayed`; each host's
/// dispatch: its relay job (`relay:NAME:ID`) or why it could not be.
pub async fn start_all(
    root: &Root,
    routes: &Routes,
    order: &Order,
    relayed: BTreeMap<String, Vec<String>>,
) -> Vec<(String, Result<String, Value>)> {
    let signer = crate::seal::Signer::load(root);
    let mut tasks = tokio::task::JoinSet::new();
    for (relay, hosts) in relayed {
        let prepared = prepare(root, routes, &signer, order, &relay, &hosts, Mode::Async);
        tasks.spawn(async move {
            let started = match prepared {
                Ok((client, sealed)) => client.start(&sealed).await,
                Err(e) => Err(e),
            };
            match started {
                Ok(id) => {
                    let job = job_ref(&relay, &id);
                    hosts
                        .into_iter()
                        .map(|h| (h, Ok(job.clone())))
                        .collect::<Vec<_>>()
                }
                Err(e) => {
                    let v = unreachable(&e);
                    hosts.into_iter().map(|h| (h, Err(v.clone()))).collect()
                }
            }
        });
    }
    let mut out = Vec::new();
    while let Some(done) = tasks.join_next().await {
        out.extend(done.unwrap_or_default());
    }
    out
}

/// Asks each relay job among `asks` (host → `relay:NAME:ID`) for its
/// finished hosts, waiting up to `wait` seconds: each host's result, or
/// `Err(why)` when its relay was not reached (the host is still awaited).
pub async fn collect(
    root: &Root,
    asks: Vec<(String, String)>,
    wait: f64,
) -> Vec<(String, Result<Option<Value>, String>)> {
    let mut groups: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (host, job) in asks {
        groups.entry(job).or_default().push(host);
    }
    let relays = map::configured(root).unwrap_or_default();
    let mut tasks = tokio::task::JoinSet::new();
    for (job, hosts) in groups {
        let Some((relay, id)) = parse_job_ref(&job).map(|(r, i)| (r.to_string(), i.to_string())) else {
            continue;
        };
        let client = match relays.get(&relay) {
            Some(addr) => client::RelayClient::new(root, addr.clone()),
            None => Err(RelayError::Config(format!(
                "no [relays] {relay} in overlord.conf"
            ))),
        };
        tasks.spawn(async move {
            let answer = match client {
                Ok(c) => c.results(&id, &hosts, wait).await,
                Err(e) => Err(e),
            };
            match answer {
                Ok(mut got) => {
                    let taken: Vec<_> = hosts
                        .iter()
                        .map(|h| got.results.remove(h).map(|xml| crate::job::decode_result(&xml)))
                        .collect();
                    // Results for hosts it was not asked are the relay's
                    // lie: its hosts end with that error, none is believed.
                    if let Some(stray) = got.results.keys().next() {
                        let e = RelayError::Lied {
                            relay: relay.clone(),
                            detail: format!(
                                "a result for {}, a host it was not asked",
                                common::paths::shorten(stray)
                            ),
                        };
                        let v = unreachable(&e);
                        return hosts.into_iter().map(|h| (h, Ok(Some(v.clone())))).collect();
                    }
                    hosts
                        .into_iter()
                        .zip(taken)
                        .map(|(h, v)| (h, Ok(v)))
                        .collect::<Vec<_>>()
                }
                Err(e) => {
                    let why = e.to_string();
                    hosts.into_iter().map(|h| (h, Err(why.clone()))).collect()
                }
            }
        });
    }
    let mut out = Vec::new();
    while let Some(done) = tasks.join_next().await {
        out.extend(done.unwrap_or_default());
    }
    out
}

/// Signals each relay job among `jobs` (`relay:NAME:ID`) for `user` (`None`:
/// this process's, the command line's); per job, what happened.
pub async fn kill_all(
    root: &Root,
    jobs: Vec<String>,
    signal: &str,
    user: Option<&str>,
) -> Vec<(String, Result<(), String>)> {
    let user = user.map_or_else(crate::principal::cli_user, str::to_string);
    let relays = map::configured(root).unwrap_or_default();
    let mut out = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for job in jobs {
        if !seen.insert(job.clone()) {
            continue;
        }
        let Some((relay, id)) = parse_job_ref(&job) else {
            continue;
        };
        let done = match relays.get(relay) {
            Some(addr) => match client::RelayClient::new(root, addr.clone()) {
                Ok(c) => c.kill(id, signal, &user).await.map_err(|e| e.to_string()),
                Err(e) => Err(e.to_string()),
            },
            None => Err(format!("no [relays] {relay} in overlord.conf")),
        };
        out.push((job, done));
    }
    out
}

/// Runs `f` on a runtime of its own (for the synchronous callers: `func`,
/// drivers).
pub fn block_on<T: Send>(f: impl std::future::Future<Output = T> + Send) -> T {
    outside_runtime(|| new_runtime().block_on(f))
}

/// Runs `run` (which blocks on a runtime of its own) here, or inside a
/// runtime (func-api's threads) on a thread of its own.
pub fn outside_runtime<T: Send>(run: impl FnOnce() -> T + Send) -> T {
    match tokio::runtime::Handle::try_current() {
        Ok(_) => std::thread::scope(|s| {
            s.spawn(run)
                .join()
                .unwrap_or_else(|p| std::panic::resume_unwind(p))
        }),
        Err(_) => run(),
    }
}

fn new_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("cannot start a runtime: {e}"))
}
