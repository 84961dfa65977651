//! Re-running a job (AWX's relaunch, DESIGN §14): a new job from the
//! request the store holds — its function, arguments, hosts, batch
//! settings and delegation — once its signature verifies (the store is
//! data: a rewritten request is refused, never re-run). With `failed_only`
//! only the hosts that failed, were unreachable or timed out are taken
//! (AWX's "relaunch on failed hosts"; hosts a batch abandoned before their
//! turn are not: they did not fail). The caller must be allowed what the
//! original needed on those hosts; the new job is the caller's, signed
//! anew, and names the job it re-runs (`rerun_of`).

use common::paths::Root;

use crate::gate::{Call, CallFields, GateError};
use crate::store::{JobMeta, JobRecord, JobStore};
use crate::values::Class;

/// A re-run, checked and ready to start.
pub struct Rerun {
    /// The call the original made, as the gate reads it.
    pub call: Call,
    /// The hosts it runs on.
    pub hosts: Vec<String>,
    pub original: JobMeta,
}

/// The hosts of `record` a re-run takes.
fn chosen(record: &JobRecord, failed_only: bool) -> Vec<String> {
    record
        .hosts
        .iter()
        .filter(|(_, entry)| {
            !failed_only
                || entry.result_xml.as_deref().is_some_and(|xml| {
                    matches!(
                        crate::values::class(&record.meta.function, &super::decode_result(xml)),
                        Class::Failed | Class::Unreachable | Class::TimedOut
                    )
                })
        })
        .map(|(h, _)| h.clone())
        .collect()
}

/// The re-run of job `id`: found (else 404, as for a job the caller may
/// not see: `visible` judges), trusted, with its hosts chosen.
pub fn prepare(
    store: &dyn JobStore,
    root: &Root,
    id: &str,
    failed_only: bool,
    visible: &dyn Fn(&JobRecord) -> bool,
) -> Result<Rerun, GateError> {
    let unknown = || {
        GateError::NotFound(format!(
            "no job {} (unknown, or expired)",
            common::paths::shorten(id)
        ))
    };
    let record = store
        .load(id)
        .map_err(|e| GateError::Engine(e.into()))?
        .ok_or_else(unknown)?;
    if !visible(&record) {
        return Err(unknown());
    }
    let signed: Vec<String> = record.hosts.keys().cloned().collect();
    crate::seal::verify(root, &record.meta, &signed).map_err(|e| {
        GateError::Forbidden(format!(
            "job {id}'s request cannot be trusted, so it is not re-run: {e}"
        ))
    })?;
    let hosts = chosen(&record, failed_only);
    if hosts.is_empty() {
        return Err(GateError::Conflict(if failed_only {
            format!("no host of job {id} failed or was unreachable: nothing to re-run")
        } else {
            format!("job {id} has no hosts")
        }));
    }
    let fields = fields_of(store, &record.meta)?;
    // Through the gate, as every request: what the store holds is read
    // as any door's input.
    let call = Call::new(fields)?;
    Ok(Rerun {
        call,
        hosts,
        original: record.meta,
    })
}

/// The call fields job `meta`'s signed request stands for, as a new
/// async job (a batch keeps its size, wait and failhard).
fn fields_of(store: &dyn JobStore, meta: &crate::store::JobMeta) -> Result<CallFields, GateError> {
    let id = meta.id.as_str();
    let (module, method) = meta
        .function
        .rsplit_once('.')
        .ok_or_else(|| GateError::Invalid(format!("job {id} names no module.method")))?;
    let (words, args) = match &meta.typed_args {
        Some(text) => match serde_json::from_str(text) {
            Ok(serde_json::Value::Array(values)) => (None, values),
            _ => {
                return Err(GateError::Invalid(format!(
                    "job {id}'s typed arguments are unreadable"
                )))
            }
        },
        None => (Some(meta.args.clone()), Vec::new()),
    };
    let mut fields = CallFields {
        spec: meta.spec.clone(),
        module: module.to_string(),
        method: method.to_string(),
        args,
        words,
        asynchronous: true,
        timeout: Some(meta.timeout_secs.to_string()),
        forks: Some(meta.forks.to_string()),
        delegate: meta.delegate,
        ..CallFields::default()
    };
    if meta.batch {
        let rec = match crate::batch::driver::load(store, id) {
            Ok(Some((_, rec))) => rec,
            Ok(None) => {
                return Err(GateError::NotFound(format!(
                    "no batch {} (unknown, or expired)",
                    common::paths::shorten(id)
                )))
            }
            Err(e) => return Err(GateError::Engine(e)),
        };
        fields.batch = Some(rec.state.size.to_string());
        fields.batch_wait = Some(rec.state.batch_wait.to_string());
        fields.failhard = rec.state.failhard;
    }
    Ok(fields)
}

/// Starts `rerun` as a new job of `caller` (`None`: the invoking
/// administrator); its id, and its driver to reap.
pub fn start(
    store: &dyn JobStore,
    root: &Root,
    rerun: Rerun,
    caller: Option<super::start::Caller>,
) -> Result<super::start::Started, GateError> {
    let o = &rerun.original;
    let mut meta = super::start::meta(&rerun.call, rerun.hosts.len(), (o.timeout_secs, o.forks), caller);
    meta.rerun_of = Some(o.id.clone());
    Ok(super::start::start(store, root, &rerun.call, rerun.hosts, meta)?)
}
