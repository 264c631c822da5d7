//! MCP tasks in PostgreSQL (see `store::tasks`). Each statement is one
//! round trip; a running host's renewal takes out the answers and cancel
//! requests in the same statement.

use super::{Shared, SharedError, wait};
use crate::store::{TaskRow, TaskSignal, TaskWrite};

impl Shared {
    pub fn put_task(&self, task: TaskWrite<'_>, now_ms: i64) -> Result<bool, SharedError> {
        let client = self.client()?;
        let written = wait(client.execute(
            "INSERT INTO tasks (id, host, snapshot, terminal, lease_until_ms, expires_ms) \
             VALUES ($1, $2, $3, $4, $5, $6) \
             ON CONFLICT (id) DO UPDATE SET snapshot = EXCLUDED.snapshot, \
                 terminal = EXCLUDED.terminal, lease_until_ms = EXCLUDED.lease_until_ms, \
                 expires_ms = EXCLUDED.expires_ms \
             WHERE NOT tasks.terminal AND tasks.host = EXCLUDED.host",
            &[
                &task.id,
                &task.host,
                &task.snapshot,
                &task.terminal,
                &task.lease_until_ms,
                &task.expires_ms,
            ],
        ))?;
        if written == 1 && !task.terminal {
            wait(client.execute("DELETE FROM tasks WHERE expires_ms < $1", &[&now_ms]))?;
        }
        Ok(written == 1)
    }

    pub fn task(&self, id: &str, now_ms: i64) -> Result<Option<TaskRow>, SharedError> {
        let client = self.client()?;
        let row = wait(client.query_opt(
            "SELECT host, snapshot, terminal, lease_until_ms FROM tasks \
             WHERE id = $1 AND expires_ms >= $2",
            &[&id, &now_ms],
        ))?;
        row.map(|row| {
            Ok(TaskRow {
                host: row.try_get(0)?,
                snapshot: row.try_get(1)?,
                terminal: row.try_get(2)?,
                lease_until_ms: row.try_get(3)?,
            })
        })
        .transpose()
    }

    pub fn answer_task(&self, id: &str, answers: &str, now_ms: i64) -> Result<bool, SharedError> {
        let client = self.client()?;
        let written = wait(client.execute(
            "UPDATE tasks SET answers = \
                 (COALESCE(answers::jsonb, '{}'::jsonb) || $2::text::jsonb)::text \
             WHERE id = $1 AND NOT terminal AND expires_ms >= $3",
            &[&id, &answers, &now_ms],
        ))?;
        Ok(written == 1)
    }

    pub fn cancel_task(&self, id: &str, now_ms: i64) -> Result<bool, SharedError> {
        let client = self.client()?;
        let written = wait(client.execute(
            "UPDATE tasks SET cancel_requested = TRUE \
             WHERE id = $1 AND NOT terminal AND expires_ms >= $2",
            &[&id, &now_ms],
        ))?;
        Ok(written == 1)
    }

    pub fn renew_tasks(
        &self,
        host: &str,
        lease_until_ms: i64,
    ) -> Result<Vec<TaskSignal>, SharedError> {
        let client = self.client()?;
        let rows = wait(client.query(
            "WITH running AS ( \
                 SELECT id, answers, cancel_requested FROM tasks \
                 WHERE host = $1 AND NOT terminal FOR UPDATE \
             ) \
             UPDATE tasks SET lease_until_ms = $2, answers = NULL FROM running \
             WHERE tasks.id = running.id \
             RETURNING running.id, running.answers, running.cancel_requested",
            &[&host, &lease_until_ms],
        ))?;
        rows.into_iter()
            .map(|row| {
                Ok(TaskSignal {
                    id: row.try_get(0)?,
                    answers: row.try_get(1)?,
                    cancel_requested: row.try_get(2)?,
                })
            })
            .collect()
    }

    pub fn fail_orphaned_task(
        &self,
        id: &str,
        snapshot: &str,
        now_ms: i64,
    ) -> Result<bool, SharedError> {
        let client = self.client()?;
        let written = wait(client.execute(
            "UPDATE tasks SET snapshot = $2, terminal = TRUE, answers = NULL \
             WHERE id = $1 AND NOT terminal AND lease_until_ms < $3",
            &[&id, &snapshot, &now_ms],
        ))?;
        Ok(written == 1)
    }
}
