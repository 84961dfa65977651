//! The embedded store's schedules (`schedules.rs`): table `schedules`
//! (name → record) and `schedule_index` (name → next run, `+∞` when
//! disabled, and owner), changed together in one write transaction.

use redb::{ReadableTable, TableDefinition};

use super::redb::{db_err, read_table, RedbStore};
use super::schedules::{Added, Change, Schedules, MAX_SCHEDULES};
use super::types::StoreError;

const SCHEDULES: TableDefinition<'_, &str, &[u8]> = TableDefinition::new("schedules");
const INDEX: TableDefinition<'_, &str, (f64, &str)> = TableDefinition::new("schedule_index");

fn due_value(due: Option<f64>) -> f64 {
    due.unwrap_or(f64::INFINITY)
}

impl Schedules for RedbStore {
    fn schedule_docs(&self) -> Result<Vec<Vec<u8>>, StoreError> {
        let Some(db) = self.open_existing()? else {
            return Ok(Vec::new());
        };
        let txn = db.begin_read().map_err(db_err)?;
        let Some(table) = read_table(&txn, SCHEDULES)? else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for entry in table.iter().map_err(db_err)? {
            let (_, v) = entry.map_err(db_err)?;
            out.push(v.value().to_vec());
        }
        Ok(out)
    }

    fn schedule_doc(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let Some(db) = self.open_existing()? else {
            return Ok(None);
        };
        let txn = db.begin_read().map_err(db_err)?;
        let Some(table) = read_table(&txn, SCHEDULES)? else {
            return Ok(None);
        };
        let found = table.get(name).map_err(db_err)?;
        Ok(found.map(|v| v.value().to_vec()))
    }

    fn add_schedule(
        &self,
        name: &str,
        owner: &str,
        due: Option<f64>,
        doc: &[u8],
        per_owner: usize,
    ) -> Result<Added, StoreError> {
        self.write(|txn| {
            let mut index = txn.open_table(INDEX).map_err(db_err)?;
            if index.get(name).map_err(db_err)?.is_some() {
                return Ok(Added::Taken);
            }
            let (mut all, mut owned) = (0, 0);
            for entry in index.iter().map_err(db_err)? {
                let (_, v) = entry.map_err(db_err)?;
                all += 1;
                owned += usize::from(v.value().1 == owner);
            }
            if owned >= per_owner {
                return Ok(Added::OwnerFull);
            }
            if all >= MAX_SCHEDULES {
                return Ok(Added::Full);
            }
            index.insert(name, (due_value(due), owner)).map_err(db_err)?;
            txn.open_table(SCHEDULES)
                .map_err(db_err)?
                .insert(name, doc)
                .map_err(db_err)?;
            Ok(Added::Yes)
        })
    }

    fn change_schedule(
        &self,
        name: &str,
        change: &mut dyn FnMut(&[u8]) -> Change,
    ) -> Result<Option<(Vec<u8>, bool)>, StoreError> {
        if self.open_existing()?.is_none() {
            return Ok(None);
        }
        self.write(|txn| {
            let mut table = txn.open_table(SCHEDULES).map_err(db_err)?;
            let Some(old) = table.get(name).map_err(db_err)?.map(|v| v.value().to_vec()) else {
                return Ok(None);
            };
            let Some((doc, due)) = change(&old) else {
                return Ok(Some((old, false)));
            };
            table.insert(name, doc.as_slice()).map_err(db_err)?;
            let mut index = txn.open_table(INDEX).map_err(db_err)?;
            let owner = index
                .get(name)
                .map_err(db_err)?
                .map(|v| v.value().1.to_string())
                .unwrap_or_default();
            index
                .insert(name, (due_value(due), owner.as_str()))
                .map_err(db_err)?;
            Ok(Some((doc, true)))
        })
    }

    fn remove_schedule(&self, name: &str) -> Result<bool, StoreError> {
        if self.open_existing()?.is_none() {
            return Ok(false);
        }
        self.write(|txn| {
            let gone = txn
                .open_table(SCHEDULES)
                .map_err(db_err)?
                .remove(name)
                .map_err(db_err)?
                .is_some();
            txn.open_table(INDEX)
                .map_err(db_err)?
                .remove(name)
                .map_err(db_err)?;
            Ok(gone)
        })
    }

    fn bury_schedule(&self, name: &str, doc: &[u8]) -> Result<bool, StoreError> {
        if self.open_existing()?.is_none() {
            return Ok(false);
        }
        self.write(|txn| {
            let mut table = txn.open_table(SCHEDULES).map_err(db_err)?;
            if table.get(name).map_err(db_err)?.is_none() {
                return Ok(false);
            }
            table.insert(name, doc).map_err(db_err)?;
            txn.open_table(INDEX)
                .map_err(db_err)?
                .insert(name, (f64::INFINITY, ""))
                .map_err(db_err)?;
            Ok(true)
        })
    }

    fn due_schedules(&self, now: f64, max: usize) -> Result<(Vec<String>, Option<f64>), StoreError> {
        let Some(db) = self.open_existing()? else {
            return Ok((Vec::new(), None));
        };
        let txn = db.begin_read().map_err(db_err)?;
        let Some(index) = read_table(&txn, INDEX)? else {
            return Ok((Vec::new(), None));
        };
        let (mut due, mut next) = (Vec::new(), None::<f64>);
        for entry in index.iter().map_err(db_err)? {
            let (k, v) = entry.map_err(db_err)?;
            let at = v.value().0;
            if at <= now {
                if due.len() < max {
                    due.push(k.value().to_string());
                }
            } else if at.is_finite() {
                next = Some(next.map_or(at, |n| n.min(at)));
            }
        }
        Ok((due, next))
    }
}
