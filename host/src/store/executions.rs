//! The `executions` table: calls that reached a plugin, per session, for
//! budgets and duplicate detection. Denied or pending calls are never here.

use super::{Store, StoreError};
use rusqlite::params;

/// What a session has executed so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExecutionTotals {
    pub calls: i64,
    pub run_us: i64,
    pub tool_calls: i64,
    pub same_args: i64,
}

impl Store {
    pub fn record_execution(
        &self,
        session: &str,
        tool: &str,
        digest: &str,
        duration_us: i64,
        ts_ms: i64,
    ) -> Result<(), StoreError> {
        self.conn()
            .execute(
                "INSERT INTO executions (session, tool, args_digest, duration_us, ts_ms) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![session, tool, digest, duration_us, ts_ms],
            )
            .map(drop)
            .map_err(|e| self.error(e))
    }

    pub fn execution_totals(
        &self,
        session: &str,
        tool: &str,
        digest: &str,
    ) -> Result<ExecutionTotals, StoreError> {
        self.conn()
            .query_row(
                "SELECT count(*), coalesce(sum(duration_us), 0), \
                        coalesce(sum(tool = ?2), 0), coalesce(sum(tool = ?2 AND args_digest = ?3), 0) \
                 FROM executions WHERE session = ?1",
                params![session, tool, digest],
                |r| Ok(ExecutionTotals { calls: r.get(0)?, run_us: r.get(1)?, tool_calls: r.get(2)?, same_args: r.get(3)? }),
            )
            .map_err(|e| self.error(e))
    }
}
