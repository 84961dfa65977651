//! Which certificates are revoked, for every check the overlord makes of
//! a minion (workers, pollers, func-api's pool) and of a signed job
//! request: the newest CRL it has (DESIGN §9), local or shared. Candidates:
//! the CA's own CRL in the root (`etc/pki/certmaster/ca/certmaster.crl`),
//! the one the certmaster published into the shared store (`[store] url`),
//! and the newest seen before (kept in `var/lib/func/crl/effective.crl`,
//! so a store outage forgets nothing). A CRL is used only if the CA's
//! signature on it verifies, so a store can withhold a newer CRL but never
//! forge one. The winner (highest CRL number) is written to the effective
//! file, which every credential names; func-api's pool reloads it when it
//! changes.

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use common::paths::Root;

/// How often a process asks the store for its CRL at most.
const ASK_EVERY: Duration = Duration::from_secs(2);

/// The CRL file the overlord's credentials name below `root`: the CA's own
/// when no store is shared (`store`: its `[store] url`), else the effective
/// file, brought up to date (asking the store at most every 2 s per process).
pub fn effective(root: &Root, store: Option<&pgconn::StoreUrl>) -> PathBuf {
    let local = root.ca_crl();
    let Some(url) = store else {
        return local;
    };
    let path = root.status_dir().join("crl").join("effective.crl");
    static ASKED: Mutex<Option<(Instant, PathBuf)>> = Mutex::new(None);
    let mut asked = ASKED.lock().unwrap_or_else(|p| p.into_inner());
    if asked
        .as_ref()
        .is_some_and(|(at, p)| at.elapsed() < ASK_EVERY && *p == path)
    {
        return path;
    }
    *asked = Some((Instant::now(), path.clone()));
    let shared = match pgconn::shared_crl(url) {
        Ok(pem) => pem,
        Err(e) => {
            crate::log::line(&format!(
                "func: CRL from the store: {e} (using the newest known here)"
            ));
            None
        }
    };
    let ca = std::fs::read(root.ca_cert()).unwrap_or_default();
    let read = |p: &std::path::Path| std::fs::read_to_string(p).ok();
    let newest = [read(&local), read(&path), shared]
        .into_iter()
        .flatten()
        .filter_map(|pem| number_if_signed(&pem, &ca).map(|n| (n, pem)))
        .max_by_key(|(n, _)| *n);
    match newest {
        Some((_, pem)) if read(&path).as_deref() != Some(pem.as_str()) => {
            let written = path
                .parent()
                .map_or(Ok(()), common::private::private_dir)
                .and_then(|_| common::private::write(&path, pem.as_bytes(), true));
            if let Err(e) = written {
                crate::log::line(&format!("func: cannot keep the CRL in {}: {e}", path.display()));
                return local;
            }
            path
        }
        // Up to date, or nothing revoked anywhere yet: the same path either
        // way, so a process that keeps it (func-api) sees the first CRL.
        _ => path,
    }
}

/// The CRL's number if `ca_pem`'s key signed it.
fn number_if_signed(pem: &str, ca_pem: &[u8]) -> Option<u128> {
    let der = certs::authority::pem_to_der(pem)?;
    use x509_parser::prelude::FromDer as _;
    let (_, crl) = x509_parser::revocation_list::CertificateRevocationList::from_der(&der).ok()?;
    let ca_der = certs::authority::pem_to_der(std::str::from_utf8(ca_pem).ok()?)?;
    let (_, ca) = x509_parser::parse_x509_certificate(&ca_der).ok()?;
    crl.verify_signature(ca.public_key()).ok()?;
    certs::authority::crl_order(pem).map(|(n, _)| n)
}
