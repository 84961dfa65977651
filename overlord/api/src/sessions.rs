//! Browser sessions in memory: session id → who holds it (a token's hash,
//! or a person signed in by the OpenID provider with their groups), with
//! its expiry (the token's, or the ID token's). Bounded: past the limit the oldest goes first, so
//! logging in again and again cannot exhaust memory (salt-api's #60955).

use std::collections::HashMap;

/// Sessions one token may hold (its oldest goes when it logs in again).
pub const PER_TOKEN: usize = 16;

/// Who a session is.
#[derive(Debug, Clone)]
pub enum Holder {
    /// A token's hash (`POST /api/v1/login`).
    Token(String),
    /// A person signed in by single sign-on (`oidc:NAME`) and their groups,
    /// whose rights are judged at every request (`oidc::settings::Roles`).
    Person { user: String, groups: Vec<String> },
}

impl Holder {
    /// Whose logins push out each other's oldest sessions.
    fn key(&self) -> &str {
        match self {
            Holder::Token(hash) => hash,
            Holder::Person { user, .. } => user,
        }
    }
}

struct Session {
    holder: Holder,
    expires: f64,
    created: f64,
}

/// Live sessions: id → who holds it.
#[derive(Default)]
pub struct Sessions {
    live: HashMap<String, Session>,
}

impl Sessions {
    /// Who holds live session `id`.
    pub fn get(&self, id: &str) -> Option<Holder> {
        let s = self.live.get(id)?;
        (overlord::store::now() < s.expires).then(|| s.holder.clone())
    }

    pub fn insert(&mut self, id: String, holder: Holder, expires: f64, max: usize) {
        let now = overlord::store::now();
        self.live.retain(|_, s| s.expires > now);
        // One token's logins push out only its own oldest sessions.
        let mine: Vec<(String, f64)> = self
            .live
            .iter()
            .filter(|(_, s)| s.holder.key() == holder.key())
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
                holder,
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
