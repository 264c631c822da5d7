//! Rate limits across hosts: the shared twin of the store's `rates`. A
//! call's units are checked and taken in one transaction holding an
//! advisory lock per key (taken in key order, so two calls sharing keys
//! cannot deadlock): hosts racing for a window's last unit take turns.

use super::{Shared, SharedError, wait};
use crate::store::rates::{RateKey, RateTaken, full};

const KEY_LOCK: &str = "SELECT pg_advisory_xact_lock(hashtext('toolwarden rate'), hashtext($1))";

impl Shared {
    pub fn take_rate(
        &self,
        keys: &[RateKey],
        now_ms: i64,
        forget_before_ms: i64,
    ) -> Result<RateTaken, SharedError> {
        let mut client = self.client()?;
        wait(async {
            let tx = client.transaction().await?;
            let mut locked: Vec<&str> = keys.iter().map(|k| k.key.as_str()).collect();
            locked.sort_unstable();
            locked.dedup();
            for key in locked {
                tx.execute(KEY_LOCK, &[&key]).await?;
            }
            tx.execute(
                "DELETE FROM rate_units WHERE ts_ms < $1",
                &[&forget_before_ms],
            )
            .await?;
            for (at, key) in keys.iter().enumerate() {
                let row = tx
                    .query_one(
                        "SELECT count(*), min(ts_ms) FROM rate_units WHERE key = $1 AND ts_ms > $2",
                        &[&key.key, &(now_ms - key.window_ms)],
                    )
                    .await?;
                if let Some(full) = full(at, key, (row.try_get(0)?, row.try_get(1)?), now_ms) {
                    return Ok(full);
                }
            }
            let mut units = Vec::with_capacity(keys.len());
            for key in keys {
                let row = tx
                    .query_one(
                        "INSERT INTO rate_units (key, ts_ms) VALUES ($1, $2) RETURNING id",
                        &[&key.key, &now_ms],
                    )
                    .await?;
                units.push(row.try_get(0)?);
            }
            tx.commit().await?;
            Ok(RateTaken::Units(units))
        })
    }

    pub fn give_back_rate(&self, units: &[i64]) -> Result<(), SharedError> {
        let client = self.client()?;
        wait(client.execute("DELETE FROM rate_units WHERE id = ANY($1)", &[&units]))?;
        Ok(())
    }
}
