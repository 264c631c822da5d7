//! Tokens checked lately, so that a client sending the same access token
//! with every request pays for its signature once a minute, not once a
//! request (an ES256 check takes about 57 µs here, an RSA one more).
//!
//! A token is remembered by the SHA-256 of its exact bytes, with the
//! caller it proved, until [`REMEMBER_FOR`] has passed or its `exp` comes,
//! whichever is first: an expired token is refused as before. What the
//! cache gives up is a key the issuer withdraws: a token it signed is
//! still accepted for up to [`REMEMBER_FOR`] after.

use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use toolwarden::caller::Caller;

/// How long a checked token is taken on trust.
pub(super) const REMEMBER_FOR: Duration = Duration::from_secs(60);

/// The most tokens remembered at once: past it, the lapsed ones go, and
/// if none has, all of them (each is checked again once).
const MAX_REMEMBERED: usize = 4096;

#[derive(Default)]
pub(super) struct Remembered {
    tokens: Mutex<HashMap<[u8; 32], (Caller, Instant)>>,
}

impl Remembered {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<[u8; 32], (Caller, Instant)>> {
        // Only whole entries are inserted or removed under the lock.
        self.tokens.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The caller `token` proved, if it was checked lately and has not
    /// lapsed.
    pub fn get(&self, token: &str) -> Option<Caller> {
        let key = digest(token);
        let mut tokens = self.lock();
        match tokens.get(&key) {
            Some((caller, until)) if *until > Instant::now() => Some(caller.clone()),
            Some(_) => {
                tokens.remove(&key);
                None
            }
            None => None,
        }
    }

    /// Remembers that `token`, expiring at `exp` (seconds since the epoch),
    /// proved `caller`.
    pub fn keep(&self, token: &str, caller: &Caller, exp: Option<u64>) {
        let now_s = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let left = match exp {
            Some(exp) if exp > now_s => Duration::from_secs(exp - now_s),
            // Accepted only thanks to the leeway, or without `exp`: not
            // taken on trust at all.
            _ => return,
        };
        let now = Instant::now();
        let until = now + left.min(REMEMBER_FOR);
        let mut tokens = self.lock();
        if tokens.len() >= MAX_REMEMBERED {
            tokens.retain(|_, (_, until)| *until > now);
            if tokens.len() >= MAX_REMEMBERED {
                tokens.clear();
            }
        }
        tokens.insert(digest(token), (caller.clone(), until));
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.lock().len()
    }
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}
