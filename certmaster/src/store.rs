//! The certmaster's on-disk state below its root, shared by the daemon and
//! `certmaster-ca` (which may run at the same time: every change happens
//! under an exclusive lock file):
//!
//! - `var/lib/certmaster/certmaster/csrs/<name>.csr`: pending requests
//! - `var/lib/certmaster/certmaster/certs/<name>.cert`: signed certificates
//! - `var/lib/certmaster/certmaster/certs/<name>.addr`: where the minion said
//!   it can be reached (`host:port`), for the overlord
//! - `var/lib/certmaster/certmaster/csrs/<name>.from`: where a pending
//!   request came from (`{"peer", "advertised", "time"}`), shown to the
//!   administrator who compares its fingerprint (`GET /api/v1/keys`)
//! - `var/lib/certmaster/certmaster/revoked`: `serial-hex unix-time name` lines
//! - `etc/pki/certmaster/ca/certmaster.crl`: the CRL minions fetch

use std::fs;
use std::path::PathBuf;

use common::paths::Root;
use time::OffsetDateTime;

use certs::authority::{cert_public_key, cert_serial, csr_info};
use certs::files::{read_text, write_atomic, PUBLIC};
use certs::{Authority, CertError, Result};

/// The answer to a `wait_for_cert` request.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Signed (now or before): the certificate, PEM.
    Signed(String),
    /// Waiting for `certmaster-ca --sign`.
    Pending,
    /// Refused, with the reason for the requester.
    Refused(String),
}

/// Handle on the certmaster's files.
pub struct Store {
    root: Root,
    /// Writes of requests are synced many at a time ([`Store::commit`]),
    /// not each on its own (the daemon's; `certmaster-ca` writes durably).
    group: Option<std::sync::Arc<GroupCommit>>,
    /// The shared store's minion list, kept up to date one minion at a time.
    mirror: std::sync::Mutex<Option<pgconn::MinionMirror>>,
}

/// Group commit: every writer waits until a sync of the file system that
/// began after its writes has ended; one sync serves every writer that
/// came before it, so N signings cost far fewer than N syncs.
#[derive(Debug, Default)]
pub struct GroupCommit {
    state: std::sync::Mutex<Commits>,
    synced: std::sync::Condvar,
}

#[derive(Debug, Default)]
struct Commits {
    /// Writers that asked so far; those up to `done` are durable.
    asked: u64,
    done: u64,
    syncing: bool,
}

impl GroupCommit {
    /// Returns once what this thread wrote below `dir` is on disk.
    fn wait(&self, dir: &std::path::Path) -> std::io::Result<()> {
        let lock = || self.state.lock().unwrap_or_else(|p| p.into_inner());
        let mut s = lock();
        s.asked += 1;
        let me = s.asked;
        loop {
            if s.done >= me {
                return Ok(());
            }
            if !s.syncing {
                s.syncing = true;
                let upto = s.asked;
                drop(s);
                let synced = sync_fs(dir);
                s = lock();
                s.syncing = false;
                if synced.is_ok() {
                    s.done = s.done.max(upto);
                }
                self.synced.notify_all();
                synced?;
                continue;
            }
            s = self.synced.wait(s).unwrap_or_else(|p| p.into_inner());
        }
    }
}

/// `syncfs(2)` of the file system holding `dir`.
fn sync_fs(dir: &std::path::Path) -> std::io::Result<()> {
    let f = fs::File::open(dir)?;
    // SAFETY: syncfs on a descriptor we own for the duration of the call.
    let rc = unsafe { libc::syncfs(std::os::fd::AsRawFd::as_raw_fd(&f)) };
    match rc {
        0 => Ok(()),
        _ => Err(std::io::Error::last_os_error()),
    }
}

/// Whether `addr` is a plain `host:port` (`[v6]:port` too): printable ASCII
/// only, so no invisible, bidi or control character (U+202E, U+200B) can
/// reach a listing or the administrator's screen, and a port number.
pub fn is_host_port(addr: &str) -> bool {
    let Some((host, port)) = addr.rsplit_once(':') else {
        return false;
    };
    addr.len() <= MAX_ADDR
        && !host.is_empty()
        && addr.bytes().all(|b| b.is_ascii_graphic())
        && port.parse::<u16>().is_ok_and(|p| p > 0)
}

/// Longest advertised address recorded.
const MAX_ADDR: usize = 300;
/// Largest CSR accepted (DER bytes); a real one is well under 2 KiB.
const MAX_CSR_DER: usize = 8 * 1024;

impl Store {
    pub fn new(root: Root) -> Self {
        Self {
            root,
            group: None,
            mirror: std::sync::Mutex::new(None),
        }
    }

    /// This store, writing requests without syncing each: call
    /// [`Store::commit`] before answering (the daemon, many at once).
    pub fn grouped(mut self) -> Self {
        self.group = Some(Default::default());
        self
    }

    /// Makes what this thread wrote durable: with [`Store::grouped`], waits
    /// for a sync of the file system shared with other writers; else every
    /// write was durable already.
    pub fn commit(&self) -> Result<()> {
        match &self.group {
            Some(g) => {
                // Any directory of the file system does for syncfs: the root always exists.
                let dir = self.root.dir().to_path_buf();
                g.wait(&dir).map_err(|source| CertError::Io {
                    action: "syncing",
                    path: dir,
                    source,
                })
            }
            None => Ok(()),
        }
    }

    fn put(&self, path: &std::path::Path, contents: &[u8]) -> Result<()> {
        match self.group {
            Some(_) => certs::files::write_deferred(path, contents, PUBLIC),
            None => write_atomic(path, contents, PUBLIC),
        }
    }

    pub fn root(&self) -> &Root {
        &self.root
    }

    // Files are keyed by the canonical (lower-case) name: `M1` and `m1`
    // are one minion (DESIGN §5).
    fn csr_path(&self, name: &str) -> PathBuf {
        self.root
            .pending_csrs_dir()
            .join(format!("{}.csr", name.to_ascii_lowercase()))
    }
    fn cert_path(&self, name: &str) -> PathBuf {
        self.root
            .signed_certs_dir()
            .join(format!("{}.cert", name.to_ascii_lowercase()))
    }
    fn origin_path(&self, name: &str) -> PathBuf {
        self.root
            .pending_csrs_dir()
            .join(format!("{}.from", name.to_ascii_lowercase()))
    }
    /// The key of a request an administrator rejected (its fingerprint).
    fn rejected_path(&self, name: &str) -> PathBuf {
        self.root
            .pending_csrs_dir()
            .join(format!("{}.rejected", name.to_ascii_lowercase()))
    }
    fn addr_path(&self, name: &str) -> PathBuf {
        self.root
            .signed_certs_dir()
            .join(format!("{}.addr", name.to_ascii_lowercase()))
    }
    fn revoked_path(&self) -> PathBuf {
        self.root.join("var/lib/certmaster/certmaster/revoked")
    }
    /// The published CRL.
    pub fn crl_path(&self) -> PathBuf {
        self.root.ca_crl()
    }

    /// Holds the store's exclusive lock until dropped.
    fn lock(&self) -> Result<fs::File> {
        let path = self.root.join("var/lib/certmaster/certmaster/.lock");
        let io = |source| CertError::Io {
            action: "locking",
            path: path.clone(),
            source,
        };
        common::private::state_dir(
            path.parent().unwrap_or(self.root.dir()),
            common::private::PUBLIC_DIR_MODE,
        )
        .map_err(io)?;
        // 0600 (an older 0644 one is tightened): flock works on any open
        // descriptor, so a user who could read it could hold the lock and
        // stop enrollment and revocation.
        common::private::tighten(&path).map_err(io)?;
        let file = common::private::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(io)?;
        // SAFETY: flock on a descriptor we own; released when `file` closes.
        let rc = unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&file), libc::LOCK_EX) };
        if rc != 0 {
            return Err(io(std::io::Error::last_os_error()));
        }
        Ok(file)
    }

    /// Func's `wait_for_cert`, without its weaknesses: a name that already has
    /// a certificate or a pending request with another key is refused (no
    /// takeover); the address the minion advertises is recorded.
    pub fn request(
        &self,
        ca: &Authority,
        csr_pem: &str,
        address: Option<&str>,
        autosign: bool,
    ) -> Result<Outcome> {
        self.request_admitted(ca, csr_pem, address, autosign, None, &mut |_| None)
    }

    /// [`Store::request`], where a request that would add a new pending
    /// CSR is first put to `admit` (under the store's lock), which may
    /// refuse it with a reason (the certmaster's caps on pending requests).
    ///
    /// Only the CSR re-encoded from its DER is stored (never the text as
    /// sent), and the advertised address is recorded only for a name that
    /// is signed.
    pub fn request_admitted(
        &self,
        ca: &Authority,
        csr_pem: &str,
        address: Option<&str>,
        autosign: bool,
        peer: Option<std::net::IpAddr>,
        admit: &mut dyn FnMut(&str) -> Option<String>,
    ) -> Result<Outcome> {
        let Some(der) = certs::authority::pem_to_der(csr_pem).filter(|d| d.len() <= MAX_CSR_DER) else {
            return Ok(Outcome::Refused(format!(
                "not a PEM certificate request of at most {MAX_CSR_DER} bytes"
            )));
        };
        let csr_pem = &pem::encode(&pem::Pem::new("CERTIFICATE REQUEST", der));
        let (name, key) = match csr_info(csr_pem) {
            Ok(info) => info,
            Err(
                e @ (CertError::BadName(_)
                | CertError::Reserved(_)
                | CertError::IpLiteral(_)
                | CertError::NoName
                | CertError::BadRequest),
            ) => return Ok(Outcome::Refused(e.to_string())),
            Err(e) => return Err(e),
        };
        let _guard = self.lock()?;
        if let Some(addr) = address {
            if !is_host_port(addr) {
                return Ok(Outcome::Refused("advertised address is not a host:port".into()));
            }
        }
        if let Some(why) = self.case_clash(csr_pem, &name)? {
            return Ok(Outcome::Refused(why));
        }
        let fingerprint = certs::authority::key_fingerprint(&key);
        let rejected = fs::read_to_string(self.rejected_path(&name)).unwrap_or_default();
        if rejected.trim() == fingerprint {
            return Ok(Outcome::Refused(format!(
                "the request of {name} with this key was rejected by an administrator (certmaster-ca --clean, or Reject on the keys page): a new key may ask again"
            )));
        }
        if certs::layout::is_service_name(&self.root, &name) {
            return Ok(Outcome::Refused(format!(
                "{name} is the name of a relay of this CA: never a minion's"
            )));
        }
        let cert_path = self.cert_path(&name);
        if cert_path.exists() {
            let cert = read_text(&cert_path)?;
            if cert_public_key(&cert)? != key {
                return Ok(Outcome::Refused(format!("{name} already has a certificate for another key; run certmaster-ca --clean {name} first")));
            }
            self.record_address(&name, address)?;
            return Ok(Outcome::Signed(cert));
        }
        let csr_path = self.csr_path(&name);
        if csr_path.exists() {
            let pending = read_text(&csr_path)?;
            if csr_info(&pending).map(|(_, k)| k).ok().as_ref() != Some(&key) {
                return Ok(Outcome::Refused(format!(
                    "another request for {name} is pending; run certmaster-ca --clean {name} first"
                )));
            }
            return Ok(Outcome::Pending);
        }
        if autosign {
            let signed = ca.sign_csr(csr_pem)?;
            self.put(&cert_path, signed.cert_pem.as_bytes())?;
            self.record_address(&name, address)?;
            return Ok(Outcome::Signed(signed.cert_pem));
        }
        if let Some(why) = admit(&name) {
            return Ok(Outcome::Refused(why));
        }
        self.put(&csr_path, csr_pem.as_bytes())?;
        let from = serde_json::json!({
            "peer": peer.map(|p| p.to_string()),
            "advertised": address,
            "time": OffsetDateTime::now_utc().unix_timestamp(),
        });
        self.put(&self.origin_path(&name), format!("{from}\n").as_bytes())?;
        Ok(Outcome::Pending)
    }

    /// Renames files kept under a name with upper-case letters (written
    /// before names were canonical) to the lower-case name, so that every
    /// lookup finds them. Two files whose names differ only in case are
    /// both kept and said: an administrator must `--clean` one.
    pub fn canonicalize_names(&self) -> Result<()> {
        let _guard = self.lock()?;
        for dir in [self.root.signed_certs_dir(), self.root.pending_csrs_dir()] {
            for entry in fs::read_dir(&dir).into_iter().flatten().flatten() {
                let Some(file) = entry.file_name().to_str().map(str::to_string) else {
                    continue;
                };
                let lower = file.to_ascii_lowercase();
                if lower == file {
                    continue;
                }
                let target = dir.join(&lower);
                if target.exists() {
                    tracing::warn!("{} and {lower} name one minion (host names ignore case): keeping both until certmaster-ca --clean removes one", file);
                    continue;
                }
                fs::rename(entry.path(), &target).map_err(|source| CertError::Io {
                    action: "renaming",
                    path: entry.path(),
                    source,
                })?;
                tracing::info!("{file} is now {lower} (names are kept in lower case)");
            }
        }
        Ok(())
    }

    /// A reason to refuse a request whose name differs only in letter case
    /// from a name already signed or pending (`M1` beside `m1`): TLS names
    /// and ACL globs ignore case, so it would be the same minion.
    fn case_clash(&self, csr_pem: &str, canonical: &str) -> Result<Option<String>> {
        let asked = certs::authority::csr_requested_name(csr_pem)?;
        let enrolled = match self.cert(canonical) {
            Some(cert) => Some(certs::authority::cert_common_name(&cert)?),
            None => fs::read_to_string(self.csr_path(canonical))
                .ok()
                .and_then(|csr| certs::authority::csr_requested_name(&csr).ok()),
        };
        Ok(enrolled.filter(|e| *e != asked).map(|e| {
            format!("{asked} differs only in letter case from {e}, which is already enrolled or pending: host names ignore case")
        }))
    }

    fn record_address(&self, name: &str, address: Option<&str>) -> Result<()> {
        match address {
            // Said again at every start: written only when it changed.
            Some(addr) if !addr.is_empty() && self.address(name).as_deref() != Some(addr) => {
                self.put(&self.addr_path(name), format!("{addr}\n").as_bytes())
            }
            _ => Ok(()),
        }
    }

    /// Where minion `name` said it can be reached (an address recorded by
    /// an older version that is not a plain `host:port` is not used).
    pub fn address(&self, name: &str) -> Option<String> {
        fs::read_to_string(self.addr_path(name))
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| is_host_port(s))
    }

    /// With `[store] url` in certmaster.conf, makes the shared store's
    /// minion list match the signed certificates here (names and
    /// addresses; a name no longer signed is marked revoked), so overlords
    /// on other hosts resolve SPECs from it, and publishes the CRL there. A
    /// store that cannot be reached
    /// is logged and tried again at the next change (or start).
    pub fn share(&self) {
        let Ok(ini) = common::config::Ini::load(&self.root.certmaster_conf()) else {
            return;
        };
        let Some(url) = ini.str("store", "url").map(str::trim).filter(|u| !u.is_empty()) else {
            return;
        };
        let url = match pgconn::StoreUrl::parse(url) {
            Ok(url) => url,
            Err(e) => {
                tracing::warn!(error = %e, "certmaster.conf [store] url");
                return;
            }
        };
        let signed: Vec<(String, Option<String>)> = self
            .signed()
            .into_iter()
            .map(|n| {
                let a = self.address(&n);
                (n, a)
            })
            .collect();
        match pgconn::sync_minions(&url, &signed) {
            Ok(()) => tracing::debug!(minions = signed.len(), store = url.shown(), "minion list shared"),
            Err(e) => tracing::warn!(error = %e, "cannot share the minion list"),
        }
        // The CRL too: overlords without the CA's files honour it.
        let crl = self.crl();
        if let Some((number, _)) = certs::authority::crl_order(&crl) {
            if let Err(e) = pgconn::publish_crl(&url, &crl, number) {
                tracing::warn!(error = %e, "cannot share the CRL");
            }
        }
    }

    /// With `[store] url` in certmaster.conf, lists minion `name` (signed
    /// now, or asking again) in the shared store: one row, not the whole
    /// list ([`Store::share`] makes the whole list match, at start and
    /// after `certmaster-ca` changes). A store that cannot be reached is
    /// logged; the next full share mends it.
    pub fn share_one(&self, name: &str) {
        let mut mirror = self.mirror.lock().unwrap_or_else(|p| p.into_inner());
        if mirror.is_none() {
            let Ok(ini) = common::config::Ini::load(&self.root.certmaster_conf()) else {
                return;
            };
            let Some(url) = ini.str("store", "url").map(str::trim).filter(|u| !u.is_empty()) else {
                return;
            };
            match pgconn::StoreUrl::parse(url) {
                Ok(url) => *mirror = Some(pgconn::MinionMirror::new(url)),
                Err(e) => {
                    tracing::warn!(error = %e, "certmaster.conf [store] url");
                    return;
                }
            }
        }
        let Some(m) = mirror.as_ref() else { return };
        if let Err(e) = m.upsert(&[(name.to_string(), self.address(name))]) {
            tracing::warn!(error = %e, "cannot list {name} in the shared store");
        }
    }

    /// Whether `name` has a pending request.
    pub fn is_pending(&self, name: &str) -> bool {
        self.csr_path(name).exists()
    }

    /// Names with a pending request, sorted.
    pub fn pending(&self) -> Vec<String> {
        names_with(&self.root.pending_csrs_dir(), "csr")
    }

    /// Names with a signed certificate, sorted.
    pub fn signed(&self) -> Vec<String> {
        names_with(&self.root.signed_certs_dir(), "cert")
    }

    /// The signed certificate of `name`, PEM.
    pub fn cert(&self, name: &str) -> Option<String> {
        fs::read_to_string(self.cert_path(name)).ok()
    }

    /// The fingerprint of the pending request of `name` (its public key).
    pub fn pending_fingerprint(&self, name: &str) -> Option<String> {
        let csr = fs::read_to_string(self.csr_path(name)).ok()?;
        csr_info(&csr)
            .ok()
            .map(|(_, key)| certs::authority::key_fingerprint(&key))
    }

    /// Where the pending request of `name` came from: the peer's address
    /// and the address the minion advertised (each `None` when unknown).
    pub fn pending_origin(&self, name: &str) -> (Option<String>, Option<String>) {
        let doc: serde_json::Value = fs::read(self.origin_path(name))
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default();
        let text = |k: &str| doc.get(k).and_then(|v| v.as_str()).map(str::to_string);
        (text("peer"), text("advertised"))
    }

    /// The fingerprint of the signed certificate of `name` (its public key).
    pub fn signed_fingerprint(&self, name: &str) -> Option<String> {
        let cert = self.cert(name)?;
        cert_public_key(&cert)
            .ok()
            .map(|key| certs::authority::key_fingerprint(&key))
    }

    /// The revoked certificates: (name, serial in hex, when, epoch seconds),
    /// oldest first.
    pub fn revoked(&self) -> Vec<(String, String, i64)> {
        fs::read_to_string(self.revoked_path())
            .unwrap_or_default()
            .lines()
            .filter_map(|l| {
                let mut parts = l.split_whitespace();
                let serial = parts.next()?.to_string();
                let at = parts.next()?.parse().ok()?;
                Some((parts.next()?.to_string(), serial, at))
            })
            .collect()
    }

    /// Signs the pending request of `name`; returns the CSR and cert paths.
    pub fn sign_pending(&self, ca: &Authority, name: &str) -> Result<(PathBuf, PathBuf)> {
        self.sign_pending_checked(ca, name, None)
    }

    /// [`Store::sign_pending`], but only if the request's fingerprint is
    /// `expected` (compared loosely: case, `:`, a `SHA256` prefix), checked
    /// on the very request that is signed.
    pub fn sign_pending_checked(
        &self,
        ca: &Authority,
        name: &str,
        expected: Option<&str>,
    ) -> Result<(PathBuf, PathBuf)> {
        let _guard = self.lock()?;
        let csr_path = self.csr_path(name);
        let csr = read_text(&csr_path)?;
        if let Some(expected) = expected {
            let actual = csr_info(&csr).map(|(_, key)| certs::authority::key_fingerprint(&key))?;
            if !common::identity::fingerprints_match(&actual, expected) {
                return Err(CertError::FingerprintMismatch {
                    name: name.to_string(),
                    expected: expected.to_string(),
                });
            }
        }
        let signed = ca.sign_csr(&csr)?;
        let cert_path = self.cert_path(&signed.name);
        write_atomic(&cert_path, signed.cert_pem.as_bytes(), PUBLIC)?;
        fs::remove_file(&csr_path).map_err(|source| CertError::Io {
            action: "removing",
            path: csr_path.clone(),
            source,
        })?;
        let _ = fs::remove_file(self.origin_path(name));
        Ok((csr_path, cert_path))
    }

    /// Removes the pending request and signed certificate of `name`, revokes
    /// the certificate and republishes the CRL. Returns the removed files.
    pub fn clean(&self, ca: &Authority, name: &str) -> Result<Vec<PathBuf>> {
        let _guard = self.lock()?;
        let mut removed = Vec::new();
        let cert_path = self.cert_path(name);
        // A request never signed is rejected: the same key asking again is
        // refused and told so (Salt's rejected keys), a new key may ask.
        if !cert_path.exists() {
            if let Some(fp) = self.pending_fingerprint(name) {
                write_atomic(&self.rejected_path(name), format!("{fp}\n").as_bytes(), PUBLIC)?;
            }
        }
        if let Ok(cert) = fs::read_to_string(&cert_path) {
            let serial = cert_serial(&cert)?;
            let mut revoked = fs::read_to_string(self.revoked_path()).unwrap_or_default();
            revoked.push_str(&format!(
                "{} {} {name}\n",
                hex(&serial),
                OffsetDateTime::now_utc().unix_timestamp()
            ));
            write_atomic(&self.revoked_path(), revoked.as_bytes(), PUBLIC)?;
            self.publish_crl(ca)?;
        }
        for path in [
            self.csr_path(name),
            cert_path,
            self.addr_path(name),
            self.origin_path(name),
        ] {
            if fs::remove_file(&path).is_ok() && path.extension().is_some_and(|e| e != "addr" && e != "from")
            {
                removed.push(path);
            }
        }
        Ok(removed)
    }

    /// Writes the CRL from the revoked list (an empty CRL if nothing is revoked).
    pub fn publish_crl(&self, ca: &Authority) -> Result<()> {
        let text = fs::read_to_string(self.revoked_path()).unwrap_or_default();
        let entries: Vec<(Vec<u8>, OffsetDateTime)> = text
            .lines()
            .filter_map(|l| {
                let mut parts = l.split_whitespace();
                let serial = unhex(parts.next()?)?;
                let at = OffsetDateTime::from_unix_timestamp(parts.next()?.parse().ok()?).ok()?;
                Some((serial, at))
            })
            .collect();
        let previous = certs::authority::crl_order(&self.crl()).map(|(number, _)| number);
        write_atomic(&self.crl_path(), ca.crl(&entries, previous)?.as_bytes(), PUBLIC)
    }

    /// The published CRL, PEM ("" before the first one).
    pub fn crl(&self) -> String {
        fs::read_to_string(self.crl_path()).unwrap_or_default()
    }
}

fn names_with(dir: &std::path::Path, ext: &str) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(|e| {
            let path = e.ok()?.path();
            (path.extension()? == ext).then(|| path.file_stem()?.to_str().map(str::to_string))?
        })
        .collect();
    names.sort();
    names
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use certs::request;

    fn setup() -> (tempfile::TempDir, Store, Authority) {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        let (ca, _) = certs::layout::ensure_ca(&root, "t-CA").unwrap();
        (dir, Store::new(root), ca)
    }

    #[test]
    fn advertised_addresses_with_invisible_or_bidi_characters_are_refused() {
        let (_dir, store, ca) = setup();
        let key = request::new_key().unwrap();
        let csr = request::csr("m1", &key).unwrap();
        for bad in [
            "m1\u{202e}:51234",
            "m1\u{200b}.example.com:51234",
            "m1 :5",
            "m1",
            "m1:0",
            "m1:port",
            ":5",
            "m1\n:5",
        ] {
            assert!(
                matches!(
                    store.request(&ca, &csr, Some(bad), true).unwrap(),
                    Outcome::Refused(_)
                ),
                "{bad:?}"
            );
        }
        assert!(
            !store.cert_path("m1").exists(),
            "nothing signed for a refused request"
        );
        assert!(matches!(
            store.request(&ca, &csr, Some("[::1]:51234"), true).unwrap(),
            Outcome::Signed { .. }
        ));
        assert_eq!(store.address("m1").as_deref(), Some("[::1]:51234"));
        std::fs::write(store.addr_path("m1"), "m1\u{202e}:1\n").unwrap();
        assert_eq!(
            store.address("m1"),
            None,
            "an old recorded bidi address is not used"
        );
    }

    #[test]
    fn pending_then_signed_then_cleaned_and_revoked() {
        let (_dir, store, ca) = setup();
        let key = request::new_key().unwrap();
        let csr = request::csr("m1", &key).unwrap();
        assert_eq!(
            store.request(&ca, &csr, Some("127.0.0.1:5"), false).unwrap(),
            Outcome::Pending
        );
        assert_eq!(
            store.request(&ca, &csr, None, false).unwrap(),
            Outcome::Pending,
            "same key stays pending"
        );
        assert_eq!(store.pending(), ["m1"]);
        assert!(
            store.address("m1").is_none(),
            "no address for a name never signed"
        );
        store.sign_pending(&ca, "m1").unwrap();
        assert!(matches!(
            store.request(&ca, &csr, Some("127.0.0.1:5"), false).unwrap(),
            Outcome::Signed(_)
        ));
        assert!(store.pending().is_empty());
        assert_eq!(store.signed(), ["m1"]);
        assert!(matches!(
            store.request(&ca, &csr, None, false).unwrap(),
            Outcome::Signed(_)
        ));
        assert_eq!(store.address("m1").as_deref(), Some("127.0.0.1:5"));
        let cert = store.cert("m1").unwrap();
        store.publish_crl(&ca).unwrap();
        let before = certs::authority::crl_order(&store.crl()).unwrap();
        let removed = store.clean(&ca, "m1").unwrap();
        let after = certs::authority::crl_order(&store.crl()).unwrap();
        assert!(
            after.0 > before.0 && after.1 >= before.1,
            "CRL numbers only grow: {before:?} {after:?}"
        );
        assert_eq!(removed.len(), 1);
        assert!(store.signed().is_empty() && store.address("m1").is_none());
        let crl_der = certs::authority::pem_to_der(&store.crl()).unwrap();
        let (_, crl) = x509_parser::revocation_list::CertificateRevocationList::from_der(&crl_der).unwrap();
        let serial = cert_serial(&cert).unwrap();
        assert!(crl
            .iter_revoked_certificates()
            .any(|r| r.raw_serial() == serial.as_slice()));
    }

    #[test]
    fn takeover_and_hostile_requests_are_refused() {
        let (_dir, store, ca) = setup();
        let csr = request::csr("m1", &request::new_key().unwrap()).unwrap();
        assert!(matches!(
            store.request(&ca, &csr, None, true).unwrap(),
            Outcome::Signed(_)
        ));
        let other = request::csr("m1", &request::new_key().unwrap()).unwrap();
        assert!(
            matches!(store.request(&ca, &other, None, true).unwrap(), Outcome::Refused(r) if r.contains("--clean m1"))
        );
        let pend = request::csr("m2", &request::new_key().unwrap()).unwrap();
        assert_eq!(store.request(&ca, &pend, None, false).unwrap(), Outcome::Pending);
        let other2 = request::csr("m2", &request::new_key().unwrap()).unwrap();
        assert!(matches!(
            store.request(&ca, &other2, None, false).unwrap(),
            Outcome::Refused(_)
        ));
        assert!(matches!(
            store.request(&ca, "garbage", None, true).unwrap(),
            Outcome::Refused(_)
        ));
        let csr3 = request::csr("m3", &request::new_key().unwrap()).unwrap();
        assert!(matches!(
            store.request(&ca, &csr3, Some("a b\\n"), true).unwrap(),
            Outcome::Refused(_)
        ));
    }

    /// The takeover by letter case (issue 46): with `m1` enrolled and
    /// autosign on, a request for `M1` with a new key was signed, and the
    /// rogue then passed m2's ACL `m1-* = …` and TLS checks for m1.
    #[test]
    fn a_name_in_another_letter_case_takes_over_nothing() {
        let (_dir, store, ca) = setup();
        let csr = request::csr("m1", &request::new_key().unwrap()).unwrap();
        assert!(matches!(
            store.request(&ca, &csr, None, true).unwrap(),
            Outcome::Signed(_)
        ));
        for rogue in ["M1", "m1".to_uppercase().as_str(), "m1"] {
            let other = request::csr(rogue, &request::new_key().unwrap()).unwrap();
            let got = store.request(&ca, &other, Some("127.0.0.1:9"), true).unwrap();
            assert!(matches!(got, Outcome::Refused(_)), "{rogue}: {got:?}");
        }
        // Same key, other case: still refused (one spelling per minion).
        let key = request::new_key().unwrap();
        let pend = request::csr("web1", &key).unwrap();
        assert_eq!(store.request(&ca, &pend, None, false).unwrap(), Outcome::Pending);
        let shout = request::csr("WEB1", &key).unwrap();
        assert!(
            matches!(store.request(&ca, &shout, None, true).unwrap(), Outcome::Refused(r) if r.contains("letter case"))
        );
        assert_eq!(store.signed(), ["m1"]);
        assert_eq!(store.pending(), ["web1"]);
        // A new name in capitals is enrolled under its canonical name.
        let caps = request::csr("DB1", &request::new_key().unwrap()).unwrap();
        let Outcome::Signed(cert) = store.request(&ca, &caps, None, true).unwrap() else {
            panic!("DB1 not signed")
        };
        assert_eq!(certs::authority::cert_common_name(&cert).unwrap(), "db1");
        assert_eq!(store.signed(), ["db1", "m1"]);
        assert!(store.cert("DB1").is_some(), "lookups ignore case");
    }

    /// A legacy file under an upper-case name is found after the rename,
    /// so its key cannot be taken over by the lower-case spelling.
    #[test]
    fn legacy_upper_case_files_are_renamed() {
        let (_dir, store, ca) = setup();
        let csr = request::csr("m1", &request::new_key().unwrap()).unwrap();
        store.request(&ca, &csr, None, true).unwrap();
        let dir = store.root().signed_certs_dir();
        std::fs::rename(dir.join("m1.cert"), dir.join("Legacy.cert")).unwrap();
        store.canonicalize_names().unwrap();
        assert_eq!(store.signed(), ["legacy"]);
    }

    /// Issue 47: a rejected request was asked again at once and pending
    /// again, with nothing said on either side.
    #[test]
    fn a_rejected_key_is_refused_and_told_so() {
        let (_dir, store, ca) = setup();
        let key = request::new_key().unwrap();
        let csr = request::csr("m5", &key).unwrap();
        assert_eq!(store.request(&ca, &csr, None, false).unwrap(), Outcome::Pending);
        store.clean(&ca, "m5").unwrap();
        assert!(store.revoked().is_empty(), "nothing was signed: nothing revoked");
        let again = store.request(&ca, &csr, None, false).unwrap();
        assert!(
            matches!(&again, Outcome::Refused(r) if r.contains("rejected by an administrator")),
            "{again:?}"
        );
        assert!(store.pending().is_empty());
        let fresh = request::csr("m5", &request::new_key().unwrap()).unwrap();
        assert_eq!(
            store.request(&ca, &fresh, None, false).unwrap(),
            Outcome::Pending,
            "a new key may ask"
        );
    }

    #[test]
    fn ip_literals_and_reserved_names_are_never_minions() {
        let (_dir, store, ca) = setup();
        for name in ["127.0.0.1", "10.1", "2130706433", "Localhost", "CERTMASTER"] {
            let csr = request::csr(name, &request::new_key().unwrap()).unwrap();
            let got = store.request(&ca, &csr, None, true).unwrap();
            assert!(matches!(got, Outcome::Refused(_)), "{name}: {got:?}");
        }
        assert!(store.signed().is_empty());
    }

    use x509_parser::prelude::FromDer;
}
