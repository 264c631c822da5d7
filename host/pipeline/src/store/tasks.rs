//! MCP tasks in the shared store, so a client's `tasks/get`, `tasks/update`
//! and `tasks/cancel` may land on any host. The host running a task keeps
//! its row current and renews a lease on it; other hosts read the row,
//! leave answers and cancel requests in it for the running host to pick
//! up, and fail a task whose lease ran out (its host is gone). Without a
//! shared store tasks live in the memory of their host, and these are
//! no-ops the caller never needs. Knows rows, not what a task means.

use super::{Store, StoreError};

/// A task as the shared store holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskRow {
    /// The host that runs it.
    pub host: String,
    /// The task as its host last showed it (JSON).
    pub snapshot: String,
    pub terminal: bool,
    /// Until when its host vouches for it.
    pub lease_until_ms: i64,
}

/// What other hosts left for a running task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskSignal {
    pub id: String,
    /// Input responses (a JSON object of key to reply), taken out.
    pub answers: Option<String>,
    pub cancel_requested: bool,
}

/// A task's row as its host writes it.
#[derive(Debug, Clone, Copy)]
pub struct TaskWrite<'a> {
    pub id: &'a str,
    pub host: &'a str,
    pub snapshot: &'a str,
    pub terminal: bool,
    pub lease_until_ms: i64,
    pub expires_ms: i64,
}

impl Store {
    /// `ask` of the shared store, or `absent` without one.
    pub(super) fn on_shared<T>(
        &self,
        absent: T,
        ask: impl FnOnce(&super::Shared) -> Result<T, super::SharedError>,
    ) -> Result<T, StoreError> {
        match &self.shared {
            Some(shared) => ask(shared).map_err(|e| self.shared_error(e)),
            None => Ok(absent),
        }
    }

    /// Writes a task's row, unless another host has already ended it
    /// (false then). A new task's write removes the rows past their
    /// expiry on the way.
    pub fn put_task(&self, task: TaskWrite<'_>, now_ms: i64) -> Result<bool, StoreError> {
        self.on_shared(true, |shared| shared.put_task(task, now_ms))
    }

    /// The task `id`, unless it expired.
    pub fn task(&self, id: &str, now_ms: i64) -> Result<Option<TaskRow>, StoreError> {
        self.on_shared(None, |shared| shared.task(id, now_ms))
    }

    /// Adds input responses (a JSON object) for the host running task `id`
    /// to pass on; false if there is no such task still running.
    pub fn answer_task(&self, id: &str, answers: &str, now_ms: i64) -> Result<bool, StoreError> {
        self.on_shared(false, |shared| shared.answer_task(id, answers, now_ms))
    }

    /// Asks the host running task `id` to cancel it; false if there is no
    /// such task still running.
    pub fn cancel_task(&self, id: &str, now_ms: i64) -> Result<bool, StoreError> {
        self.on_shared(false, |shared| shared.cancel_task(id, now_ms))
    }

    /// Renews the lease on every running task of `host` and takes out what
    /// other hosts left for them.
    pub fn renew_tasks(
        &self,
        host: &str,
        lease_until_ms: i64,
    ) -> Result<Vec<TaskSignal>, StoreError> {
        self.on_shared(Vec::new(), |shared| {
            shared.renew_tasks(host, lease_until_ms)
        })
    }

    /// Ends task `id` with `snapshot` if it still runs and its lease ran
    /// out before `now_ms`: of hosts racing to, one does (true for it).
    pub fn fail_orphaned_task(
        &self,
        id: &str,
        snapshot: &str,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        self.on_shared(false, |shared| {
            shared.fail_orphaned_task(id, snapshot, now_ms)
        })
    }
}
