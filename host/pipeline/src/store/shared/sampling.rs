//! The tokens each session's calls have asked the client's model for,
//! across hosts: a charge is one statement, whichever host makes it.

use super::{Shared, SharedError, wait};

impl Shared {
    /// The shared twin of `Store::sampled_tokens`.
    pub fn sampled_tokens(&self, session: &str) -> Result<u64, SharedError> {
        let client = self.client()?;
        let row = wait(client.query_opt(
            "SELECT tokens FROM sampling_tokens WHERE session = $1",
            &[&session],
        ))?;
        let tokens: Option<i64> = row.map(|r| r.try_get(0)).transpose()?;
        Ok(tokens.map_or(0, |t| t.max(0) as u64))
    }

    /// The shared twin of `Store::charge_sampled_tokens`.
    pub fn charge_sampled_tokens(
        &self,
        session: &str,
        tokens: i64,
        now_ms: i64,
    ) -> Result<(), SharedError> {
        let client = self.client()?;
        wait(client.execute(
            "INSERT INTO sampling_tokens AS s (session, tokens, at_ms) VALUES ($1, $2, $3) \
             ON CONFLICT (session) DO UPDATE SET \
             tokens = CASE WHEN s.tokens > 9223372036854775807 - EXCLUDED.tokens \
                           THEN 9223372036854775807 ELSE s.tokens + EXCLUDED.tokens END, \
             at_ms = EXCLUDED.at_ms",
            &[&session, &tokens, &now_ms],
        ))?;
        Ok(())
    }
}
