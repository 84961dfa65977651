//! Placing CA, overlord and minion credentials below a `--root`, at Func's
//! paths (DESIGN §3). The certmaster daemon and the test/demo tools use these,
//! so every place that writes credentials writes them the same way.

use common::paths::Root;

use crate::files::{read_text, write_atomic, PRIVATE, PUBLIC};
use crate::{request, Authority, Result, Signed};

/// Name in the overlord's client certificate.
pub const OVERLORD_NAME: &str = "overlord";

/// Loads the CA under `root`, creating it and the overlord's credentials on
/// first use. Returns the CA and whether it was created now.
pub fn ensure_ca(root: &Root, ca_name: &str) -> Result<(Authority, bool)> {
    let (cert_path, key_path) = (root.ca_cert(), root.ca_key());
    let created = if cert_path.exists() && key_path.exists() {
        false
    } else {
        let (ca, key_pem) = Authority::create(ca_name)?;
        write_atomic(&key_path, key_pem.as_bytes(), PRIVATE)?;
        write_atomic(&cert_path, ca.cert_pem().as_bytes(), PUBLIC)?;
        true
    };
    let ca = Authority::load(&read_text(&cert_path)?, &read_text(&key_path)?)?;
    if created || !root.overlord_cert().exists() || !root.overlord_key().exists() {
        let key = request::new_key()?;
        let signed = ca.issue_overlord(OVERLORD_NAME, &key)?;
        write_atomic(&root.overlord_key(), key.serialize_pem().as_bytes(), PRIVATE)?;
        write_atomic(&root.overlord_cert(), signed.cert_pem.as_bytes(), PUBLIC)?;
    }
    Ok((ca, created))
}

/// Makes the root of relay `name` (DESIGN §17) below `relay_root`: the CA
/// certificate (never its key), the relay's own overlord key and
/// certificate (the relay mark: worth its segment only), and its func-api's
/// service certificate for `name`, `extra_names`, `localhost` and the
/// loopback addresses. The name is recorded as a service of this CA: no
/// minion is ever signed under it.
pub fn provision_relay(
    ca_root: &Root,
    ca: &Authority,
    relay_root: &Root,
    name: &str,
    extra_names: &[String],
) -> Result<()> {
    if !common::identity::is_valid_host_name(name) || crate::authority::is_reserved_name(name) {
        return Err(crate::CertError::BadName(name.to_string()));
    }
    let name = name.to_ascii_lowercase();
    write_atomic(
        &ca_root.join(&format!("{SERVICES_DIR}/{name}")),
        b"relay\n",
        PUBLIC,
    )?;
    write_atomic(&relay_root.ca_cert(), ca.cert_pem().as_bytes(), PUBLIC)?;
    let key = request::new_key()?;
    let signed = ca.issue_relay(&name, &key)?;
    write_atomic(
        &relay_root.overlord_key(),
        key.serialize_pem().as_bytes(),
        PRIVATE,
    )?;
    write_atomic(&relay_root.overlord_cert(), signed.cert_pem.as_bytes(), PUBLIC)?;
    let mut names = vec![name.clone()];
    names.extend(extra_names.iter().cloned());
    names.extend(["localhost", "127.0.0.1", "::1"].map(String::from));
    names.dedup();
    let key = request::new_key()?;
    let service = ca.issue_service(&names, &key)?;
    let dir = relay_root.join("etc/pki/func-api");
    write_atomic(&dir.join("func-api.pem"), key.serialize_pem().as_bytes(), PRIVATE)?;
    write_atomic(&dir.join("func-api.cert"), service.cert_pem.as_bytes(), PUBLIC)?;
    Ok(())
}

/// Where the names of this CA's services (relays) are recorded, below the
/// certmaster's root.
pub const SERVICES_DIR: &str = "var/lib/certmaster/certmaster/services";

/// Whether `name` is one of this CA's services (any letter case).
pub fn is_service_name(ca_root: &Root, name: &str) -> bool {
    ca_root
        .join(&format!("{SERVICES_DIR}/{}", name.to_ascii_lowercase()))
        .exists()
}

/// Records a signed certificate in the CA's store (`.../certs/<name>.cert`).
pub fn record_signed(ca_root: &Root, signed: &Signed) -> Result<()> {
    write_atomic(
        &ca_root.signed_certs_dir().join(format!("{}.cert", signed.name)),
        signed.cert_pem.as_bytes(),
        PUBLIC,
    )
}

/// Installs a minion's signed certificate and the CA copy below its root.
pub fn install_minion_cert(minion_root: &Root, name: &str, cert_pem: &str, ca_pem: &str) -> Result<()> {
    write_atomic(&minion_root.minion_cert(name), cert_pem.as_bytes(), PUBLIC)?;
    write_atomic(&minion_root.minion_ca_cert(), ca_pem.as_bytes(), PUBLIC)
}

/// The minion's key below its root, created (0600) if missing.
pub fn ensure_minion_key(minion_root: &Root, name: &str) -> Result<rcgen::KeyPair> {
    let path = minion_root.minion_key(name);
    if path.exists() {
        return request::load_key(&read_text(&path)?);
    }
    let key = request::new_key()?;
    write_atomic(&path, key.serialize_pem().as_bytes(), PRIVATE)?;
    Ok(key)
}

/// Enrolls a minion directly with a CA whose files are at hand (no network):
/// key and CSR under the minion root, signed, recorded and installed. Used by
/// tests and the demo; the certmaster does the same over XML-RPC.
pub fn enroll_locally(ca: &Authority, ca_root: &Root, minion_root: &Root, name: &str) -> Result<Signed> {
    let key = ensure_minion_key(minion_root, name)?;
    let signed = ca.sign_csr(&request::csr(name, &key)?)?;
    record_signed(ca_root, &signed)?;
    install_minion_cert(minion_root, name, &signed.cert_pem, ca.cert_pem())?;
    Ok(signed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn ca_overlord_and_minion_land_at_func_paths() {
        let dir = tempfile::tempdir().unwrap();
        let ca_root = Root::new(dir.path().join("cm"));
        let minion_root = Root::new(dir.path().join("m1"));
        let (ca, created) = ensure_ca(&ca_root, "test-CA").unwrap();
        assert!(created);
        let (_, again) = ensure_ca(&ca_root, "test-CA").unwrap();
        assert!(!again, "second start loads the existing CA");
        enroll_locally(&ca, &ca_root, &minion_root, "m1").unwrap();
        for key in [
            ca_root.ca_key(),
            ca_root.overlord_key(),
            minion_root.minion_key("m1"),
        ] {
            assert_eq!(
                std::fs::metadata(&key).unwrap().permissions().mode() & 0o777,
                0o600,
                "{}",
                key.display()
            );
        }
        assert!(ca_root.signed_certs_dir().join("m1.cert").exists());
        assert!(minion_root.minion_ca_cert().exists());
    }
}
