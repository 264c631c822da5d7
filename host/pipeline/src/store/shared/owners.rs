//! Which caller each named session belongs to, across hosts: the first
//! claim of a session wins, in one statement, whichever host makes it.

use super::{Shared, SharedError, wait};

impl Shared {
    /// The shared twin of `Store::claim_session`.
    pub fn claim_session(
        &self,
        session: &str,
        owner: &str,
        now_ms: i64,
    ) -> Result<String, SharedError> {
        let client = self.client()?;
        let row = wait(client.query_one(
            "INSERT INTO session_owners (session, owner, claimed_ms) VALUES ($1, $2, $3) \
             ON CONFLICT (session) DO UPDATE SET owner = session_owners.owner RETURNING owner",
            &[&session, &owner, &now_ms],
        ))?;
        Ok(row.try_get(0)?)
    }
}
