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
}
