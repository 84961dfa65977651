//! Where func-api's schedules are kept (DESIGN §14): in the job store, so
//! several func-api on one shared store run each schedule's runs once.
//! Each backend keeps a schedule's record (JSON, `schedule::Schedule`), its
//! owner and its next run (`None`: disabled) beside it, so that an idle
//! scheduler's look ([`Store::due_schedules`]) reads no record, and a run
//! is claimed by changing the record in one transaction
//! ([`Store::change_schedule`]: a compare-and-set of its next run, the
//! run's lease) that only one func-api can win.

use super::backend::Store;
use super::types::StoreError;

/// Why a schedule was not added.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Added {
    Yes,
    /// The name is taken.
    Taken,
    /// The owner has as many as it may.
    OwnerFull,
    /// The store has as many as it may.
    Full,
}

/// A change made to a schedule's record in one transaction: the new
/// record and its next run (`None`: disabled).
pub type Change = Option<(Vec<u8>, Option<f64>)>;

/// Schedules a store keeps at most.
pub const MAX_SCHEDULES: usize = 100_000;

impl Store {
    /// Every schedule's record.
    pub fn schedule_docs(&self) -> Result<Vec<Vec<u8>>, StoreError> {
        match self {
            Store::Redb(r) => r.schedule_docs(),
            Store::Postgres(pg) => pg.schedule_docs(),
            Store::Broken(why) => Err(StoreError::Unusable(why.clone())),
        }
    }

    /// Schedule `name`'s record.
    pub fn schedule_doc(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        match self {
            Store::Redb(r) => r.schedule_doc(name),
            Store::Postgres(pg) => pg.schedule_doc(name),
            Store::Broken(why) => Err(StoreError::Unusable(why.clone())),
        }
    }

    /// Adds schedule `name` of `owner` (at most `per_owner` each, and
    /// [`MAX_SCHEDULES`] in all), next run `due`.
    pub fn add_schedule(
        &self,
        name: &str,
        owner: &str,
        due: Option<f64>,
        doc: &[u8],
        per_owner: usize,
    ) -> Result<Added, StoreError> {
        match self {
            Store::Redb(r) => r.add_schedule(name, owner, due, doc, per_owner),
            Store::Postgres(pg) => pg.add_schedule(name, owner, due, doc, per_owner),
            Store::Broken(why) => Err(StoreError::Unusable(why.clone())),
        }
    }

    /// Changes schedule `name` in one transaction: `change` sees its
    /// record and returns what to store (`None` leaves it). The record as
    /// stored afterwards (`None`: no such schedule).
    pub fn change_schedule(
        &self,
        name: &str,
        change: &mut dyn FnMut(&[u8]) -> Change,
    ) -> Result<Option<(Vec<u8>, bool)>, StoreError> {
        match self {
            Store::Redb(r) => r.change_schedule(name, change),
            Store::Postgres(pg) => pg.change_schedule(name, change),
            Store::Broken(why) => Err(StoreError::Unusable(why.clone())),
        }
    }

    /// Removes schedule `name`; whether it existed.
    pub fn remove_schedule(&self, name: &str) -> Result<bool, StoreError> {
        match self {
            Store::Redb(r) => r.remove_schedule(name),
            Store::Postgres(pg) => pg.remove_schedule(name),
            Store::Broken(why) => Err(StoreError::Unusable(why.clone())),
        }
    }

    /// Replaces schedule `name`'s record with its tombstone `doc`: never
    /// due, and counted for no owner; whether it existed.
    pub fn bury_schedule(&self, name: &str, doc: &[u8]) -> Result<bool, StoreError> {
        match self {
            Store::Redb(r) => r.bury_schedule(name, doc),
            Store::Postgres(pg) => pg.bury_schedule(name, doc),
            Store::Broken(why) => Err(StoreError::Unusable(why.clone())),
        }
    }

    /// The schedules whose next run is at or before `now` (at most
    /// `max`), and the earliest next run after it.
    pub fn due_schedules(&self, now: f64, max: usize) -> Result<(Vec<String>, Option<f64>), StoreError> {
        match self {
            Store::Redb(r) => r.due_schedules(now, max),
            Store::Postgres(pg) => pg.due_schedules(now, max),
            Store::Broken(why) => Err(StoreError::Unusable(why.clone())),
        }
    }
}
