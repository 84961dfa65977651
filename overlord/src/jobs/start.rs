//! Starting a checked call (`gate::Call`) as a job, the same for every
//! door: the request recorded and signed in the store (DESIGN §9), then its
//! detached driver started from our own executable — `__driver` for an
//! async job, `__batch` for a batch, which is handed the batch's lease. A
//! synchronous batch is recorded the same way and driven by its caller.

use std::process::Child;

use common::paths::Root;

use crate::batch::{driver as batch_driver, machine};
use crate::error::EngineError;
use crate::gate::{Call, Run};
use crate::store::{JobMeta, JobStore};

/// Who asks, when not the invoking user: func-api's token, and its rights
/// (`SPEC=METHODS` rules, `None` for an administrator), signed with the request.
pub struct Caller {
    pub user: String,
    pub rights: Option<Vec<String>>,
    /// The schedule whose run the job is.
    pub schedule: Option<String>,
}

/// A job that was recorded; `driver` is its detached driver, when one was
/// started (not for a batch its caller drives).
pub struct Started {
    pub id: String,
    pub driver: Option<Child>,
    /// The batch size over these hosts (a batch only).
    pub batch_size: Option<usize>,
}

/// The job's record as the store keeps it.
pub fn meta(call: &Call, hosts: usize, (timeout, forks): (f64, usize), caller: Option<Caller>) -> JobMeta {
    let (words, typed) = call.stored_args();
    let batch = matches!(call.run, Run::Batch { .. });
    let mut meta = JobMeta::new_call(
        &call.spec,
        &call.function(),
        words,
        typed,
        hosts,
        (timeout, forks),
        batch,
    );
    if let Some(c) = caller {
        meta.user = c.user;
        meta.rights = c.rights;
        meta.schedule = c.schedule;
    }
    meta.delegate = call.delegate;
    meta
}

/// Records `call` over `names` and starts its driver (none for a batch
/// that is not `detached`: its caller drives it).
pub fn start(
    store: &dyn JobStore,
    root: &Root,
    call: &Call,
    names: Vec<String>,
    meta: JobMeta,
) -> Result<Started, EngineError> {
    let Run::Batch {
        size,
        wait,
        failhard,
        detached,
    } = &call.run
    else {
        let (id, driver) = crate::jobs::driver::submit(store, root, meta, names)?;
        return Ok(Started {
            id,
            driver: Some(driver),
            batch_size: None,
        });
    };
    let n = machine::size(size, names.len()).map_err(EngineError::Record)?;
    let state = machine::BatchState::new(names, n, *wait, *failhard, meta.timeout_secs);
    let mode = if *detached { "async" } else { "sync" };
    let (id, _) = batch_driver::create(store, root, meta, state, mode)?;
    if !detached {
        return Ok(Started {
            id,
            driver: None,
            batch_size: Some(n),
        });
    }
    let exe = common::process::own_exe().map_err(|source| EngineError::Spawn {
        what: "the batch driver (its executable is not found)",
        source,
    })?;
    let child = batch_driver::spawn(&exe, root, &id, store).map_err(|source| EngineError::Spawn {
        what: "the batch driver",
        source,
    })?;
    batch_driver::hand_over(store, &id, &child, crate::settings::batch_lease(root))?;
    Ok(Started {
        id,
        driver: Some(child),
        batch_size: Some(n),
    })
}
