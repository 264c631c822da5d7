//! Long calls as tasks: the `io.modelcontextprotocol/tasks` extension
//! (SEP-2663), for clients that declared it.
//!
//! The host, not the client, decides: a call still running
//! `[mcp] task_after_ms` after it started is answered with a task the
//! client polls (`tasks/get`), answers (`tasks/update`) and may cancel
//! (`tasks/cancel`); a call that ends sooner is answered as usual, so
//! quick tools never cost a poll. A tool in `[mcp] task_only` always runs
//! as a task, and a client without the extension is refused (-32021)
//! rather than kept waiting. A call that stops for a person within that
//! moment (an approval, a tool's question) is handed back as usual (an
//! `input_required` result or an elicitation); one that stops later leaves
//! its task `input_required`, and the answer sent with `tasks/update` goes
//! through the approval book or the question's form like any other before
//! the call runs again.
//!
//! Every run of a task is a governed call like any other, audited, with
//! every limit. Tasks run in this process: they outlast the connection
//! that started them (its client may poll from another) but not a restart
//! of the host. With a shared store, any host answers for them
//! (`shared_tasks`). A task's id is its only key: 122 random bits, told only to
//! the client that started it. This module never decides whether a call
//! may run.

use super::running::StopOnDrop;
use super::shared_tasks::SharedTasks;
use super::{Server, convert, input};
use crate::call::{CallId, CallRequest, SessionId};
use crate::config::McpTasks;
use crate::outcome::{CallResult, ErrorCode};
use crate::question::MAX_QUESTIONS;
use crate::store::Store;
use rmcp::model::{
    CallToolResponse, CallToolResult, ClientCapabilities, CreateTaskResult, DetailedTask,
    ElicitRequest, ErrorCode as RpcErrorCode, InputRequest, ProtocolVersion, Task,
};
use rmcp::service::RequestContext;
use rmcp::task_manager::{TaskContext, TaskExit, TaskManager, TaskOptions};
use rmcp::{ErrorData as McpError, RoleServer};
use std::sync::{Arc, Mutex};

/// How often a client is told to poll a task.
const POLL_INTERVAL_MS: u64 = 500;

/// The tasks of every connection of one server.
#[derive(Clone)]
pub(super) struct Tasks {
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
    pub(super) fn new(settings: McpTasks, store: Arc<Store>) -> Tasks {
        Tasks {
            manager: TaskManager::new(),
            settings: Arc::new(settings),
            owners: Arc::default(),
            shared: SharedTasks::of(store),
        }
    }

    /// `tasks/get`: the task as this host runs it, else as the shared
    /// store shows it.
    pub(super) fn get(&self, task_id: &str) -> Result<DetailedTask, McpError> {
        let here = self.manager.get_task(task_id);
        match (&here, &self.shared) {
            (Err(_), Some(shared)) => shared.get(task_id)?.map_or(here, Ok),
            _ => here,
        }
    }

    /// `tasks/update`: the answers go to the task here, or through the
    /// shared store to the host that runs it.
    pub(super) fn update(
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
    pub(super) fn cancel(&self, task_id: &str) -> Result<(), McpError> {
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
    fn spawn(
        &self,
        options: TaskOptions,
        make_future: impl FnOnce(TaskContext) -> rmcp::task_manager::TaskFuture,
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

    pub(super) fn task_only(&self, tool: &str) -> bool {
        self.settings.task_only.iter().any(|t| t == tool)
    }

    /// A task's options: the host's TTL, or the one the client asked for
    /// if it is shorter (but not under [`MIN_TTL_MS`]).
    fn options(&self, asked_ttl_ms: Option<u64>) -> TaskOptions {
        let most = u64::try_from(self.settings.ttl.as_millis()).unwrap_or(u64::MAX);
        let ttl = asked_ttl_ms.map_or(most, |asked| asked.clamp(MIN_TTL_MS.min(most), most));
        TaskOptions::new()
            .with_ttl_ms(ttl)
            .with_poll_interval_ms(POLL_INTERVAL_MS)
    }

    /// Refuses another task once `[mcp] max_tasks` run.
    pub(super) fn refuse_over_limit(&self) -> Result<(), McpError> {
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
    pub(super) fn spawn_settled(&self, asked_ttl_ms: Option<u64>, result: CallResult) -> Task {
        self.spawn(self.options(asked_ttl_ms), |_| {
            Box::pin(std::future::ready(settle(result)))
        })
    }

    /// Notes that `session` started `task`. Once the list has doubled
    /// since it was last pruned, the tasks the manager has let go of are
    /// forgotten.
    pub(super) fn started(&self, session: SessionId, task: &Task) {
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
    pub(super) fn listed(&self, session: &SessionId) -> Vec<Task> {
        let owners = self.owners.lock().unwrap_or_else(|e| e.into_inner());
        owners
            .started
            .iter()
            .filter(|(owner, _)| owner == session)
            .filter_map(|(_, id)| self.manager.get_task(id).ok())
            .map(|detailed| detailed.task)
            .collect()
    }
}

/// How a call that may become a task went in its first moment.
pub(super) enum Begun {
    /// It is a task now; this answers the `tools/call`.
    Task(CallToolResponse),
    /// It ended (or stopped for a person) in time, or runs as usual.
    Ended(Box<CallResult>),
    /// Not a task (the client has no tasks, or too many run): run it as
    /// usual.
    Usual,
}

impl Server {
    /// Whether `tool` may only run as a task, and if so, whether the plain
    /// call `cx` sent may go on as one: a 2025-11-25 client is refused as
    /// that revision says (-32601: it must ask for a task), any other that
    /// did not declare the extension for lack of it (-32021).
    pub(super) fn refuse_untasked(
        &self,
        tool: &str,
        cx: &RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        if !self.tasks.task_only(tool) {
            return Ok(());
        }
        if cx.protocol_version() == Some(ProtocolVersion::V_2025_11_25) {
            return Err(McpError::new(
                RpcErrorCode::METHOD_NOT_FOUND,
                format!(
                    "toolwarden: `{tool}` runs only as a task (its taskSupport is `required`); \
                     call it with `\"task\": {{}}`; nothing ran"
                ),
                None,
            ));
        }
        if !declared_tasks(cx) {
            return Err(McpError::missing_required_client_capability(
                ClientCapabilities::builder().enable_tasks().build(),
            ));
        }
        Ok(())
    }

    /// Starts `request` for a client that declared the extension (the
    /// caller checks, see [`declared_tasks`]): waits for it up to
    /// `[mcp] task_after_ms`, then hands it over to a task.
    pub(super) async fn begin(
        &self,
        request: CallRequest,
        cx: &RequestContext<RoleServer>,
    ) -> Result<Begun, McpError> {
        let task_only = self.tasks.task_only(&request.tool);
        if let Err(full) = self.tasks.refuse_over_limit() {
            return if task_only {
                Err(full)
            } else {
                Ok(Begun::Usual)
            };
        }
        match self.first_moment(&request, cx).await {
            Ok(result) if !task_only || stops_for_a_person(&result) => {
                Ok(Begun::Ended(Box::new(result)))
            }
            Ok(result) => Ok(Begun::Task(
                CreateTaskResult::new(self.tasks.spawn_settled(None, result)).into(),
            )),
            Err(running) => {
                let mut request = request;
                // Its progress went to the `tools/call` now answered.
                request.progress = None;
                let task = self.spawn_driven(request, running, None, true);
                Ok(Begun::Task(CreateTaskResult::new(task).into()))
            }
        }
    }

    /// Runs `request` for up to `[mcp] task_after_ms`: its result if it
    /// ended by then (or the client gave up), else the run under way.
    pub(super) async fn first_moment(
        &self,
        request: &CallRequest,
        cx: &RequestContext<RoleServer>,
    ) -> Result<CallResult, StopOnDrop> {
        let cancel = request.cancel.clone();
        let mut first = StopOnDrop::new(self.spawn_call(request.clone()), cancel.clone());
        let ended = tokio::select! {
            ended = first.join() => ended,
            () = tokio::time::sleep(self.tasks.settings.after) => return Err(first),
            () = cx.ct.cancelled() => {
                cancel.cancel();
                first.join().await
            }
        };
        Ok(self.joined(ended, request))
    }

    /// A task that drives `running` to its end (see [`Server::drive`]).
    pub(super) fn spawn_driven(
        &self,
        request: CallRequest,
        running: StopOnDrop,
        asked_ttl_ms: Option<u64>,
        can_ask: bool,
    ) -> Task {
        let server = self.clone();
        self.tasks
            .spawn(self.tasks.options(asked_ttl_ms), move |cx| {
                Box::pin(async move { server.drive(request, running, cx, can_ask).await })
            })
    }

    /// A task's life: waits for the run under way, asks the person through
    /// the task when a run stops for them (if they `can_ask`; else that run
    /// ends the task), runs the call again with the answer, until one run
    /// ends otherwise. Bounded like the other edges' loops: a run may stop
    /// for an approval and for each question once.
    async fn drive(
        &self,
        mut request: CallRequest,
        mut running: StopOnDrop,
        task: TaskContext,
        can_ask: bool,
    ) -> Result<CallToolResult, TaskExit> {
        for round in 0..2 * MAX_QUESTIONS {
            let result = tokio::select! {
                result = running.join() => self.joined(result, &request),
                () = task.cancelled() => {
                    running.stop();
                    let _ = running.join().await;
                    return Err(TaskExit::Cancelled);
                }
            };
            if !can_ask {
                return settle(result);
            }
            match result.code() {
                Some(ErrorCode::ApprovalRequired) => {
                    let Some(id) = result.approval_id.clone() else {
                        return settle(result);
                    };
                    let Some(form) = self.approval_question(&id, request.caller.as_deref()) else {
                        return settle(result);
                    };
                    let reply = task
                        .request_input(
                            format!("approval-{id}"),
                            InputRequest::Elicitation(ElicitRequest::new(form)),
                        )
                        .await?;
                    // A reply without a choice decides nothing: the task
                    // ends with the approval still pending (it can be
                    // decided elsewhere).
                    let Some(decision) = input::reply_decision(&reply) else {
                        return settle(result);
                    };
                    if !self.record_answer(&id, decision, request.caller.as_deref()) {
                        return settle(result);
                    }
                    request.approval = Some(id);
                }
                Some(ErrorCode::InputRequired) => {
                    let Some(forms) = input::question_forms(&result.questions) else {
                        return settle(result);
                    };
                    // Asked together, so the task shows them all at once;
                    // the answers may come in any order and in separate
                    // updates, and the run waits for every one.
                    let replies =
                        futures::future::try_join_all(forms.into_iter().map(|(question, form)| {
                            let task = task.clone();
                            async move {
                                let reply = task
                                    .request_input(
                                        // A fresh key each time: an answer
                                        // that did not fit the form is
                                        // asked for again.
                                        format!("question-{}-{round}", question.key),
                                        InputRequest::Elicitation(ElicitRequest::new(form)),
                                    )
                                    .await?;
                                Ok::<_, TaskExit>((question.key.clone(), reply))
                            }
                        }))
                        .await?;
                    for (key, reply) in replies {
                        let answer = input::reply_answer(&reply)
                            .unwrap_or(crate::question::Answer::Cancelled);
                        request.answers.insert(key, answer);
                    }
                    // The run that asked used up its approval, if any.
                    request.approval = None;
                }
                _ => return settle(result),
            }
            request.call_id = CallId::new();
            running = StopOnDrop::new(self.spawn_call(request.clone()), request.cancel.clone());
        }
        Err(TaskExit::Error(McpError::internal_error(
            "toolwarden: the call stopped for a person more often than a call may; nothing more \
             runs",
            None,
        )))
    }
}

/// Whether the client that sent `cx` declared the tasks extension (at
/// `initialize`, or in this request's `_meta`).
pub(super) fn declared_tasks(cx: &RequestContext<RoleServer>) -> bool {
    cx.client_capabilities()
        .is_some_and(|caps| caps.supports_tasks())
}

pub(super) fn stops_for_a_person(result: &CallResult) -> bool {
    matches!(
        result.code(),
        Some(ErrorCode::ApprovalRequired | ErrorCode::InputRequired)
    )
}

/// A finished run as its task ends: `completed` with the tool's result
/// (its own errors and the host's refusals included, `isError` as ever),
/// `cancelled` when it was stopped, `failed` when the plugin crashed or the
/// host failed (SEP-2663 keeps `failed` for errors outside the tool's
/// answer).
fn settle(result: CallResult) -> Result<CallToolResult, TaskExit> {
    match result.code() {
        Some(ErrorCode::Cancelled) => Err(TaskExit::Cancelled),
        Some(code @ (ErrorCode::ToolCrashed | ErrorCode::HostError)) => {
            let message = result
                .error
                .as_ref()
                .map_or_else(String::new, |e| e.message.clone());
            Err(TaskExit::Error(McpError::internal_error(
                format!("{}: {message}", code.as_str()),
                Some(serde_json::json!({
                    "code": code.as_str(),
                    "call_id": result.call_id,
                })),
            )))
        }
        _ => Ok(convert::result(result)),
    }
}
