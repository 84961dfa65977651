//! The nonces of the requests a relay has run (DESIGN §17): a signed
//! request is fresh for [`FRESH_FOR`] seconds either side of its issue, so
//! its nonce is remembered that long (and a little more), in memory and in
//! `var/lib/func/relay-nonces` (0600, one `NONCE ISSUED` line each, synced
//! before the request runs), so that a replay is refused even after the
//! relay restarts. The file is rewritten without the expired lines when it
//! has grown past twice the live ones.

use std::collections::HashMap;
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Mutex;

use common::paths::Root;

use super::request::FRESH_FOR;

/// Nonces remembered at most (the requests of 20 minutes): more is refused.
pub const MAX_NONCES: usize = 1_000_000;

/// How long a nonce is kept after its request's issue time.
const KEEP_FOR: f64 = 2.0 * FRESH_FOR + 60.0;

/// The nonces seen, with their requests' issue times.
pub struct Nonces {
    path: PathBuf,
    seen: Mutex<Seen>,
}

#[derive(Default)]
struct Seen {
    nonces: HashMap<String, f64>,
    /// Lines in the file (live and expired).
    lines: usize,
}

impl Nonces {
    /// The nonces kept below `root` (those still in their window).
    pub fn load(root: &Root) -> Self {
        let path = root.join("var/lib/func/relay-nonces");
        let now = crate::store::now();
        let mut seen = Seen::default();
        if let Ok(text) = std::fs::read_to_string(&path) {
            for line in text.lines() {
                seen.lines += 1;
                let mut parts = line.split_whitespace();
                if let (Some(nonce), Some(Ok(issued))) = (parts.next(), parts.next().map(str::parse::<f64>)) {
                    if now - issued < KEEP_FOR {
                        seen.nonces.insert(nonce.to_string(), issued);
                    }
                }
            }
        }
        Nonces {
            path,
            seen: Mutex::new(seen),
        }
    }

    /// Admits the request with `nonce`, issued at `issued`: `Err(why)` when
    /// it was seen (a replay) or cannot be remembered (then it is not run).
    pub fn admit(&self, nonce: &str, issued: f64) -> Result<(), String> {
        let now = crate::store::now();
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        if seen.nonces.contains_key(nonce) {
            return Err("its nonce was seen here already: a replayed request is not run again".into());
        }
        seen.nonces.retain(|_, t| now - *t < KEEP_FOR);
        if seen.nonces.len() >= MAX_NONCES {
            return Err(format!("{MAX_NONCES} requests in the last minutes: not run"));
        }
        if seen.lines > 2 * seen.nonces.len() + 1000 {
            self.rewrite(&seen)
                .map_err(|e| format!("cannot keep its nonce: {e}"))?;
            seen.lines = seen.nonces.len();
        }
        self.append(nonce, issued)
            .map_err(|e| format!("cannot keep its nonce: {e}"))?;
        seen.lines += 1;
        seen.nonces.insert(nonce.to_string(), issued);
        Ok(())
    }

    fn append(&self, nonce: &str, issued: f64) -> std::io::Result<()> {
        if let Some(dir) = self.path.parent() {
            common::private::private_dir(dir)?;
        }
        let mut file = common::private::append(&self.path)?;
        writeln!(file, "{nonce} {issued}")?;
        file.sync_data()
    }

    fn rewrite(&self, seen: &Seen) -> std::io::Result<()> {
        let text: String = seen.nonces.iter().map(|(n, t)| format!("{n} {t}\n")).collect();
        common::private::write(&self.path, text.as_bytes(), true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nonce_is_admitted_once_even_after_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path().to_path_buf());
        let now = crate::store::now();
        let nonces = Nonces::load(&root);
        nonces.admit("aa", now).unwrap();
        assert!(nonces.admit("aa", now).unwrap_err().contains("replayed"));
        nonces.admit("bb", now - 10.0 * KEEP_FOR).unwrap();
        let again = Nonces::load(&root);
        assert!(again.admit("aa", now).is_err(), "remembered across a restart");
        again
            .admit("bb", now)
            .unwrap_or_else(|e| panic!("an expired nonce is forgotten: {e}"));
    }
}
