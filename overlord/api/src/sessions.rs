//! Browser sessions in memory: session id → the token's hash, with the
//! token's expiry. Bounded: past the limit the oldest goes first, so
//! logging in again and again cannot exhaust memory (salt-api's #60955).

use std::collections::HashMap;

/// Sessions one token may hold (its oldest goes when it logs in again).
pub const PER_TOKEN: usize = 16;

struct Session {
    hash: String,
    expires: f64,
    created: f64,
}

/// Live sessions: id → the token's hash.
#[derive(Default)]
pub struct Sessions {
    live: HashMap<String, Session>,
}

impl Sessions {
    /// The token hash of live session `id`.
    pub fn get(&self, id: &str) -> Option<String> {
        let s = self.live.get(id)?;
        (overlord::store::now() < s.expires).then(|| s.hash.clone())
    }

    pub fn insert(&mut self, id: String, hash: String, expires: f64, max: usize) {
        let now = overlord::store::now();
        self.live.retain(|_, s| s.expires > now);
        // One token's logins push out only its own oldest sessions.
        let mine: Vec<(String, f64)> = self
            .live
            .iter()
            .filter(|(_, s)| s.hash == hash)
            .map(|(k, s)| (k.clone(), s.created))
            .collect();
        if mine.len() >= PER_TOKEN {
            if let Some((oldest, _)) = mine.iter().min_by(|a, b| a.1.total_cmp(&b.1)) {
                self.live.remove(oldest);
            }
        }
        while self.live.len() >= max {
            let oldest = self
                .live
                .iter()
                .min_by(|a, b| a.1.created.total_cmp(&b.1.created))
                .map(|(k, _)| k.clone());
            match oldest {
                Some(k) => self.live.remove(&k),
                None => break,
            };
        }
        self.live.insert(
            id,
            Session {
                hash,
                expires,
                created: now,
            },
        );
    }

    /// Ends session `id`.
    pub fn remove(&mut self, id: &str) {
        self.live.remove(id);
    }
}
