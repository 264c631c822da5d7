//! Tasks any host answers for, when hosts share a store.
//!
//! A task runs where its `tools/call` landed, in that host's
//! [`TaskManager`]; with a shared store every host also finds it there. The
//! running host publishes each change of the task (what `tasks/get` shows,
//! result included) and renews a lease on it; another host answers
//! `tasks/get` from that row, and leaves a `tasks/update`'s answers or a
//! `tasks/cancel` in it for the running host, which takes them out at its
//! next look ([`TICK`]) and hands them to the task as if they had been sent
//! to it. A task whose lease ran out ([`LEASE`]: its host died, or lost the
//! store that long) is failed by the first host asked about it, so none is
//! left working for ever.
//!
//! One thread per server publishes and renews, and only while the server
//! runs tasks: an idle host sends the store nothing. A store that cannot be
//! reached leaves tasks as they are here (their own host still answers for
//! them) and is tried again at the next look. This module never decides
//! whether a call may run, and never runs one.

use crate::store::{Store, TaskSignal, TaskWrite, now_ms};
use rmcp::ErrorData as McpError;
use rmcp::model::{DetailedTask, TaskPayload};
use rmcp::task_manager::{TaskManager, current_timestamp};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::Thread;
use std::time::Duration;

/// How often the running host publishes changes and takes out answers.
const TICK: Duration = Duration::from_millis(200);
/// How long a host vouches for its tasks without renewing: a task whose
/// host stopped is failed once this has passed (README, "Several hosts").
pub(super) const LEASE: Duration = Duration::from_secs(10);

/// The tasks of one server, as the shared store shows them.
#[derive(Clone)]
pub(super) struct SharedTasks {
    store: Arc<Store>,
    /// This server's name in the store: who runs a task.
    host: Arc<str>,
    /// The tasks this server runs and has not yet published as ended: what
    /// it last wrote of each, and whether a cancel was passed on.
    running: Arc<Mutex<HashMap<String, Published>>>,
    publisher: Arc<OnceLock<Option<Thread>>>,
}

#[derive(Default)]
struct Published {
    snapshot: String,
    cancel_passed_on: bool,
}

impl SharedTasks {
    /// Tasks shared through `store`, if it is shared.
    pub(super) fn of(store: Arc<Store>) -> Option<SharedTasks> {
        store.is_shared().then(|| SharedTasks {
            store,
            host: format!("pid {} ({})", std::process::id(), &uuid_tail()).into(),
            running: Arc::default(),
            publisher: Arc::default(),
        })
    }

    /// Publishes a task this server just started, before the client hears
    /// of it, so its first poll finds it on any host.
    pub(super) fn started(&self, manager: &TaskManager, task_id: &str) {
        let Ok(task) = manager.get_task(task_id) else {
            return;
        };
        let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        let published = running.entry(task_id.to_owned()).or_default();
        self.publish(task_id, &task, published);
        drop(running);
        if let Some(thread) = self.publisher(manager) {
            thread.unpark();
        }
    }

    /// Looks at the published tasks again soon (one of them just ended).
    pub(super) fn nudge(&self) {
        if let Some(Some(thread)) = self.publisher.get() {
            thread.unpark();
        }
    }

    /// Task `task_id` as the store shows it, failed first if its host's
    /// lease ran out; `None` if no host runs or ran it.
    pub(super) fn get(&self, task_id: &str) -> Result<Option<DetailedTask>, McpError> {
        let now = now_ms();
        let Some(row) = self.store.task(task_id, now).map_err(unreachable)? else {
            return Ok(None);
        };
        let task: DetailedTask = serde_json::from_str(&row.snapshot).map_err(|e| {
            McpError::internal_error(
                format!("task {task_id} is unreadable in the store: {e}"),
                None,
            )
        })?;
        if row.terminal || row.lease_until_ms >= now {
            return Ok(Some(task));
        }
        let failed = orphaned(task, &row.host);
        let snapshot = serde_json::to_string(&failed)
            .map_err(|e| McpError::internal_error(e.to_string(), None))?;
        if self
            .store
            .fail_orphaned_task(task_id, &snapshot, now)
            .map_err(unreachable)?
        {
            tracing::warn!(task = task_id, host = %row.host, "a task's host stopped renewing it: failed");
            return Ok(Some(failed));
        }
        // Renewed or ended meanwhile: show what it is now.
        self.get_settled(task_id, now)
    }

    fn get_settled(&self, task_id: &str, now: i64) -> Result<Option<DetailedTask>, McpError> {
        self.store
            .task(task_id, now)
            .map_err(unreachable)?
            .map(|row| serde_json::from_str(&row.snapshot))
            .transpose()
            .map_err(|e| McpError::internal_error(e.to_string(), None))
    }

    /// Leaves input responses for the host running `task_id`; false if no
    /// host runs it.
    pub(super) fn answer(
        &self,
        task_id: &str,
        responses: impl IntoIterator<Item = (String, serde_json::Value)>,
    ) -> Result<bool, McpError> {
        let responses: serde_json::Map<_, _> = responses.into_iter().collect();
        let text = serde_json::Value::Object(responses).to_string();
        self.store
            .answer_task(task_id, &text, now_ms())
            .map_err(unreachable)
    }

    /// Asks the host running `task_id` to cancel it; false if no host runs
    /// it.
    pub(super) fn cancel(&self, task_id: &str) -> Result<bool, McpError> {
        self.store
            .cancel_task(task_id, now_ms())
            .map_err(unreachable)
    }

    fn publisher(&self, manager: &TaskManager) -> Option<&Thread> {
        self.publisher
            .get_or_init(|| {
                let shared = self.clone();
                let manager = manager.clone();
                std::thread::Builder::new()
                    .name("toolwarden-tasks".into())
                    .spawn(move || shared.publish_for_ever(&manager))
                    .map(|handle| handle.thread().clone())
                    .map_err(|e| {
                        tracing::warn!("tasks will not be published to the shared store: {e}");
                    })
                    .ok()
            })
            .as_ref()
    }

    fn publish_for_ever(&self, manager: &TaskManager) {
        loop {
            std::thread::park_timeout(TICK);
            self.look(manager);
        }
    }

    /// One look: publishes what changed, renews the lease on what still
    /// runs and passes on what other hosts left for it.
    fn look(&self, manager: &TaskManager) {
        let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        if running.is_empty() {
            return;
        }
        running.retain(|task_id, published| match manager.get_task(task_id) {
            Ok(task) => {
                let ended = task.status().is_terminal();
                !(self.publish(task_id, &task, published) && ended)
            }
            // Past its TTL here: the row expires on its own.
            Err(_) => false,
        });
        if running.is_empty() {
            return;
        }
        let lease_until = now_ms().saturating_add(millis(LEASE));
        let signals = match self.store.renew_tasks(&self.host, lease_until) {
            Ok(signals) => signals,
            Err(e) => {
                tracing::warn!("the shared store did not take the lease on this host's tasks: {e}");
                return;
            }
        };
        for TaskSignal {
            id,
            answers,
            cancel_requested,
        } in signals
        {
            let Some(published) = running.get_mut(&id) else {
                continue;
            };
            if let Some(answers) = answers.as_deref().and_then(parse_answers) {
                let _ = manager.update_task(&id, answers);
            }
            if cancel_requested && !published.cancel_passed_on {
                published.cancel_passed_on = true;
                let _ = manager.cancel_task(&id);
            }
        }
    }

    /// Writes `task` if it changed since `published`; whether the store
    /// holds it now.
    fn publish(&self, task_id: &str, task: &DetailedTask, published: &mut Published) -> bool {
        let Ok(snapshot) = serde_json::to_string(task) else {
            return false;
        };
        if snapshot == published.snapshot {
            return true;
        }
        let now = now_ms();
        let ttl = task
            .task
            .ttl_ms
            .map_or(i64::MAX, |ttl| i64::try_from(ttl).unwrap_or(i64::MAX));
        let write = TaskWrite {
            id: task_id,
            host: &self.host,
            snapshot: &snapshot,
            terminal: task.status().is_terminal(),
            lease_until_ms: now.saturating_add(millis(LEASE)),
            expires_ms: now.saturating_add(ttl),
        };
        match self.store.put_task(write, now) {
            Ok(_) => {
                published.snapshot = snapshot;
                true
            }
            Err(e) => {
                tracing::warn!(
                    task = task_id,
                    "the shared store did not take a task's state: {e}"
                );
                false
            }
        }
    }
}

/// `task` failed because `host` stopped vouching for it.
fn orphaned(mut task: DetailedTask, host: &str) -> DetailedTask {
    let error = McpError::internal_error(
        format!(
            "toolwarden: the host running task {} ({host}) stopped answering for it for {} s; \
             whether its call ran to the end is unknown: look for its outcome in the audit",
            task.task.task_id,
            LEASE.as_secs()
        ),
        Some(serde_json::json!({ "code": "TASK_HOST_LOST" })),
    );
    let error = match serde_json::to_value(&error) {
        Ok(serde_json::Value::Object(map)) => map,
        _ => serde_json::Map::new(),
    };
    task.task.last_updated_at = current_timestamp();
    task.task.status_message = Some("its host stopped answering".into());
    DetailedTask::new(task.task, TaskPayload::Failed { error })
}

fn parse_answers(text: &str) -> Option<Vec<(String, serde_json::Value)>> {
    match serde_json::from_str(text) {
        Ok(serde_json::Value::Object(map)) => Some(map.into_iter().collect()),
        _ => None,
    }
}

fn unreachable(e: crate::store::StoreError) -> McpError {
    McpError::internal_error(
        format!("toolwarden: the shared store could not be asked about the task: {e}"),
        None,
    )
}

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

fn uuid_tail() -> String {
    let id = uuid::Uuid::new_v4().simple().to_string();
    id[..8].to_owned()
}
