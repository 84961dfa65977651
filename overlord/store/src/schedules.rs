//! Where func-api's schedules are kept (DESIGN §14): in the job store, so
//! several func-api on one shared store run each schedule's runs once.
//! Each backend keeps a schedule's record (JSON, `schedule::Schedule`), its
//! owner and its next run (`None`: disabled) beside it, so that an idle
//! scheduler's look ([`Schedules::due_schedules`]) reads no record, and a run
//! is claimed by changing the record in one transaction
//! ([`Schedules::change_schedule`]: a compare-and-set of its next run, the
//! run's lease) that only one func-api can win.

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

/// The schedules a backend keeps (each backend: `schedules_redb.rs`,
/// `schedules_pg.rs`); `Store` reaches them through `Backend`.
pub trait Schedules {
    /// Every schedule's record.
    fn schedule_docs(&self) -> Result<Vec<Vec<u8>>, StoreError>;
    /// Schedule `name`'s record.
    fn schedule_doc(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError>;
    /// Adds schedule `name` of `owner` (at most `per_owner` each, and
    /// [`MAX_SCHEDULES`] in all), next run `due`.
    fn add_schedule(
        &self,
        name: &str,
        owner: &str,
        due: Option<f64>,
        doc: &[u8],
        per_owner: usize,
    ) -> Result<Added, StoreError>;
    /// Changes schedule `name` in one transaction: `change` sees its
    /// record and returns what to store (`None` leaves it). The record as
    /// stored afterwards (`None`: no such schedule).
    fn change_schedule(
        &self,
        name: &str,
        change: &mut dyn FnMut(&[u8]) -> Change,
    ) -> Result<Option<(Vec<u8>, bool)>, StoreError>;
    /// Removes schedule `name`; whether it existed.
    fn remove_schedule(&self, name: &str) -> Result<bool, StoreError>;
    /// Replaces schedule `name`'s record with its tombstone `doc`: never
    /// due, and counted for no owner; whether it existed.
    fn bury_schedule(&self, name: &str, doc: &[u8]) -> Result<bool, StoreError>;
    /// The schedules whose next run is at or before `now` (at most
    /// `max`), and the earliest next run after it.
    fn due_schedules(&self, now: f64, max: usize) -> Result<(Vec<String>, Option<f64>), StoreError>;
}
