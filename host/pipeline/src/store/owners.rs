//! The `session_owners` table: which caller each named session belongs to
//! (see the pipeline's `ownership` step). A claim is one statement that inserts the
//! row or, if another claim came first, leaves it and answers its owner,
//! so of two processes racing for a session one owns it. With a shared
//! store the table is PostgreSQL's (`shared::owners`).

use super::{Store, StoreError};
use rusqlite::params;

impl Store {
    /// Claims `session` for `owner` unless it has one: the session's owner.
    pub fn claim_session(
        &self,
        session: &str,
        owner: &str,
        now_ms: i64,
    ) -> Result<String, StoreError> {
        if let Some(shared) = &self.shared {
            return shared
                .claim_session(session, owner, now_ms)
                .map_err(|e| self.shared_error(e));
        }
        self.conn()
            .query_row(
                "INSERT INTO session_owners (session, owner, claimed_ms) VALUES (?1, ?2, ?3) \
                 ON CONFLICT (session) DO UPDATE SET owner = session_owners.owner \
                 RETURNING owner",
                params![session, owner, now_ms],
                |row| row.get(0),
            )
            .map_err(|e| self.error(e))
    }
}
