//! `func-bench-fill ROOT N [HOSTS]`: a benchmark helper, not a test. Writes
//! N finished jobs (HOSTS hosts each, default 3, `test.ping` answered 1)
//! into the overlord's job store of ROOT (its redb file, or PostgreSQL with `[store] url`), 5,000 per transaction, started
//! a millisecond apart up to now — a store with a long history, for timing
//! `GET /api/v1/jobs` and `func jobs list` against it.

// A test and benchmark tool whose report is read by a script or a person.
#![allow(clippy::print_stdout)]

use std::collections::BTreeMap;

use anyhow::Context;
use common::paths::Root;
use overlord::store::{HostEntry, HostState, JobMeta, JobRecord};

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let root = Root::new(args.next().context("usage: func-bench-fill ROOT N [HOSTS]")?);
    let n: usize = args.next().context("N")?.parse()?;
    let hosts: usize = args.next().map(|h| h.parse()).transpose()?.unwrap_or(3);
    common::private::private_dir(&root.status_dir())?;
    let store = overlord::settings::store(&root);
    let result = overlord::jobs::encode_result(common::Value::Integer(1));
    let now = overlord::store::now();
    let mut written = 0;
    let mut batch = Vec::with_capacity(5000);
    for i in 0..n {
        let started = now - (n - i) as f64 / 1000.0;
        let mut meta = JobMeta::new_call("m*", "test.ping", Vec::new(), None, hosts, (30.0, 1), false);
        meta.id = overlord::store::job_id("m*", "test.ping", (started * 1e6) as u64);
        meta.started = started;
        meta.ended = Some(started + 0.0005);
        meta.dispatched = true;
        let entries: BTreeMap<String, HostEntry> = (1..=hosts)
            .map(|h| {
                let entry = HostEntry {
                    state: HostState::Finished,
                    minion_job: Some(format!("{started}-minion")),
                    result_xml: Some(result.clone()),
                };
                (format!("m{h}"), entry)
            })
            .collect();
        batch.push(JobRecord { meta, hosts: entries });
        if batch.len() == 5000 || i + 1 == n {
            written += store.import(&batch)?;
            batch.clear();
        }
    }
    println!("{written} jobs written to {}", store.shown());
    Ok(())
}
