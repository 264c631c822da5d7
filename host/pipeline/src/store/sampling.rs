//! The `sampling_tokens` table: the tokens each session's calls have asked
//! the client's model for, held to the policy's `max_session_tokens` (see
//! the controller's `sampling`). A charge is one statement that adds to
//! the row or makes it, so racing calls of one session both count; a
//! session idle past `[budget] forget_sessions_after` is forgotten with its
//! executions. With a shared store the table is PostgreSQL's
//! (`shared::sampling`), so every host of it counts the same session.

use super::{Store, StoreError};
use rusqlite::{OptionalExtension, params};

impl Store {
    /// The tokens `session`'s calls have asked for so far.
    pub fn sampled_tokens(&self, session: &str) -> Result<u64, StoreError> {
        if let Some(shared) = &self.shared {
            return shared
                .sampled_tokens(session)
                .map_err(|e| self.shared_error(e));
        }
        let tokens: Option<i64> = self
            .conn()
            .prepare_cached("SELECT tokens FROM sampling_tokens WHERE session = ?1")
            .and_then(|mut stmt| stmt.query_row(params![session], |r| r.get(0)).optional())
            .map_err(|e| self.error(e))?;
        Ok(tokens.map_or(0, |t| t.max(0) as u64))
    }

    /// Adds `tokens` to what `session` has asked for.
    pub fn charge_sampled_tokens(
        &self,
        session: &str,
        tokens: u64,
        now_ms: i64,
    ) -> Result<(), StoreError> {
        let tokens = i64::try_from(tokens).unwrap_or(i64::MAX);
        if let Some(shared) = &self.shared {
            return shared
                .charge_sampled_tokens(session, tokens, now_ms)
                .map_err(|e| self.shared_error(e));
        }
        self.conn()
            .prepare_cached(CHARGE)
            .and_then(|mut stmt| stmt.execute(params![session, tokens, now_ms]))
            .map(drop)
            .map_err(|e| self.error(e))
    }
}

/// One statement: the row made, or added to (saturating, as a count that
/// wrapped would let the session sample again).
const CHARGE: &str = "INSERT INTO sampling_tokens (session, tokens, at_ms) VALUES (?1, ?2, ?3) \
     ON CONFLICT (session) DO UPDATE SET \
     tokens = CASE WHEN sampling_tokens.tokens > 9223372036854775807 - excluded.tokens \
                   THEN 9223372036854775807 \
                   ELSE sampling_tokens.tokens + excluded.tokens END, \
     at_ms = excluded.at_ms";
