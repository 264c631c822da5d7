//! The `executions` table: calls that reached a plugin, per session, for
//! budgets and duplicate detection. Denied or pending calls are never here.

use super::shared::{NewReservation, Shared};
use super::{Store, StoreError};
use rusqlite::params;
use std::sync::Arc;

/// One call that ran. Its texts are shared with the call's other records.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExecutionRow {
    pub session: Arc<str>,
    pub tool: Arc<str>,
    pub args_digest: Arc<str>,
    pub duration_us: i64,
    pub ts_ms: i64,
    /// The unit the call held in the shared store, which leaves it in the
    /// transaction that stores this row.
    pub reservation: Option<i64>,
}

/// How often a session ran one tool with one set of arguments, and for how long.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExecutionGroup {
    pub tool: String,
    pub args_digest: String,
    pub calls: i64,
    pub duration_us: i64,
}

/// The budget units the hosts sharing a store hold for their calls.
pub struct SharedBudget<'a> {
    store: &'a Store,
    shared: &'a Shared,
}

impl SharedBudget<'_> {
    /// Reserves `unit` if its session's units on every host leave room for
    /// it, under a lock no other host's reservation for the session can
    /// pass; the unit's id. When they do not, `admit` is handed what they
    /// are and says why (see `Shared::reserve`).
    pub fn reserve<E>(
        &self,
        unit: &NewReservation<'_>,
        now_ms: i64,
        admit: impl Fn(Vec<ExecutionGroup>) -> Result<(), E>,
    ) -> Result<Result<i64, E>, StoreError> {
        self.shared
            .reserve(unit, now_ms, admit)
            .map_err(|e| self.store.shared_error(e))
    }

    /// Counts a unit as its call's execution will be (run time, arguments
    /// digest) until that is stored.
    pub fn settle(
        &self,
        reservation: i64,
        duration_us: i64,
        args_digest: &str,
    ) -> Result<(), StoreError> {
        self.shared
            .settle(reservation, duration_us, args_digest)
            .map_err(|e| self.store.shared_error(e))
    }

    /// Gives back a unit whose call did not run.
    pub fn release(&self, reservation: i64) -> Result<(), StoreError> {
        self.shared
            .release(reservation)
            .map_err(|e| self.store.shared_error(e))
    }
}

impl Store {
    /// With a shared store, where budgets are counted across hosts; without
    /// one, `None`: this process counts its sessions itself.
    pub fn shared_budget(&self) -> Option<SharedBudget<'_>> {
        self.shared.as_deref().map(|shared| SharedBudget {
            store: self,
            shared,
        })
    }

    /// Everything `session` has executed, grouped by tool and arguments.
    pub fn session_executions(&self, session: &str) -> Result<Vec<ExecutionGroup>, StoreError> {
        if let Some(shared) = &self.shared {
            return shared
                .session_executions(session)
                .map_err(|e| self.shared_error(e));
        }
        let conn = self.conn();
        let mut stmt = conn
            .prepare_cached(
                "SELECT tool, args_digest, count(*), coalesce(sum(duration_us), 0) \
                 FROM executions WHERE session = ?1 GROUP BY tool, args_digest",
            )
            .map_err(|e| self.error(e))?;
        let rows = stmt
            .query_map(params![session], |r| {
                Ok(ExecutionGroup {
                    tool: r.get(0)?,
                    args_digest: r.get(1)?,
                    calls: r.get(2)?,
                    duration_us: r.get(3)?,
                })
            })
            .map_err(|e| self.error(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.error(e))
    }

    /// Removes the executions of every session that has none since
    /// `idle_since_ms`: named again, such a session starts over. The rows
    /// removed. A session still calling keeps all of its history, however
    /// old, so its limits hold for as long as it lives.
    pub fn forget_idle_sessions(&self, idle_since_ms: i64) -> Result<u64, StoreError> {
        if let Some(shared) = &self.shared {
            return shared
                .forget_idle_sessions(idle_since_ms)
                .map_err(|e| self.shared_error(e));
        }
        let conn = self.conn();
        // A look first, so a pass that finds nothing old takes no write lock.
        let any_old = conn
            .prepare_cached(
                "SELECT 1 FROM executions WHERE ts_ms < ?1 \
                 UNION ALL SELECT 1 FROM sampling_tokens WHERE at_ms < ?1 LIMIT 1",
            )
            .and_then(|mut stmt| stmt.exists(params![idle_since_ms]))
            .map_err(|e| self.error(e))?;
        if !any_old {
            return Ok(0);
        }
        conn.execute(
            "DELETE FROM sampling_tokens WHERE at_ms < ?1",
            params![idle_since_ms],
        )
        .map_err(|e| self.error(e))?;
        conn.execute(
            "DELETE FROM executions WHERE ts_ms < ?1 \
             AND session NOT IN (SELECT session FROM executions WHERE ts_ms >= ?1)",
            params![idle_since_ms],
        )
        .map(|n| n as u64)
        .map_err(|e| self.error(e))
    }

    /// Up to `limit` executions stored after row `after` (a rowid, 0 for
    /// the first), each with its rowid: for copying them out in chunks.
    pub fn executions_after(
        &self,
        after: i64,
        limit: i64,
    ) -> Result<Vec<(i64, ExecutionRow)>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare_cached(
                "SELECT rowid, session, tool, args_digest, duration_us, ts_ms FROM executions \
                 WHERE rowid > ?1 ORDER BY rowid LIMIT ?2",
            )
            .map_err(|e| self.error(e))?;
        let rows = stmt
            .query_map(params![after, limit], |r| {
                Ok((
                    r.get(0)?,
                    ExecutionRow {
                        session: Arc::from(r.get::<_, String>(1)?),
                        tool: Arc::from(r.get::<_, String>(2)?),
                        args_digest: Arc::from(r.get::<_, String>(3)?),
                        duration_us: r.get(4)?,
                        ts_ms: r.get(5)?,
                        reservation: None,
                    },
                ))
            })
            .map_err(|e| self.error(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.error(e))
    }
}
