//! The `rate_units` table: one row per call a rate limit counts, under the
//! limit's key, with when it was taken. Taking is one immediate transaction
//! for every key of a call, so of two processes racing for a window's last
//! unit one gets it. With a shared store the table is PostgreSQL's
//! (`shared::rates`).

use super::{Store, StoreError};
use rusqlite::{TransactionBehavior, params};

/// One limit's count for one call: its key, and how many units it allows
/// in any window of `window_ms`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RateKey {
    pub key: String,
    pub calls: i64,
    pub window_ms: i64,
}

/// What taking a call's units found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RateTaken {
    /// Every key had room: the units taken, one per key.
    Units(Vec<i64>),
    /// `keys[at]` is used up; its oldest unit in the window was taken at
    /// `oldest_ms`. Nothing was taken.
    Full { at: usize, oldest_ms: i64 },
}

/// `Full` when `key` (the call's `at`th) holds as many units in its
/// window as it allows: `held` is their count and the oldest one's time.
pub(super) fn full(
    at: usize,
    key: &RateKey,
    (count, oldest): (i64, Option<i64>),
    now_ms: i64,
) -> Option<RateTaken> {
    (count >= key.calls).then(|| RateTaken::Full {
        at,
        oldest_ms: oldest.unwrap_or(now_ms),
    })
}

impl Store {
    /// Takes a unit of every key for a call at `now_ms`, or none if one key
    /// has no room. Units taken before `forget_before_ms` are removed.
    pub fn take_rate(
        &self,
        keys: &[RateKey],
        now_ms: i64,
        forget_before_ms: i64,
    ) -> Result<RateTaken, StoreError> {
        if let Some(shared) = &self.shared {
            return shared
                .take_rate(keys, now_ms, forget_before_ms)
                .map_err(|e| self.shared_error(e));
        }
        let mut conn = self.conn();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| self.error(e))?;
        let fail = |e| self.error(e);
        tx.execute(
            "DELETE FROM rate_units WHERE ts_ms < ?1",
            [forget_before_ms],
        )
        .map_err(fail)?;
        for (at, key) in keys.iter().enumerate() {
            let held: (i64, Option<i64>) = tx
                .query_row(
                    "SELECT count(*), min(ts_ms) FROM rate_units WHERE key = ?1 AND ts_ms > ?2",
                    params![key.key, now_ms - key.window_ms],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .map_err(fail)?;
            if let Some(full) = full(at, key, held, now_ms) {
                return Ok(full);
            }
        }
        let mut units = Vec::with_capacity(keys.len());
        for key in keys {
            units.push(
                tx.query_row(
                    "INSERT INTO rate_units (key, ts_ms) VALUES (?1, ?2) RETURNING id",
                    params![key.key, now_ms],
                    |r| r.get(0),
                )
                .map_err(fail)?,
            );
        }
        tx.commit().map_err(fail)?;
        Ok(RateTaken::Units(units))
    }

    /// Gives back units a call took and did not use.
    pub fn give_back_rate(&self, units: &[i64]) -> Result<(), StoreError> {
        if let Some(shared) = &self.shared {
            return shared
                .give_back_rate(units)
                .map_err(|e| self.shared_error(e));
        }
        let conn = self.conn();
        for id in units {
            conn.execute("DELETE FROM rate_units WHERE id = ?1", [id])
                .map_err(|e| self.error(e))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_holds_its_calls_per_window_and_units_given_back_free_room() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), None).unwrap();
        let key = |key: &str, calls| RateKey {
            key: key.into(),
            calls,
            window_ms: 1000,
        };
        let both = [key("a", 2), key("b", 5)];
        let RateTaken::Units(first) = store.take_rate(&both, 10_000, 0).unwrap() else {
            panic!("room");
        };
        assert_eq!(first.len(), 2);
        assert!(matches!(
            store.take_rate(&both, 10_100, 0).unwrap(),
            RateTaken::Units(_)
        ));
        assert_eq!(
            store.take_rate(&both, 10_200, 0).unwrap(),
            RateTaken::Full {
                at: 0,
                oldest_ms: 10_000
            },
            "`a` is full; nothing is taken of `b` either"
        );
        assert!(matches!(
            store.take_rate(&[key("b", 3)], 10_200, 0).unwrap(),
            RateTaken::Units(_)
        ));
        assert!(matches!(
            store.take_rate(&[key("b", 3)], 10_300, 0).unwrap(),
            RateTaken::Full { at: 0, .. }
        ));
        store.give_back_rate(&first).unwrap();
        assert!(
            matches!(
                store.take_rate(&both, 10_300, 0).unwrap(),
                RateTaken::Units(_)
            ),
            "the given back units make room"
        );
        // The window slides: at 11_101 the unit from 10_100 has left it.
        assert!(matches!(
            store.take_rate(&[key("a", 2)], 11_101, 0).unwrap(),
            RateTaken::Units(_)
        ));
        // Units older than what any window may count are forgotten.
        assert!(matches!(
            store.take_rate(&[key("b", 1)], 10_400, 10_400).unwrap(),
            RateTaken::Units(_)
        ));
    }
}
