//! The job store's conformance suite (`func_tests::store_conformance`) on
//! the embedded redb store; the same suite runs on PostgreSQL from
//! `tests/python/test_store_pg.py`.

use overlord::store::redb::RedbStore;
use overlord::store::Store;

#[test]
fn the_embedded_store_conforms() {
    let dir = tempfile::tempdir().unwrap();
    let (db, events) = (
        dir.path().join("overlord.redb"),
        dir.path().join("batch-events.log"),
    );
    let open = move |keep: f64| Store::Redb(RedbStore::new(db.clone(), keep).with_events(events.clone()));
    let failed: Vec<String> = func_tests::store_conformance::run(&open)
        .into_iter()
        .filter_map(|(name, outcome)| outcome.err().map(|why| format!("{name}: {why}")))
        .collect();
    assert!(failed.is_empty(), "redb does not conform:\n{}", failed.join("\n"));
}
