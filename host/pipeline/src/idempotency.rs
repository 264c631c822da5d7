//! Idempotency by key (seed 002 §5.10.1): a tool its plugin lists in the
//! `keyed` export takes effect once per key. The key is derived, never
//! random: the session, the tool, the canonical arguments' digest and the
//! approval the call brings, so a model repeating itself (or a client
//! retrying) hits the same key and different arguments never share one.
//! The first call claims the key; a repeat within the window is answered
//! with the recorded output and runs nothing; a repeat while the first
//! still runs is refused (`DUPLICATE_CALL`). A call that did not succeed
//! gives its claim up, so the next one runs; a claim whose process died
//! lapses once the call could no longer be running.
//!
//! Owns the `[idempotency]` table and the claims; decides nothing about
//! whether a call may run (the policy did that before it is asked).

use crate::call::CallId;
use crate::outcome::{CallError, ErrorCode};
use crate::output::{CheckedOutput, RecordedOutput};
use crate::settings::{SettingError, bounded};
use crate::store::{KeyState, Store, now_ms};
use serde::Deserialize;
use sha2::{Digest, Sha256};
use std::sync::Arc;
use std::time::Duration;

const DEFAULT_WINDOW_SECONDS: u64 = 24 * 60 * 60;
const MAX_WINDOW_SECONDS: u64 = 30 * 24 * 60 * 60;

/// The `[idempotency]` table as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IdempotencySection {
    window_seconds: Option<u64>,
}

impl IdempotencySection {
    pub const KEYS: &str = "window_seconds";

    /// How long a recorded outcome answers repeats.
    pub fn resolve(self) -> Result<Duration, SettingError> {
        let seconds = bounded(
            "idempotency",
            "window_seconds",
            self.window_seconds,
            DEFAULT_WINDOW_SECONDS,
            MAX_WINDOW_SECONDS,
        )?;
        Ok(Duration::from_secs(seconds))
    }
}

pub fn default_window() -> Duration {
    Duration::from_secs(DEFAULT_WINDOW_SECONDS)
}

/// The key of a keyed call: hex SHA-256 over its parts, each length-prefixed
/// so that no two different calls encode alike.
pub fn key(session: &str, tool: &str, args_digest: &str, approval: Option<&str>) -> String {
    let mut hash = Sha256::new();
    hash.update(b"toolwarden idempotency key v1");
    for part in [session, tool, args_digest, approval.unwrap_or("")] {
        hash.update((part.len() as u64).to_be_bytes());
        hash.update(part.as_bytes());
    }
    hex::encode(hash.finalize())
}

/// The recorded outcomes of keyed calls.
#[derive(Debug)]
pub struct Keys {
    store: Arc<Store>,
    window: Duration,
    /// How long a claim without an output holds its key: a call that
    /// claimed longer ago cannot still be running (its process died).
    lease: Duration,
}

/// What a keyed call found under its key.
pub enum Claimed {
    /// A call succeeded under it: its output, answered again.
    Replay {
        original_call_id: String,
        output: CheckedOutput,
    },
    /// The call runs; it records its output through the claim.
    Fresh(Claim),
}

/// The right to run the call of one key. Dropped without
/// [`Claim::complete`], it is given up, so a call that failed or was
/// refused later leaves the key free.
pub struct Claim {
    store: Arc<Store>,
    key: String,
    call_id: CallId,
    done: bool,
}

impl Keys {
    /// `lease`: how long a claim may be held (`Limits::longest_hold`).
    pub fn new(store: Arc<Store>, window: Duration, lease: Duration) -> Keys {
        Keys {
            store,
            window,
            lease,
        }
    }

    /// Claims `key` for `call_id`, or finds what holds it.
    pub fn claim(&self, key: String, call_id: &CallId) -> Result<Claimed, CallError> {
        let now = now_ms();
        let since = now.saturating_sub(self.window.as_millis() as i64);
        let claimed_since = now.saturating_sub(self.lease.as_millis() as i64).max(since);
        let unavailable = |e: &dyn std::fmt::Display| {
            CallError::new(
                ErrorCode::HostError,
                format!("the idempotency records could not be read, so the call did not run: {e}"),
            )
        };
        match self
            .store
            .claim_key(&key, call_id.as_str(), since, claimed_since, now)
            .map_err(|e| unavailable(&e))?
        {
            KeyState::Claimed => Ok(Claimed::Fresh(Claim {
                store: Arc::clone(&self.store),
                key,
                call_id: call_id.clone(),
                done: false,
            })),
            KeyState::Running { call_id } => Err(CallError::new(
                ErrorCode::DuplicateCall,
                format!(
                    "the same call is running as `{call_id}` (the tool takes effect once per \
                     key); wait for its result and call again to receive it"
                ),
            )),
            KeyState::Done { call_id, output } => {
                let recorded: RecordedOutput =
                    serde_json::from_str(&output).map_err(|e| unavailable(&e))?;
                Ok(Claimed::Replay {
                    original_call_id: call_id,
                    output: CheckedOutput::replay(recorded),
                })
            }
        }
    }
}

impl Claim {
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Records `output` as the outcome of this key.
    pub fn complete(mut self, output: &CheckedOutput) {
        let recorded = match serde_json::to_string(output) {
            Ok(text) => text,
            Err(e) => {
                tracing::warn!(key = %self.key, "a keyed call's output could not be recorded: {e}");
                return;
            }
        };
        match self
            .store
            .complete_key(&self.key, self.call_id.as_str(), &recorded)
        {
            Ok(()) => self.done = true,
            Err(e) => {
                tracing::warn!(key = %self.key, "a keyed call's output could not be recorded: {e}")
            }
        }
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        if let Err(e) = self.store.release_key(&self.key, self.call_id.as_str()) {
            tracing::warn!(key = %self.key, "a keyed call's claim could not be given up: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_differ_in_every_part_and_cannot_be_forged_by_shifting_text() {
        let base = key("s", "t", "d", None);
        assert_eq!(base, key("s", "t", "d", None), "derived, never random");
        assert_ne!(base, key("s2", "t", "d", None));
        assert_ne!(base, key("s", "t2", "d", None));
        assert_ne!(base, key("s", "t", "d2", None));
        assert_ne!(base, key("s", "t", "d", Some("a1")));
        assert_ne!(key("ab", "c", "d", None), key("a", "bc", "d", None));
    }

    #[test]
    fn the_window_is_bounded() {
        let window = |w| IdempotencySection { window_seconds: w }.resolve();
        assert_eq!(window(None).unwrap(), default_window());
        assert!(window(Some(0)).is_err());
        assert!(window(Some(MAX_WINDOW_SECONDS + 1)).is_err());
    }
}
