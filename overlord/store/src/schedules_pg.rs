//! The shared store's schedules (`schedules.rs`): table `func_schedules`
//! (schema 4). A change locks the row (`SELECT … FOR UPDATE`), so two
//! func-api claiming the same run are served one after the other and the
//! second sees the run already taken.

use super::postgres::PgStore;
use super::schedules::{Added, Change, Schedules, MAX_SCHEDULES};
use super::types::StoreError;

impl Schedules for PgStore {
    fn schedule_docs(&self) -> Result<Vec<Vec<u8>>, StoreError> {
        self.with(|c| {
            let rows = c.query("SELECT doc FROM func_schedules ORDER BY name", &[])?;
            Ok(rows.iter().map(|r| r.get::<_, String>(0).into_bytes()).collect())
        })
    }

    fn schedule_doc(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.with(|c| {
            let row = c.query_opt("SELECT doc FROM func_schedules WHERE name = $1", &[&name])?;
            Ok(row.map(|r| r.get::<_, String>(0).into_bytes()))
        })
    }

    fn add_schedule(
        &self,
        name: &str,
        owner: &str,
        due: Option<f64>,
        doc: &[u8],
        per_owner: usize,
    ) -> Result<Added, StoreError> {
        let doc = String::from_utf8_lossy(doc).into_owned();
        self.with(|c| {
            let mut txn = c.transaction()?;
            // Adds one at a time, so the counts hold when two add at once.
            txn.execute("LOCK TABLE func_schedules IN SHARE ROW EXCLUSIVE MODE", &[])?;
            let taken = txn.query_opt("SELECT 1 FROM func_schedules WHERE name = $1", &[&name])?;
            if taken.is_some() {
                return Ok(Added::Taken);
            }
            let owned: i64 = txn
                .query_one("SELECT count(*) FROM func_schedules WHERE owner = $1", &[&owner])?
                .get(0);
            if owned as usize >= per_owner {
                return Ok(Added::OwnerFull);
            }
            let all: i64 = txn.query_one("SELECT count(*) FROM func_schedules", &[])?.get(0);
            if all as usize >= MAX_SCHEDULES {
                return Ok(Added::Full);
            }
            txn.execute(
                "INSERT INTO func_schedules (name, owner, due, doc) VALUES ($1, $2, $3, $4)",
                &[&name, &owner, &due, &doc],
            )?;
            txn.commit()?;
            Ok(Added::Yes)
        })
    }

    fn change_schedule(
        &self,
        name: &str,
        change: &mut dyn FnMut(&[u8]) -> Change,
    ) -> Result<Option<(Vec<u8>, bool)>, StoreError> {
        self.with(|c| {
            let mut txn = c.transaction()?;
            let Some(row) = txn.query_opt(
                "SELECT doc FROM func_schedules WHERE name = $1 FOR UPDATE",
                &[&name],
            )?
            else {
                return Ok(None);
            };
            let old: String = row.get(0);
            let Some((doc, due)) = change(old.as_bytes()) else {
                return Ok(Some((old.into_bytes(), false)));
            };
            let text = String::from_utf8_lossy(&doc).into_owned();
            txn.execute(
                "UPDATE func_schedules SET doc = $2, due = $3 WHERE name = $1",
                &[&name, &text, &due],
            )?;
            txn.commit()?;
            Ok(Some((doc, true)))
        })
    }

    fn remove_schedule(&self, name: &str) -> Result<bool, StoreError> {
        self.with(|c| Ok(c.execute("DELETE FROM func_schedules WHERE name = $1", &[&name])? > 0))
    }

    fn bury_schedule(&self, name: &str, doc: &[u8]) -> Result<bool, StoreError> {
        let doc = String::from_utf8_lossy(doc).into_owned();
        self.with(|c| {
            Ok(c.execute(
                "UPDATE func_schedules SET doc = $2, due = NULL, owner = '' WHERE name = $1",
                &[&name, &doc],
            )? > 0)
        })
    }

    fn due_schedules(&self, now: f64, max: usize) -> Result<(Vec<String>, Option<f64>), StoreError> {
        self.with(|c| {
            let rows = c.query(
                "SELECT name FROM func_schedules WHERE due <= $1 ORDER BY due LIMIT $2",
                &[&now, &(max as i64)],
            )?;
            let next: Option<f64> = c
                .query_one("SELECT min(due) FROM func_schedules WHERE due > $1", &[&now])?
                .get(0);
            Ok((rows.iter().map(|r| r.get(0)).collect(), next))
        })
    }
}
