//! Where this server keeps its tasks: rmcp's manager on this host, the
//! sessions that started them (for a 2025-11-25 `tasks/list`), and, with a
//! shared store, every other host's (`shared_tasks`). Answers `tasks/get`,
//! `tasks/update` and `tasks/cancel` from whichever holds the task. Never
//! runs a call: `tasks` drives them.

use super::settle;
use crate::call::SessionId;
use crate::config::McpTasks;
use crate::outcome::CallResult;
use crate::shared_tasks::SharedTasks;
use crate::store::Store;
use rmcp::ErrorData as McpError;
use rmcp::model::{DetailedTask, Task};
use rmcp::task_manager::{TaskContext, TaskFuture, TaskManager, TaskOptions};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How often a client is told to poll a task.
const POLL_INTERVAL_MS: u64 = 500;

/// The tasks of every connection of one server.
#[derive(Clone)]
pub(crate) struct Tasks {
    manager: TaskManager,
    settings: Arc<McpTasks>,
    /// Which session started each task a 2025-11-25 client asked for, so
    /// `tasks/list` shows a session its own tasks and no one else's.
    owners: Arc<Mutex<Owners>>,
    shared: Option<SharedTasks>,
}

/// Tasks by the session that started them, with those the manager has let
/// go of pruned now and then: each look at the manager sweeps all its
/// tasks, so pruning at every creation would cost the square of their
/// number.
#[derive(Default)]
struct Owners {
    started: Vec<(SessionId, String)>,
    prune_at: usize,
}

/// The shortest TTL a client may ask a task for: a shorter one would have
/// its task gone before the client's first poll.
const MIN_TTL_MS: u64 = 1000;

impl Tasks {
    pub(crate) fn new(settings: McpTasks, store: Arc<Store>) -> Tasks {
        Tasks {
            manager: TaskManager::new(),
            settings: Arc::new(settings),
            owners: Arc::default(),
            shared: SharedTasks::of(store),
        }
    }

    /// `tasks/get`: the task as this host runs it, else as the shared
    /// store shows it.
    pub(crate) fn get(&self, task_id: &str) -> Result<DetailedTask, McpError> {
        let here = self.manager.get_task(task_id);
        match (&here, &self.shared) {
            (Err(_), Some(shared)) => shared.get(task_id)?.map_or(here, Ok),
            _ => here,
        }
    }

    /// `tasks/update`: the answers go to the task here, or through the
    /// shared store to the host that runs it.
    pub(crate) fn update(
        &self,
        task_id: &str,
        responses: impl IntoIterator<Item = (String, serde_json::Value)>,
    ) -> Result<(), McpError> {
        let responses: Vec<_> = responses.into_iter().collect();
        match (self.manager.get_task(task_id), &self.shared) {
            (Err(unknown), Some(shared)) => {
                if shared.answer(task_id, responses)? || shared.get(task_id)?.is_some() {
                    Ok(())
                } else {
                    Err(unknown)
                }
            }
            _ => self.manager.update_task(task_id, responses),
        }
    }

    /// `tasks/cancel`: asks the task here, or through the shared store the
    /// host that runs it, to stop.
    pub(crate) fn cancel(&self, task_id: &str) -> Result<(), McpError> {
        match (self.manager.get_task(task_id), &self.shared) {
            (Err(unknown), Some(shared)) => {
                if shared.cancel(task_id)? || shared.get(task_id)?.is_some() {
                    Ok(())
                } else {
                    Err(unknown)
                }
            }
            _ => self.manager.cancel_task(task_id),
        }
    }

    /// Starts a task on this host's manager, published to the shared store
    /// (if any) before the client hears of it.
    pub(super) fn spawn(
        &self,
        options: TaskOptions,
        make_future: impl FnOnce(TaskContext) -> TaskFuture,
    ) -> Task {
        let task = match &self.shared {
            Some(shared) => {
                let shared = shared.clone();
                self.manager.spawn(options, move |cx| {
                    let run = make_future(cx);
                    Box::pin(async move {
                        let ended = run.await;
                        shared.nudge();
                        ended
                    })
                })
            }
            None => self.manager.spawn(options, make_future),
        };
        if let Some(shared) = &self.shared {
            shared.started(&self.manager, &task.task_id);
        }
        task
    }

    pub(crate) fn task_only(&self, tool: &str) -> bool {
        self.settings.task_only.iter().any(|t| t == tool)
    }

    /// A task's options: the host's TTL, or the one the client asked for
    /// if it is shorter (but not under [`MIN_TTL_MS`]).
    pub(super) fn options(&self, asked_ttl_ms: Option<u64>) -> TaskOptions {
        let most = u64::try_from(self.settings.ttl.as_millis()).unwrap_or(u64::MAX);
        let ttl = asked_ttl_ms.map_or(most, |asked| asked.clamp(MIN_TTL_MS.min(most), most));
        TaskOptions::new()
            .with_ttl_ms(ttl)
            .with_poll_interval_ms(POLL_INTERVAL_MS)
    }

    /// Refuses another task once `[mcp] max_tasks` run.
    pub(crate) fn refuse_over_limit(&self) -> Result<(), McpError> {
        if self.manager.running_task_count() < self.settings.max_running {
            return Ok(());
        }
        Err(McpError::internal_error(
            format!(
                "toolwarden: {} tasks are running, the most this host allows ([mcp] max_tasks); \
                 nothing ran. hint: wait for one to finish, or cancel one with tasks/cancel",
                self.settings.max_running
            ),
            None,
        ))
    }

    /// A task for a call that has already ended.
    pub(crate) fn spawn_settled(&self, asked_ttl_ms: Option<u64>, result: CallResult) -> Task {
        self.spawn(self.options(asked_ttl_ms), |_| {
            Box::pin(std::future::ready(settle(result)))
        })
    }

    /// Notes that `session` started `task`. Once the list has doubled
    /// since it was last pruned, the tasks the manager has let go of are
    /// forgotten.
    pub(crate) fn started(&self, session: SessionId, task: &Task) {
        const PRUNE_FROM: usize = 64;
        let mut owners = self.owners.lock().unwrap_or_else(|e| e.into_inner());
        if owners.started.len() >= owners.prune_at {
            owners
                .started
                .retain(|(_, id)| self.manager.get_task(id).is_ok());
            owners.prune_at = (2 * owners.started.len()).max(PRUNE_FROM);
        }
        owners.started.push((session, task.task_id.clone()));
    }

    /// The tasks `session` started that are still kept, oldest first.
    pub(crate) fn listed(&self, session: &SessionId) -> Vec<Task> {
        let owners = self.owners.lock().unwrap_or_else(|e| e.into_inner());
        owners
            .started
            .iter()
            .filter(|(owner, _)| owner == session)
            .filter_map(|(_, id)| self.manager.get_task(id).ok())
            .map(|detailed| detailed.task)
            .collect()
    }

    /// How long a call runs before it is handed over to a task.
    pub(super) fn after(&self) -> Duration {
        self.settings.after
    }
}
