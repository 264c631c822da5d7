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
//! (`shared_tasks`); `kept` holds them. A task's id is its only key: 122 random bits, told only to
//! the client that started it. This module never decides whether a call
//! may run.

mod kept;

pub(super) use kept::Tasks;

use super::running::StopOnDrop;
use super::{Server, convert, input};
use crate::call::{CallId, CallRequest};
use crate::outcome::{CallResult, ErrorCode};
use crate::question::MAX_QUESTIONS;
use rmcp::model::{
    CallToolResponse, CallToolResult, ClientCapabilities, CreateTaskResult, ElicitRequest,
    ErrorCode as RpcErrorCode, InputRequest, ProtocolVersion, Task,
};
use rmcp::service::RequestContext;
use rmcp::task_manager::{TaskContext, TaskExit};
use rmcp::{ErrorData as McpError, RoleServer};

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
                let task =
                    self.spawn_driven(request, running, None, (true, cx.client_capabilities()));
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
            () = tokio::time::sleep(self.tasks.after()) => return Err(first),
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
        (can_ask, declared): (bool, Option<ClientCapabilities>),
    ) -> Task {
        let server = self.clone();
        self.tasks
            .spawn(self.tasks.options(asked_ttl_ms), move |cx| {
                Box::pin(async move {
                    server
                        .drive(request, running, cx, (can_ask, declared))
                        .await
                })
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
        (can_ask, declared): (bool, Option<ClientCapabilities>),
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
                    // A request the client cannot answer would wait for it
                    // until the task expires: the task ends with it instead.
                    if input::lacking(&result.questions, declared.as_ref())
                        .is_some_and(|missing| input::lacks_client_requests(&missing))
                    {
                        return settle(result);
                    }
                    let Some(asked) = input::input_requests(&result.questions) else {
                        return settle(result);
                    };
                    // Asked together, so the task shows them all at once;
                    // the answers may come in any order and in separate
                    // updates, and the run waits for every one.
                    let replies =
                        futures::future::try_join_all(asked.into_iter().map(|(key, input)| {
                            let task = task.clone();
                            async move {
                                let reply = task
                                    .request_input(
                                        // A fresh key each time: an answer
                                        // that did not fit is asked for
                                        // again.
                                        format!("question-{key}-{round}"),
                                        input,
                                    )
                                    .await?;
                                Ok::<_, TaskExit>((key, reply))
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
