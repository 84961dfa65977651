//! The job store's conformance suite (DESIGN §13): what every backend of
//! `overlord::store::JobStore` must answer alike — ids, finishing hosts,
//! drivers, batch records and their serialized changes (the claims and
//! leases of batch drivers are made of them), paging, retention, the change
//! counter, batch events, facts, schedules, the delegation map, the minion
//! list, import and `last` (the whole `store::Backend` trait). `make test` runs it against the embedded redb
//! store (`tests/tests/store_conformance.rs`) and against a private
//! PostgreSQL server (`func-store-conformance`, from
//! `tests/python/test_store_pg.py`).

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use overlord::store::{job_id, HostState, HostUpdate, JobMeta, JobStore, Store};

/// Opens a store of the backend under test that keeps finished jobs
/// `keep_secs` (every call may give the same store: checks use their own ids).
pub type Open<'a> = &'a (dyn Fn(f64) -> Store + Sync);

type Check = fn(Open<'_>) -> Result<(), String>;

/// Every check, by name.
pub const CHECKS: &[(&str, Check)] = &[
    ("ids are unique, Func's form, moved on by 1 µs", ids_are_unique),
    (
        "ids stay unique under concurrent writers",
        ids_stay_unique_concurrently,
    ),
    (
        "a finished host never changes; a job ends when dispatched and all finished",
        hosts_finish_once,
    ),
    (
        "an abandonment applies only to a host never dispatched",
        abandonment,
    ),
    ("the driver is recorded with its host", driver_recorded),
    (
        "a job's notice to a target is claimed once, also by concurrent claimers",
        notices_claimed_once,
    ),
    ("batch records: save, merge, change, missing", batch_records),
    (
        "batch record changes are serialized (claims, leases)",
        batch_changes_serialized,
    ),
    ("pages newest first with a cursor, no gap, no repeat", paging),
    ("finished jobs expire whole; unfinished never", retention),
    ("the change counter grows with every write", generation),
    (
        "batch events: appended in order, read from a position",
        batch_events,
    ),
    (
        "the last facts of a minion: whole, merged, never older",
        facts_kept,
    ),
    (
        "schedules: one per name, bounded per owner, due listed, each run taken once",
        schedules,
    ),
    (
        "the map, the minion list, import and last: kept alike where the backend keeps them",
        map_minions_import_last,
    ),
];

/// Runs every check; each one's name and outcome.
pub fn run(open: Open<'_>) -> Vec<(&'static str, Result<(), String>)> {
    CHECKS.iter().map(|(name, check)| (*name, check(open))).collect()
}

macro_rules! ensure {
    ($cond:expr, $($why:tt)+) => {
        if $cond {
        } else {
            return Err(format!($($why)+));
        }
    };
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// A job of `spec` calling `test.ping`, started at `started`.
fn meta(spec: &str, started: f64) -> JobMeta {
    let mut m = JobMeta::new_call(spec, "test.ping", Vec::new(), None, 0, (30.0, 1), false);
    m.started = started;
    m
}

/// A SPEC no other check (or earlier run on the same database) uses.
fn spec(what: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{what}{}x{nanos}", std::process::id())
}

fn hosts(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| n.to_string()).collect()
}

fn finished(host: &str, result: &str) -> (String, HostUpdate) {
    (
        host.to_string(),
        HostUpdate::Finished {
            result_xml: result.into(),
        },
    )
}

fn dispatched(host: &str) -> (String, HostUpdate) {
    (
        host.to_string(),
        HostUpdate::Dispatched {
            minion_job: format!("{host}-job"),
        },
    )
}

fn ids_are_unique(open: Open<'_>) -> Result<(), String> {
    let store = open(3600.0);
    let spec = spec("ids");
    let started = 1_700_000_000.25;
    let ids: Vec<String> = (0..3)
        .map(|_| {
            store
                .create(meta(&spec, started), &hosts(&["m1", "m2"]))
                .map_err(err)
        })
        .collect::<Result<_, _>>()?;
    let stamp = 1_700_000_000_250_000u64;
    let expected: Vec<String> = (0..3).map(|i| job_id(&spec, "test.ping", stamp + i)).collect();
    ensure!(ids == expected, "ids {ids:?}, expected {expected:?}");
    let rec = store
        .load(&ids[2])
        .map_err(err)?
        .ok_or("a created job is missing")?;
    ensure!(rec.meta.id == ids[2], "loaded {} for {}", rec.meta.id, ids[2]);
    ensure!(
        (rec.meta.started - 1_700_000_000.250002).abs() < 1e-6,
        "started {}",
        rec.meta.started
    );
    ensure!(
        rec.meta.hosts == 2 && rec.hosts.len() == 2,
        "hosts {:?}",
        rec.hosts.keys()
    );
    ensure!(
        rec.hosts.values().all(|h| h.state == HostState::Pending),
        "a new job's hosts are pending: {:?}",
        rec.hosts
    );
    ensure!(
        store.load("no-such-job").map_err(err)?.is_none(),
        "a missing job was found"
    );
    Ok(())
}

fn ids_stay_unique_concurrently(open: Open<'_>) -> Result<(), String> {
    let spec = spec("many");
    let ids: Vec<Result<Vec<String>, String>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let spec = &spec;
                s.spawn(move || {
                    let store = open(3600.0);
                    (0..10)
                        .map(|_| {
                            store
                                .create(meta(spec, 1_700_000_100.0), &hosts(&["m1"]))
                                .map_err(err)
                        })
                        .collect()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or(Err("a writer panicked".into())))
            .collect()
    });
    let mut all = BTreeSet::new();
    for batch in ids {
        all.extend(batch?);
    }
    ensure!(all.len() == 40, "40 jobs created, {} distinct ids", all.len());
    Ok(())
}

fn hosts_finish_once(open: Open<'_>) -> Result<(), String> {
    let store = open(3600.0);
    let id = store
        .create(meta(&spec("fin"), 1_700_000_200.0), &hosts(&["m1", "m2"]))
        .map_err(err)?;
    let done = store
        .update(&id, &[dispatched("m1"), finished("m2", "err")], true)
        .map_err(err)?;
    ensure!(!done, "the job ended with m1 still running");
    ensure!(
        !store
            .update(&id, &[finished("m2", "other")], false)
            .map_err(err)?,
        "ended early"
    );
    let rec = store.load(&id).map_err(err)?.ok_or("job missing")?;
    ensure!(
        rec.hosts["m2"].result_xml.as_deref() == Some("err"),
        "a finished host changed: {:?}",
        rec.hosts["m2"]
    );
    ensure!(
        rec.hosts["m1"].state == HostState::Dispatched,
        "m1 {:?}",
        rec.hosts["m1"]
    );
    ensure!(
        rec.hosts["m1"].minion_job.as_deref() == Some("m1-job"),
        "m1 {:?}",
        rec.hosts["m1"]
    );
    ensure!(
        rec.meta.ended.is_none() && rec.meta.dispatched,
        "meta {:?}",
        rec.meta
    );
    ensure!(
        store.update(&id, &[finished("m1", "ok")], false).map_err(err)?,
        "the job did not end"
    );
    let rec = store.load(&id).map_err(err)?.ok_or("job missing")?;
    ensure!(rec.meta.ended.is_some(), "no end time");
    ensure!(
        rec.hosts["m1"].result_xml.as_deref() == Some("ok"),
        "m1 {:?}",
        rec.hosts["m1"]
    );
    ensure!(
        store.update(&id, &[], false).map_err(err)?,
        "an ended job is finished"
    );

    // Every host finished before dispatch ended: the job ends with the dispatch.
    let id = store
        .create(meta(&spec("fin2"), 1_700_000_201.0), &hosts(&["a"]))
        .map_err(err)?;
    let ended = store
        .update(&id, &[dispatched("a"), finished("a", "x")], false)
        .map_err(err)?;
    ensure!(
        !ended,
        "a job ended before its dispatch did: {:?}",
        store.load(&id).map_err(err)?
    );
    let rec = store.load(&id).map_err(err)?.ok_or("job missing")?;
    ensure!(
        rec.hosts["a"].state == HostState::Finished,
        "changes to one host apply in turn: {:?}",
        rec.hosts["a"]
    );
    ensure!(
        store.update(&id, &[], true).map_err(err)?,
        "the dispatch's end did not end the job"
    );
    // A host the job does not have is left alone.
    ensure!(
        !store
            .update("no-such-job", &[finished("a", "x")], true)
            .map_err(err)?,
        "a missing job finished"
    );
    Ok(())
}

fn abandonment(open: Open<'_>) -> Result<(), String> {
    let store = open(3600.0);
    let id = store
        .create(meta(&spec("ab"), 1_700_000_300.0), &hosts(&["p", "d"]))
        .map_err(err)?;
    store.update(&id, &[dispatched("d")], false).map_err(err)?;
    let abandon = |h: &str| {
        (
            h.to_string(),
            HostUpdate::Abandoned {
                result_xml: "gone".into(),
            },
        )
    };
    ensure!(
        !store
            .update(&id, &[abandon("p"), abandon("d")], true)
            .map_err(err)?,
        "ended with d running"
    );
    let rec = store.load(&id).map_err(err)?.ok_or("job missing")?;
    ensure!(
        rec.hosts["p"].state == HostState::Finished,
        "p {:?}",
        rec.hosts["p"]
    );
    ensure!(
        rec.hosts["d"].state == HostState::Dispatched,
        "a dispatched host was abandoned: {:?}",
        rec.hosts["d"]
    );
    Ok(())
}

fn facts_kept(open: Open<'_>) -> Result<(), String> {
    let store = open(3600.0);
    let host = spec("facts");
    let map = |v: serde_json::Value| v.as_object().cloned().unwrap_or_default();
    ensure!(
        store.last_facts(&host).map_err(err)?.is_none(),
        "facts of an unknown host"
    );
    let all = map(serde_json::json!({"os": "Debian", "num_cpus": 2, "ipv4": ["10.0.0.1"]}));
    store
        .save_facts(&[(host.as_str(), &all)], 100.0, true)
        .map_err(err)?;
    // Some facts (a filter's) merge into what is stored.
    store
        .save_facts(
            &[(host.as_str(), &map(serde_json::json!({"num_cpus": 4})))],
            200.0,
            false,
        )
        .map_err(err)?;
    let got = store.last_facts(&host).map_err(err)?.ok_or("facts missing")?;
    ensure!(got.seen == 200.0, "seen {}", got.seen);
    ensure!(
        serde_json::Value::Object(got.facts.clone())
            == serde_json::json!({"os": "Debian", "num_cpus": 4, "ipv4": ["10.0.0.1"]}),
        "merged {:?}",
        got.facts
    );
    // An older reading is not written over a newer one.
    store
        .save_facts(&[(host.as_str(), &all)], 150.0, true)
        .map_err(err)?;
    let got = store.last_facts(&host).map_err(err)?.ok_or("facts missing")?;
    ensure!(
        got.seen == 200.0 && got.facts["num_cpus"] == 4,
        "older won: {got:?}"
    );
    // A whole reading replaces.
    store
        .save_facts(
            &[(host.as_str(), &map(serde_json::json!({"os": "Ubuntu"})))],
            300.0,
            true,
        )
        .map_err(err)?;
    let got = store.last_facts(&host).map_err(err)?.ok_or("facts missing")?;
    ensure!(
        serde_json::Value::Object(got.facts) == serde_json::json!({"os": "Ubuntu"}),
        "not replaced"
    );
    Ok(())
}

fn notices_claimed_once(open: Open<'_>) -> Result<(), String> {
    let store = open(3600.0);
    let id = store
        .create(meta(&spec("notice"), 1_700_000_500.0), &hosts(&["m1"]))
        .map_err(err)?;
    // Eight claimers of two targets at once: one wins each.
    let won: Vec<bool> = std::thread::scope(|s| {
        let claimers: Vec<_> = (0..8)
            .map(|i| {
                let (store, id) = (&store, &id);
                s.spawn(move || store.claim_notice(id, ["ops", "mail"][i % 2]))
            })
            .collect();
        claimers
            .into_iter()
            .map(|c| c.join().unwrap_or(Ok(false)).unwrap_or(false))
            .collect()
    });
    ensure!(won.iter().filter(|w| **w).count() == 2, "claims won: {won:?}");
    ensure!(!store.claim_notice(&id, "ops").map_err(err)?, "claimed twice");
    let rec = store.load(&id).map_err(err)?.ok_or("job missing")?;
    let mut told = rec.meta.notified.clone();
    told.sort();
    ensure!(told == ["mail", "ops"], "notified {told:?}");
    ensure!(
        !store.claim_notice("no-such-job", "ops").map_err(err)?,
        "claimed for no job"
    );
    Ok(())
}

fn driver_recorded(open: Open<'_>) -> Result<(), String> {
    let store = open(3600.0);
    let id = store
        .create(meta(&spec("drv"), 1_700_000_400.0), &hosts(&["m1"]))
        .map_err(err)?;
    store.set_driver(&id, 4242, 777).map_err(err)?;
    let rec = store.load(&id).map_err(err)?.ok_or("job missing")?;
    ensure!(
        rec.meta.driver == Some((4242, 777)),
        "driver {:?}",
        rec.meta.driver
    );
    ensure!(rec.meta.driver_host.is_some(), "no driver host");
    store.set_driver("no-such-job", 1, 1).map_err(err)?;
    Ok(())
}

fn batch_records(open: Open<'_>) -> Result<(), String> {
    let store = open(3600.0);
    let id = store
        .create(meta(&spec("bat"), 1_700_000_500.0), &hosts(&["m1", "m2"]))
        .map_err(err)?;
    ensure!(
        store.batch(&id).map_err(err)?.is_none(),
        "a batch record before any was saved"
    );
    let keep_new = |_: &[u8], new: &[u8]| new.to_vec();
    let saved = store
        .save_batch_with(&id, b"one", &[], false, &keep_new)
        .map_err(err)?;
    ensure!(saved == b"one", "saved {saved:?}");
    // A merge sees what is stored, and what it returns is saved.
    let merge = |stored: &[u8], new: &[u8]| [stored, b"+", new].concat();
    let saved = store
        .save_batch_with(
            &id,
            b"two",
            &[dispatched("m1"), finished("m2", "r")],
            true,
            &merge,
        )
        .map_err(err)?;
    ensure!(saved == b"one+two", "merged {saved:?}");
    ensure!(
        store.batch(&id).map_err(err)?.as_deref() == Some(&b"one+two"[..]),
        "stored record differs"
    );
    let rec = store.load(&id).map_err(err)?.ok_or("job missing")?;
    ensure!(
        rec.hosts["m1"].state == HostState::Dispatched && rec.hosts["m2"].state == HostState::Finished,
        "host changes saved with the record: {:?}",
        rec.hosts
    );
    ensure!(rec.meta.dispatched, "dispatch_done saved with the record");
    ensure!(
        store.change_batch_with(&id, &mut |_| None).map_err(err)?,
        "an existing batch reported missing"
    );
    ensure!(
        store.batch(&id).map_err(err)?.as_deref() == Some(&b"one+two"[..]),
        "None changed the record"
    );
    ensure!(
        store
            .change_batch_with(&id, &mut |old| Some([old, b"!"].concat()))
            .map_err(err)?,
        "change failed"
    );
    ensure!(
        store.batch(&id).map_err(err)?.as_deref() == Some(&b"one+two!"[..]),
        "change not stored"
    );
    let mut called = false;
    let exists = store
        .change_batch_with("no-such-batch", &mut |_| {
            called = true;
            Some(b"x".to_vec())
        })
        .map_err(err)?;
    ensure!(!exists && !called, "a missing batch was changed");
    Ok(())
}

fn batch_changes_serialized(open: Open<'_>) -> Result<(), String> {
    let store = open(3600.0);
    let id = store
        .create(meta(&spec("ser"), 1_700_000_600.0), &hosts(&["m1"]))
        .map_err(err)?;
    store
        .save_batch_with(&id, b"0", &[], false, &|_, n| n.to_vec())
        .map_err(err)?;
    let outcomes: Vec<Result<(), String>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let id = &id;
                s.spawn(move || {
                    let store = open(3600.0);
                    for _ in 0..10 {
                        store
                            .change_batch_with(id, &mut |old| {
                                let n: u64 = std::str::from_utf8(old).ok()?.parse().ok()?;
                                Some((n + 1).to_string().into_bytes())
                            })
                            .map_err(err)?;
                    }
                    Ok(())
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or(Err("a writer panicked".into())))
            .collect()
    });
    for o in outcomes {
        o?;
    }
    let last = store.batch(&id).map_err(err)?.unwrap_or_default();
    ensure!(
        last == b"40",
        "40 increments from 4 writers left {:?}",
        String::from_utf8_lossy(&last)
    );
    Ok(())
}

fn paging(open: Open<'_>) -> Result<(), String> {
    let store = open(3600.0);
    // Later than anything else in the store (an earlier run's too): these
    // are the newest jobs.
    let base = 4_000_000_000.0 + (overlord::store::now() * 100.0).floor();
    let spec = spec("page");
    let mut ids: Vec<String> = (0..5)
        .map(|i| {
            store
                .create(meta(&spec, base + i as f64), &hosts(&["m1"]))
                .map_err(err)
        })
        .collect::<Result<_, _>>()?;
    ids.reverse();
    let mut seen: Vec<(f64, String)> = Vec::new();
    let mut cursor = None;
    while seen.len() < 8 {
        let page = store.list_page(2, cursor.as_ref()).map_err(err)?;
        ensure!(page.len() <= 2, "a page of {} jobs", page.len());
        let Some(last) = page.last().map(|m| (m.started, m.id.clone())) else {
            break;
        };
        seen.extend(page.into_iter().map(|m| (m.started, m.id)));
        cursor = Some(last);
    }
    let newest: Vec<String> = seen.iter().take(5).map(|(_, id)| id.clone()).collect();
    ensure!(newest == ids, "pages gave {newest:?}, newest first is {ids:?}");
    let rest = &seen[5.min(seen.len())..];
    ensure!(
        rest.iter()
            .all(|(started, id)| !ids.contains(id) && *started <= base),
        "after the newest, a job repeated or a newer one came: {rest:?}"
    );
    Ok(())
}

fn retention(open: Open<'_>) -> Result<(), String> {
    let store = open(0.2);
    let unfinished = store
        .create(meta(&spec("open"), 1_700_000_700.0), &hosts(&["m1"]))
        .map_err(err)?;
    let id = store
        .create(meta(&spec("old"), 1_700_000_700.0), &hosts(&["m1"]))
        .map_err(err)?;
    ensure!(
        store.update(&id, &[finished("m1", "r")], true).map_err(err)?,
        "the job did not end"
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        // A write purges; a read no longer answers an expired job.
        store
            .create(meta(&spec("tick"), 1_700_000_701.0), &[])
            .map_err(err)?;
        if store.load(&id).map_err(err)?.is_none() {
            break;
        }
        ensure!(
            Instant::now() < deadline,
            "a job finished 60 s ago with keep 0.2 s is still there"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    ensure!(
        store.load(&unfinished).map_err(err)?.is_some(),
        "an unfinished job expired"
    );
    ensure!(
        store
            .list_page(usize::MAX, None)
            .map_err(err)?
            .iter()
            .all(|m| m.id != id),
        "an expired job is still listed"
    );
    Ok(())
}

fn generation(open: Open<'_>) -> Result<(), String> {
    let store = open(3600.0);
    let g0 = store.generation().map_err(err)?;
    let id = store
        .create(meta(&spec("gen"), 1_700_000_800.0), &hosts(&["m1"]))
        .map_err(err)?;
    let g1 = store.generation().map_err(err)?;
    ensure!(g1 > g0, "create: {g0} then {g1}");
    store.update(&id, &[dispatched("m1")], false).map_err(err)?;
    let g2 = store.generation().map_err(err)?;
    ensure!(g2 > g1, "update: {g1} then {g2}");
    Ok(())
}

fn batch_events(open: Open<'_>) -> Result<(), String> {
    let store = open(3600.0);
    let (_, start) = store.batch_events(None).map_err(err)?;
    let id = store
        .create(meta(&spec("ev"), 1_700_000_900.0), &hosts(&["m1"]))
        .map_err(err)?;
    for n in 0..3 {
        let line = serde_json::json!({"time": 1.0 + n as f64, "job_id": id, "event": "progress", "n": n});
        store.log_batch_event(&id, &line).map_err(err)?;
    }
    let (lines, end) = store.batch_events(Some(start)).map_err(err)?;
    let ours: Vec<i64> = lines
        .iter()
        .filter(|l| l["job_id"] == id.as_str())
        .filter_map(|l| l["n"].as_i64())
        .collect();
    ensure!(ours == [0, 1, 2], "events after {start}: {lines:?}");
    let (again, end2) = store.batch_events(Some(end)).map_err(err)?;
    ensure!(
        again.is_empty() && end2 == end,
        "reading from the end gave {again:?} ({end} then {end2})"
    );
    Ok(())
}

fn schedules(open: Open<'_>) -> Result<(), String> {
    use overlord::store::schedules::Added;
    let store = open(3600.0);
    let owner = spec("owner");
    let base = spec("sched");
    let name = |i: usize| format!("{base}-{i}");
    let due = |n: f64| -> Vec<u8> { n.to_string().into_bytes() };
    for i in 0..3 {
        let added = store
            .add_schedule(
                &name(i),
                &owner,
                Some(1000.0 + i as f64),
                &due(1000.0 + i as f64),
                3,
            )
            .map_err(err)?;
        ensure!(added == Added::Yes, "schedule {i}: {added:?}");
    }
    let again = store
        .add_schedule(&name(0), "other", None, b"x", 3)
        .map_err(err)?;
    ensure!(again == Added::Taken, "a name taken twice: {again:?}");
    let full = store.add_schedule(&name(9), &owner, None, b"x", 3).map_err(err)?;
    ensure!(
        full == Added::OwnerFull,
        "a fourth of an owner allowed 3: {full:?}"
    );
    let (listed, next) = store.due_schedules(1001.5, 100).map_err(err)?;
    let mine: BTreeSet<String> = listed
        .into_iter()
        .filter(|n| n.starts_with(&format!("{base}-")))
        .collect();
    ensure!(
        mine == BTreeSet::from([name(0), name(1)]),
        "due at 1001.5: {mine:?}"
    );
    ensure!(
        next.is_some_and(|n| n > 1001.5 && n <= 1002.0),
        "the next due: {next:?}"
    );
    // Claims from 4 writers at once: each due time taken by exactly one.
    let taken: Vec<Result<usize, String>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|_| {
                s.spawn(|| {
                    let store = open(3600.0);
                    let mut won = 0;
                    for _ in 0..10 {
                        store
                            .change_schedule(&name(2), &mut |old| {
                                let at: f64 = std::str::from_utf8(old).ok()?.parse().ok()?;
                                won += 1;
                                Some((due(at + 1.0), Some(at + 1.0)))
                            })
                            .map_err(err)?;
                    }
                    Ok(won)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or(Err("a writer panicked".into())))
            .collect()
    });
    let mut won = 0;
    for t in taken {
        won += t?;
    }
    let last = store.schedule_doc(&name(2)).map_err(err)?.unwrap_or_default();
    ensure!(
        String::from_utf8_lossy(&last) == (1002.0 + won as f64).to_string() && won >= 40,
        "40 serialized claims left {:?} ({won} applied)",
        String::from_utf8_lossy(&last)
    );
    // Disabled (no next run): never due.
    store
        .change_schedule(&name(0), &mut |old| Some((old.to_vec(), None)))
        .map_err(err)?;
    let (listed, _) = store.due_schedules(1e12, 100_000).map_err(err)?;
    ensure!(!listed.contains(&name(0)), "a disabled schedule is due");
    ensure!(store.remove_schedule(&name(0)).map_err(err)?, "removed");
    ensure!(!store.remove_schedule(&name(0)).map_err(err)?, "removed twice");
    ensure!(store.schedule_doc(&name(0)).map_err(err)?.is_none(), "gone");
    let left = store.add_schedule(&name(9), &owner, None, b"x", 3).map_err(err)?;
    ensure!(left == Added::Yes, "room again after a removal: {left:?}");
    for i in [1, 2, 9] {
        store.remove_schedule(&name(i)).map_err(err)?;
    }
    Ok(())
}

/// The rest of `Backend`: a store that keeps the map gives back what was
/// saved (one that keeps none says so and gives none); a store that lists
/// minions lists them; an imported job reads back whole, once; `last`
/// finds a user's newest job.
fn map_minions_import_last(open: Open<'_>) -> Result<(), String> {
    let store = open(3600.0);
    let map = format!(
        "relays:\n  r1: {{address: \"10.0.0.1:51235\", minions: [\"{}\"]}}\n",
        spec("map")
    );
    match store.save_map(&map).map_err(err)? {
        true => ensure!(
            store.load_map().map_err(err)? == Some(map),
            "the map read back differs"
        ),
        false => ensure!(
            store.load_map().map_err(err)?.is_none(),
            "a store that keeps no map gave one"
        ),
    }
    ensure!(
        store.shared_minions().is_some() == store.is_shared(),
        "a shared store lists minions, and only a shared one"
    );
    if let Some(listed) = store.shared_minions() {
        listed.map_err(err)?;
    }
    let user = format!("cli:{}", spec("user"));
    let mut first = meta(&spec("import"), overlord::store::now());
    first.user = user.clone();
    let id = store.create(first, &hosts(&["a"])).map_err(err)?;
    let record = store.load(&id).map_err(err)?.ok_or("job missing")?;
    ensure!(
        store.import(std::slice::from_ref(&record)).map_err(err)? == 0,
        "an id already there was written again"
    );
    ensure!(
        store.newest_of(&user).map_err(err)? == Some(id.clone()),
        "last is not the user's newest job"
    );
    let mut copy = record;
    copy.meta.id = format!("{id}-copy");
    ensure!(
        store.import(&[copy.clone()]).map_err(err)? == 1,
        "an imported job was not written"
    );
    let back = store
        .load(&copy.meta.id)
        .map_err(err)?
        .ok_or("imported job missing")?;
    ensure!(
        back.hosts.len() == 1 && back.meta.spec == copy.meta.spec,
        "the imported job differs"
    );
    Ok(())
}
