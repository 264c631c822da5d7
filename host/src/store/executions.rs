//! The `executions` table: calls that reached a plugin, per session, for
//! budgets and duplicate detection. Denied or pending calls are never here.

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
}

/// How often a session ran one tool with one set of arguments, and for how long.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExecutionGroup {
    pub tool: String,
    pub args_digest: String,
    pub calls: i64,
    pub duration_us: i64,
}

impl Store {
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
                    },
                ))
            })
            .map_err(|e| self.error(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.error(e))
    }
}
