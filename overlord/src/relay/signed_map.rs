//! The delegation map as a shared store keeps it: signed with an overlord
//! key when `func-build-map` writes it, verified before any overlord uses
//! it (DESIGN §9: the store is data, not authority). A store writer who
//! rewrote the map (`d1: {}` for a whole segment) could otherwise make
//! `func --delegate '*'` skip that segment with exit 0, or send a
//! segment's calls to another relay. An older signed map put back is
//! refused too: each overlord keeps the issue time of the newest map it
//! has used (`var/lib/func/map.issued`).

use common::paths::Root;
use serde::{Deserialize, Serialize};

use super::error::RelayError;
use crate::store::Seal;

/// The map's document in the store.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SignedMap {
    v: u32,
    /// When it was signed (epoch seconds).
    issued: f64,
    /// Func's YAML of the map.
    map: String,
    seal: Seal,
}

fn signed_bytes(issued: f64, map: &str) -> Vec<u8> {
    let mut out = b"func-delegation-map\n".to_vec();
    out.extend(serde_json::to_vec(&(1, issued, map)).unwrap_or_default());
    out
}

fn untrusted(detail: String) -> RelayError {
    RelayError::Map {
        path: "the shared store's map".into(),
        detail,
    }
}

/// The document to keep in the store for the map `yaml` (Func's YAML),
/// signed with the overlord key below `root`.
pub fn seal(root: &Root, yaml: &str) -> Result<String, RelayError> {
    let signer = crate::seal::Signer::load(root).map_err(|e| RelayError::Config(e.to_string()))?;
    let issued = crate::store::now();
    let yaml = yaml.to_string();
    let seal = signer
        .sign(&signed_bytes(issued, &yaml))
        .ok_or_else(|| RelayError::Config("cannot sign the map with the overlord key".into()))?;
    let doc = SignedMap {
        v: 1,
        issued,
        map: yaml,
        seal,
    };
    serde_json::to_string(&doc).map_err(|e| RelayError::Config(e.to_string()))
}

/// The map (its YAML) in the store's document `text`, if an overlord of
/// our CA signed it and it is not older than the newest this overlord has used.
pub fn open(root: &Root, text: &str) -> Result<String, RelayError> {
    let doc: SignedMap = serde_json::from_str(text).map_err(|_| {
        untrusted(
            "not signed (written by an older func-build-map, or by someone else): run func-build-map again"
                .into(),
        )
    })?;
    crate::seal::verify_bytes(root, &doc.seal, &signed_bytes(doc.issued, &doc.map))
        .map_err(|e| untrusted(format!("its signature does not hold ({e}): not used")))?;
    let seen_path = root.join("var/lib/func/map.issued");
    let seen: f64 = std::fs::read_to_string(&seen_path)
        .ok()
        .and_then(|t| t.trim().parse().ok())
        .unwrap_or(0.0);
    if doc.issued < seen {
        return Err(untrusted(format!(
            "it was signed at {:.0}, before the newest map this overlord used ({seen:.0}): an old map put back, not used",
            doc.issued
        )));
    }
    if doc.issued > seen {
        let kept = seen_path
            .parent()
            .map_or(Ok(()), common::private::private_dir)
            .and_then(|()| common::private::write(&seen_path, format!("{}\n", doc.issued).as_bytes(), true));
        if let Err(e) = kept {
            tracing::warn!("cannot keep {}: {e}", seen_path.display());
        }
    }
    Ok(doc.map)
}
