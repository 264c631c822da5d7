//! Budgets and keyed calls across hosts: what every host's calls of a
//! session have executed or hold reserved, and the claims of keyed calls.
//!
//! A reservation is checked and taken under an advisory lock per session
//! (the check in SQL, the same as the budget guard's, so that one flight
//! does it),
//! held by its transaction, so hosts racing for a session's last unit take
//! turns and see each other's reservations. A reservation leaves the store
//! in the transaction that appends its execution (see `audit`), so a unit is
//! always counted once, as reserved or as executed. One left by a host that
//! died lapses at its `expires_ms`.

use super::executions::execution_group;
use super::{NewReservation, Shared, SharedError, wait};
use crate::store::KeyState;
use crate::store::executions::ExecutionGroup;
use tokio_postgres::Client;
use tokio_postgres::types::ToSql;

const SESSION_LOCK: &str =
    "SELECT pg_advisory_xact_lock(hashtext('toolwarden budget'), hashtext($1))";
const LAPSE: &str = "DELETE FROM budget_reservations WHERE session = $1 AND expires_ms <= $2";
const SPENT: &str = "SELECT tool, args_digest, count(*)::BIGINT, \
      coalesce(sum(duration_us), 0)::BIGINT FROM (\
      SELECT tool, args_digest, duration_us FROM executions WHERE session = $1 \
      UNION ALL \
      SELECT tool, args_digest, duration_us FROM budget_reservations \
        WHERE session = $1 AND expires_ms > $2\
    ) AS spent GROUP BY tool, args_digest";
/// Reserves the unit if the session's units leave room for it, the same
/// test as the budget guard's `check` (which words a refusal). Reads the
/// session's stored executions as counted (`budget_totals`, kept by
/// triggers), its units still reserved, and, for the duplicate guard, the
/// index of its executions: a few rows, however long the session.
const ADMIT: &str = "INSERT INTO budget_reservations (session, tool, args_digest, expires_ms) \
    SELECT $1, $2, $3, $4 FROM (SELECT \
      coalesce((SELECT calls FROM budget_totals WHERE session = $1), 0) \
        + held.calls AS calls, \
      coalesce((SELECT calls FROM budget_tool_totals WHERE session = $1 AND tool = $2), 0) \
        + held.tool_calls AS tool_calls, \
      coalesce((SELECT run_us FROM budget_totals WHERE session = $1), 0) \
        + held.run_us AS run_us, \
      $3 <> '' AND (held.same_args > 0 OR EXISTS (SELECT 1 FROM executions \
        WHERE session = $1 AND tool = $2 AND args_digest = $3)) AS repeated \
      FROM (SELECT count(*) AS calls, count(*) FILTER (WHERE tool = $2) AS tool_calls, \
          coalesce(sum(GREATEST(duration_us, 0)), 0) AS run_us, \
          count(*) FILTER (WHERE tool = $2 AND args_digest = $3) AS same_args \
        FROM budget_reservations WHERE session = $1 AND expires_ms > $8) AS held \
    ) AS totals \
    WHERE ($5::BIGINT IS NULL OR calls < $5) AND ($6::BIGINT IS NULL OR tool_calls < $6) \
      AND ($7::BIGINT IS NULL OR run_us < $7) AND NOT repeated \
    RETURNING id";
/// How often a refusal the guard's own reading does not confirm (a unit
/// given back in between) is tried again before the call is refused.
const ADMIT_TRIES: usize = 3;
/// Gives a budget reservation back.
const RELEASE: &str = "DELETE FROM budget_reservations WHERE id = $1";
const SETTLE: &str =
    "UPDATE budget_reservations SET duration_us = $2, args_digest = $3 WHERE id = $1";

impl Shared {
    /// Under the session's lock, reserves `unit` if the session's units
    /// (what it executed or holds reserved, on any host) leave room for it;
    /// the reservation's id. When they do not, hands `admit` what they are,
    /// for it to say why; a refusal it does not confirm (a unit was given
    /// back meanwhile) is tried again.
    ///
    /// One round trip for a call that fits: the transaction's start, the
    /// lock, the conditional insert and the commit go out in one flight
    /// (PostgreSQL runs them in order, so the insert's reads wait for the
    /// lock, and READ COMMITTED reads what committed before the lock was
    /// granted). Units past their lease (their host died) are not counted;
    /// they are removed when they could have refused a call, and by the
    /// budget's pass over idle sessions. A refusal takes one more round
    /// trip, to read the units. A reservation does not wait for the disk
    /// (`synchronous_commit` off): one lost to a database crash was held by a
    /// call whose host sees the database fail.
    pub fn reserve<E>(
        &self,
        unit: &NewReservation<'_>,
        now_ms: i64,
        admit: impl Fn(Vec<ExecutionGroup>) -> Result<(), E>,
    ) -> Result<Result<i64, E>, SharedError> {
        let mut conn = self.client()?;
        wait(async {
            let (lock, lapse, take, spent) = (
                conn.statement(SESSION_LOCK).await?,
                conn.statement(LAPSE).await?,
                conn.statement(ADMIT).await?,
                conn.statement(SPENT).await?,
            );
            let client: &Client = &conn;
            let session: [&(dyn ToSql + Sync); 1] = [&unit.session];
            let lapsed: [&(dyn ToSql + Sync); 2] = [&unit.session, &now_ms];
            let limits = unit.limits;
            let held: [&(dyn ToSql + Sync); 8] = [
                &unit.session,
                &unit.tool,
                &unit.args_digest,
                &unit.expires_ms,
                &limits.max_calls,
                &limits.max_calls_per_tool,
                &limits.max_run_us,
                &now_ms,
            ];
            for _ in 0..ADMIT_TRIES {
                // A session's units come and go with every call, so its
                // part of the index is mostly dead entries until a vacuum:
                // a plain index scan marks them dead as it passes (the next
                // check skips them), a bitmap scan never does and would
                // read them all at every check.
                let taken = futures::try_join!(
                    client.batch_execute(
                        "BEGIN; SET LOCAL synchronous_commit TO OFF; \
                         SET LOCAL enable_bitmapscan TO OFF"
                    ),
                    client.execute(&lock, &session),
                    client.query_opt(&take, &held),
                    client.batch_execute("COMMIT"),
                );
                let row = match taken {
                    Ok((_, _, row, ())) => row,
                    Err(e) => {
                        // Leaves the connection out of the failed
                        // transaction, if it still stands; a lost one is
                        // made again on next use.
                        let _ = client.batch_execute("ROLLBACK").await;
                        return Err(e.into());
                    }
                };
                if let Some(row) = row {
                    return Ok(Ok(row.try_get(0)?));
                }
                let (_, rows) = futures::try_join!(
                    client.execute(&lapse, &lapsed),
                    client.query(&spent, &lapsed),
                )?;
                let groups = rows
                    .iter()
                    .map(execution_group)
                    .collect::<Result<Vec<_>, SharedError>>()?;
                if let Err(refused) = admit(groups) {
                    return Ok(Err(refused));
                }
            }
            Err(SharedError::Setup(format!(
                "the store refused session `{}` a unit {ADMIT_TRIES} times while its units \
                 left room for one",
                unit.session
            )))
        })
    }

    /// Gives a reservation the run time of its call, which ran, and the
    /// arguments digest it counts under: until the execution is stored,
    /// the reservation stands for it.
    pub fn settle(
        &self,
        reservation: i64,
        duration_us: i64,
        args_digest: &str,
    ) -> Result<(), SharedError> {
        let mut conn = self.client()?;
        wait(async {
            let settle = conn.statement(SETTLE).await?;
            conn.execute(&settle, &[&reservation, &duration_us, &args_digest])
                .await?;
            Ok(())
        })
    }

    /// Gives a reservation whose call did not run back.
    pub fn release(&self, reservation: i64) -> Result<(), SharedError> {
        let mut conn = self.client()?;
        wait(async {
            let release = conn.statement(RELEASE).await?;
            conn.execute(&release, &[&reservation]).await?;
            Ok(())
        })
    }

    /// The shared twin of `Store::claim_key`: the key's lock orders racing
    /// claims, so one of them finds the key free.
    pub fn claim_key(
        &self,
        key: &str,
        call_id: &str,
        since_ms: i64,
        claimed_since_ms: i64,
        now_ms: i64,
    ) -> Result<KeyState, SharedError> {
        let mut client = self.client()?;
        wait(async {
            let tx = client.transaction().await?;
            tx.execute(
                "SELECT pg_advisory_xact_lock(hashtext('toolwarden key'), hashtext($1))",
                &[&key],
            )
            .await?;
            let held = tx
                .query_opt(
                    "SELECT call_id, output FROM idempotency WHERE key = $1 AND \
                     created_ms >= CASE WHEN output IS NULL THEN $3::BIGINT ELSE $2::BIGINT END",
                    &[&key, &since_ms, &claimed_since_ms],
                )
                .await?;
            let state = match held {
                Some(row) => match row.try_get::<_, Option<String>>(1)? {
                    Some(output) => KeyState::Done {
                        call_id: row.try_get(0)?,
                        output,
                    },
                    None => KeyState::Running {
                        call_id: row.try_get(0)?,
                    },
                },
                None => {
                    tx.execute(
                        "INSERT INTO idempotency (key, call_id, output, created_ms) \
                         VALUES ($1, $2, NULL, $3) ON CONFLICT (key) DO UPDATE \
                         SET call_id = EXCLUDED.call_id, output = NULL, \
                         created_ms = EXCLUDED.created_ms",
                        &[&key, &call_id, &now_ms],
                    )
                    .await?;
                    KeyState::Claimed
                }
            };
            tx.commit().await?;
            // Rows that can answer nothing go, outside the claim and without
            // waiting for rows another claim holds (no lock order to keep).
            client
                .execute(
                    "DELETE FROM idempotency WHERE key IN (SELECT key FROM idempotency \
                     WHERE created_ms < $1 LIMIT 1000 FOR UPDATE SKIP LOCKED)",
                    &[&since_ms.min(claimed_since_ms)],
                )
                .await?;
            Ok(state)
        })
    }

    pub fn complete_key(&self, key: &str, call_id: &str, output: &str) -> Result<(), SharedError> {
        let client = self.client()?;
        wait(client.execute(
            "UPDATE idempotency SET output = $3 WHERE key = $1 AND call_id = $2",
            &[&key, &call_id, &output],
        ))?;
        Ok(())
    }

    pub fn release_key(&self, key: &str, call_id: &str) -> Result<(), SharedError> {
        let client = self.client()?;
        wait(client.execute(
            "DELETE FROM idempotency WHERE key = $1 AND call_id = $2 AND output IS NULL",
            &[&key, &call_id],
        ))?;
        Ok(())
    }
}
