//! MCP request states in PostgreSQL, so that a client's retry may land on
//! any host; each is redeemed once (`DELETE ... RETURNING`).

use super::{Shared, SharedError, wait};

impl Shared {
    /// Keeps what request state `key` stands for; forgets states issued
    /// before `expired_before_ms` on the way.
    pub fn put_request_state(
        &self,
        key: &str,
        pending: &str,
        now_ms: i64,
        expired_before_ms: i64,
    ) -> Result<(), SharedError> {
        let client = self.client()?;
        wait(client.execute(
            "DELETE FROM request_states WHERE issued_ms < $1",
            &[&expired_before_ms],
        ))?;
        wait(client.execute(
            "INSERT INTO request_states (key, pending, issued_ms) VALUES ($1, $2, $3)",
            &[&key, &pending, &now_ms],
        ))?;
        Ok(())
    }

    /// Takes request state `key` out, if it is there and was issued at or
    /// after `issued_since_ms`: of hosts racing with one state, one gets it.
    pub fn take_request_state(
        &self,
        key: &str,
        issued_since_ms: i64,
    ) -> Result<Option<String>, SharedError> {
        let client = self.client()?;
        let row = wait(client.query_opt(
            "DELETE FROM request_states WHERE key = $1 RETURNING pending, issued_ms",
            &[&key],
        ))?;
        let Some(row) = row else {
            return Ok(None);
        };
        let issued: i64 = row.try_get(1)?;
        Ok((issued >= issued_since_ms)
            .then(|| row.try_get(0))
            .transpose()?)
    }
}
