//! The executions budgets count: what the audit chain appends with each
//! outcome and the budget guard reads, and how idle sessions are forgotten.
//! Both `audit` and `budget` use it; neither imports the other.

use super::SharedError;
use crate::store::ExecutionGroup;
use tokio_postgres::Row;

impl super::Shared {
    /// Also removes the budget units whose lease ran out (their host died
    /// before storing or giving them back), which no check counts.
    pub fn forget_idle_sessions(&self, idle_since_ms: i64) -> Result<u64, SharedError> {
        let client = self.client()?;
        let now = crate::store::now_ms();
        let idle: [&(dyn tokio_postgres::types::ToSql + Sync); 1] = [&idle_since_ms];
        let lapsed: [&(dyn tokio_postgres::types::ToSql + Sync); 1] = [&now];
        let (forgotten, _, _) = super::wait(async {
            futures::try_join!(
                client.execute(FORGET_IDLE_SESSIONS, &idle),
                client.execute(
                    "DELETE FROM budget_reservations WHERE expires_ms <= $1",
                    &lapsed
                ),
                client.execute("DELETE FROM sampling_tokens WHERE at_ms < $1", &idle),
            )
        })?;
        Ok(forgotten)
    }
}

/// Removes the executions of the sessions with none since `$1` (the same
/// statement on SQLite, see `store::executions`).
const FORGET_IDLE_SESSIONS: &str = "DELETE FROM executions WHERE ts_ms < $1 \
     AND session NOT IN (SELECT session FROM executions WHERE ts_ms >= $1)";

/// A row of (tool, args_digest, calls, duration_us).
pub(super) fn execution_group(r: &Row) -> Result<ExecutionGroup, SharedError> {
    Ok(ExecutionGroup {
        tool: r.try_get(0)?,
        args_digest: r.try_get(1)?,
        calls: r.try_get(2)?,
        duration_us: r.try_get(3)?,
    })
}
