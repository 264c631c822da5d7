//! The `idempotency` table: one row per key of a keyed call, claimed
//! before the call runs, holding its output once it succeeded. A claim is
//! one `INSERT`: of two processes racing with one key, one runs the call.
//! With a shared store the table is PostgreSQL's (`shared::budget`), so
//! the hosts sharing it run a key's call once between them.
//!
//! A row older than both the window and the claim's lease can answer
//! nothing: each claim removes such rows, so the table holds about a
//! window's worth of keys however long the host runs.

use super::{Store, StoreError};
use rusqlite::{OptionalExtension, params};

/// What the table holds for a key, within the window asked about.
#[derive(Debug, PartialEq, Eq)]
pub enum KeyState {
    /// Nothing: this caller now holds the claim.
    Claimed,
    /// Another call holds it and has not finished.
    Running { call_id: String },
    /// A call succeeded under it: its id and recorded output.
    Done { call_id: String, output: String },
}

impl Store {
    /// Claims `key` for `call_id` unless a recorded output newer than
    /// `since_ms`, or a claim newer than `claimed_since_ms`, holds it; an
    /// older row is the past (a claim that old belongs to a call that can
    /// no longer be running: its process died) and is replaced.
    pub fn claim_key(
        &self,
        key: &str,
        call_id: &str,
        since_ms: i64,
        claimed_since_ms: i64,
        now_ms: i64,
    ) -> Result<KeyState, StoreError> {
        if let Some(shared) = &self.shared {
            return shared
                .claim_key(key, call_id, since_ms, claimed_since_ms, now_ms)
                .map_err(|e| self.shared_error(e));
        }
        let mut conn = self.conn();
        let tx = conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(|e| self.error(e))?;
        tx.execute(
            "DELETE FROM idempotency WHERE created_ms < ?1",
            [since_ms.min(claimed_since_ms)],
        )
        .map_err(|e| self.error(e))?;
        let held: Option<(String, Option<String>)> = tx
            .query_row(
                "SELECT call_id, output FROM idempotency WHERE key = ?1 AND \
                 created_ms >= CASE WHEN output IS NULL THEN ?3 ELSE ?2 END",
                params![key, since_ms, claimed_since_ms],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .map_err(|e| self.error(e))?;
        let state = match held {
            Some((call_id, Some(output))) => KeyState::Done { call_id, output },
            Some((call_id, None)) => KeyState::Running { call_id },
            None => {
                tx.execute(
                    "INSERT OR REPLACE INTO idempotency (key, call_id, output, created_ms) \
                     VALUES (?1, ?2, NULL, ?3)",
                    params![key, call_id, now_ms],
                )
                .map_err(|e| self.error(e))?;
                KeyState::Claimed
            }
        };
        tx.commit().map_err(|e| self.error(e))?;
        Ok(state)
    }

    /// Records the output of the call holding `key`.
    pub fn complete_key(&self, key: &str, call_id: &str, output: &str) -> Result<(), StoreError> {
        if let Some(shared) = &self.shared {
            return shared
                .complete_key(key, call_id, output)
                .map_err(|e| self.shared_error(e));
        }
        self.conn()
            .execute(
                "UPDATE idempotency SET output = ?3 WHERE key = ?1 AND call_id = ?2",
                params![key, call_id, output],
            )
            .map(drop)
            .map_err(|e| self.error(e))
    }

    /// Gives up the claim of a call that did not succeed: the next call
    /// with the key runs.
    pub fn release_key(&self, key: &str, call_id: &str) -> Result<(), StoreError> {
        if let Some(shared) = &self.shared {
            return shared
                .release_key(key, call_id)
                .map_err(|e| self.shared_error(e));
        }
        self.conn()
            .execute(
                "DELETE FROM idempotency WHERE key = ?1 AND call_id = ?2 AND output IS NULL",
                params![key, call_id],
            )
            .map(drop)
            .map_err(|e| self.error(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_claimed_once_done_once_and_forgotten_after_its_window() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), None).unwrap();
        assert_eq!(
            store.claim_key("k", "c1", 0, 0, 100).unwrap(),
            KeyState::Claimed
        );
        assert_eq!(
            store.claim_key("k", "c2", 0, 0, 101).unwrap(),
            KeyState::Running {
                call_id: "c1".into()
            }
        );
        store.complete_key("k", "c2", "{}").unwrap();
        store.complete_key("k", "c1", "{\"v\":1}").unwrap();
        store.release_key("k", "c1").unwrap();
        assert_eq!(
            store.claim_key("k", "c3", 50, 101, 102).unwrap(),
            KeyState::Done {
                call_id: "c1".into(),
                output: "{\"v\":1}".into()
            },
            "another call cannot complete or release a claim it does not hold"
        );
        assert_eq!(
            store.claim_key("k", "c4", 101, 101, 200).unwrap(),
            KeyState::Claimed
        );
        store.release_key("k", "c4").unwrap();
        assert_eq!(
            store.claim_key("k", "c5", 101, 101, 201).unwrap(),
            KeyState::Claimed
        );
    }

    #[test]
    fn a_claim_left_by_a_dead_process_lapses_before_the_window_does() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), None).unwrap();
        assert_eq!(
            store.claim_key("k", "dead", 0, 0, 100).unwrap(),
            KeyState::Claimed
        );
        assert_eq!(
            store.claim_key("k", "c2", 0, 100, 150).unwrap(),
            KeyState::Running {
                call_id: "dead".into()
            },
            "within the lease it may still run"
        );
        assert_eq!(
            store.claim_key("k", "c3", 0, 101, 250).unwrap(),
            KeyState::Claimed,
            "past the lease it cannot: the key is free again"
        );
    }

    #[test]
    fn keys_past_their_window_and_lease_are_removed_as_others_are_claimed() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), None).unwrap();
        let rows = || -> i64 {
            store
                .conn()
                .query_row("SELECT count(*) FROM idempotency", [], |r| r.get(0))
                .unwrap()
        };
        for (key, at) in [("old", 100), ("older-claim", 90), ("recent", 900)] {
            store.claim_key(key, key, 0, 0, at).unwrap();
        }
        store.complete_key("old", "old", "{}").unwrap();
        store.complete_key("recent", "recent", "{}").unwrap();
        assert_eq!(rows(), 3);
        // Outputs count from 500, claims from 800: only rows older than both go.
        store.claim_key("new", "new", 500, 800, 1_000).unwrap();
        assert_eq!(rows(), 2, "`old` and `older-claim` could answer nothing");
        assert_eq!(
            store.claim_key("recent", "again", 500, 800, 1_001).unwrap(),
            KeyState::Done {
                call_id: "recent".into(),
                output: "{}".into()
            }
        );
    }
}
