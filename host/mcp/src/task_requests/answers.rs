//! What a 2025-11-25 session's task requests are answered with: a task
//! started for a `tools/call`, and `tasks/get`, `tasks/result`, `tasks/list`
//! and `tasks/cancel` over the extension's task manager, in the revision's
//! shapes. Reached only through the custom requests [`super::Dialect`]
//! hands the server.

use super::{TaskRequested, requested};
use crate::call::CallRequest;
use crate::running::StopOnDrop;
use crate::{ELICITATION_TIMEOUT, Server};
use rmcp::model::{
    CallToolRequestParams, CallToolResult, CustomRequest, CustomResult, ElicitRequestParams,
    ErrorCode, InputRequest, ListToolsResult, ProtocolVersion, ServerResult, Task, TaskPayload,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};
use serde::Deserialize;
use serde_json::{Value, json};
use std::time::Duration;

/// The `_meta` key that ties a result or a question to its task.
const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// How often a wait for a task looks at it again: rmcp's task manager
/// offers no way to be woken when a task changes.
const LOOK_AGAIN: Duration = Duration::from_millis(20);

/// How long `tasks/cancel` waits for the call to stop before answering
/// with the task as it stands.
const CANCEL_WAIT: Duration = Duration::from_secs(5);

impl Server {
    /// A 2025-11-25 session's task request (see [`Dialect`]); any other
    /// custom request, or one from another revision, is not found.
    pub(crate) async fn answer_task_request(
        &self,
        request: CustomRequest,
        cx: RequestContext<RoleServer>,
    ) -> Result<CustomResult, McpError> {
        if cx.protocol_version() != Some(ProtocolVersion::V_2025_11_25) {
            return Err(McpError::new(
                ErrorCode::METHOD_NOT_FOUND,
                request.method,
                None,
            ));
        }
        let answer = match request.method.as_str() {
            "tools/call" => {
                let mut params: CallToolRequestParams = params_of(&request)?;
                let Some(TaskRequested::Task { ttl_ms }) = requested(&cx.extensions) else {
                    return Err(McpError::invalid_params(
                        "toolwarden: `task` must be an object whose `ttl`, if given, is a whole \
                         number of milliseconds; nothing ran",
                        None,
                    ));
                };
                let call = self.call_request(&mut params, &cx)?;
                let task = self.start_task(call, ttl_ms, &cx).await?;
                json!({ "task": task_json(&task) })
            }
            "tools/list" => {
                let profile = self.profile(&cx.meta);
                let tools = self.tools(profile.as_deref());
                let mut listed = serde_json::to_value(ListToolsResult::with_all_items(tools))
                    .map_err(|e| McpError::internal_error(e.to_string(), None))?;
                if let Some(tools) = listed.get_mut("tools").and_then(Value::as_array_mut) {
                    for tool in tools {
                        let name = tool.get("name").and_then(Value::as_str).unwrap_or_default();
                        let support = if self.tasks.task_only(name) {
                            "required"
                        } else {
                            "optional"
                        };
                        tool["execution"] = json!({ "taskSupport": support });
                    }
                }
                listed
            }
            "tasks/get" => {
                let task_id = task_id_of(&request)?;
                task_json(&self.tasks.get(&task_id)?.task)
            }
            "tasks/cancel" => {
                let task_id = task_id_of(&request)?;
                task_json(&self.cancel_task_now(&task_id).await?)
            }
            "tasks/result" => {
                let task_id = task_id_of(&request)?;
                self.task_result(&task_id, &cx).await?
            }
            "tasks/list" => {
                let session = self.session(&cx.meta)?;
                let tasks = self.tasks.listed(&session);
                json!({ "tasks": tasks.iter().map(task_json).collect::<Vec<_>>() })
            }
            _ => {
                return Err(McpError::new(
                    ErrorCode::METHOD_NOT_FOUND,
                    request.method,
                    None,
                ));
            }
        };
        Ok(CustomResult(answer))
    }
}

impl Server {
    /// Starts `request` as a task the client asked for: waits for it a
    /// moment first (as the extension's tasks do), so a quick call's task
    /// has its result by the client's first poll.
    async fn start_task(
        &self,
        request: CallRequest,
        ttl_ms: Option<u64>,
        cx: &RequestContext<RoleServer>,
    ) -> Result<Task, McpError> {
        self.tasks.refuse_over_limit()?;
        // Asked through `tasks/result`, so only a client that can show a
        // form; any other gets what the call stopped for as its result
        // (an approval's id to approve elsewhere, as legacy clients do).
        let can_ask = !cx.peer.supported_elicitation_modes().is_empty();
        let session = request.session.clone();
        let running = match self.first_moment(&request, cx).await {
            Ok(ended) if !(can_ask && crate::tasks::stops_for_a_person(&ended)) => {
                let task = self.tasks.spawn_settled(ttl_ms, ended);
                self.tasks.started(session, &task);
                return Ok(task);
            }
            Ok(stopped) => {
                let cancel = request.cancel.clone();
                StopOnDrop::new(self.calls.spawn(async move { stopped }), cancel)
            }
            Err(running) => running,
        };
        let task = self.spawn_driven(
            request,
            running,
            ttl_ms,
            (
                can_ask,
                cx.peer.peer_info().map(|info| info.capabilities.clone()),
            ),
        );
        self.tasks.started(session, &task);
        Ok(task)
    }

    /// `tasks/cancel`: stops the task's call and answers with the task once
    /// it has stopped (or, if it takes longer than [`CANCEL_WAIT`], as it
    /// stands). A task already ended cannot be cancelled (-32602).
    async fn cancel_task_now(&self, task_id: &str) -> Result<Task, McpError> {
        let task = self.tasks.get(task_id)?;
        if task.status().is_terminal() {
            return Err(McpError::invalid_params(
                format!(
                    "task {task_id} has already ended ({}); there is nothing to cancel",
                    serde_json::to_value(task.status()).unwrap_or_default()
                ),
                None,
            ));
        }
        self.tasks.cancel(task_id)?;
        let deadline = tokio::time::Instant::now() + CANCEL_WAIT;
        loop {
            let task = self.tasks.get(task_id)?;
            if task.status().is_terminal() || tokio::time::Instant::now() >= deadline {
                return Ok(task.task);
            }
            tokio::time::sleep(LOOK_AGAIN).await;
        }
    }

    /// `tasks/result`: waits for the task to end and answers with its
    /// result, or the error its call would have been answered with. While it
    /// waits for a person, this request asks them (the questions carry the
    /// task's id) and hands the answers to the task.
    async fn task_result(
        &self,
        task_id: &str,
        cx: &RequestContext<RoleServer>,
    ) -> Result<Value, McpError> {
        loop {
            let task = self.tasks.get(task_id)?;
            match task.payload {
                TaskPayload::Completed { result } => return Ok(related(result, task_id)),
                TaskPayload::Failed { error } => {
                    return Err(serde_json::from_value(Value::Object(error)).unwrap_or_else(
                        |_| McpError::internal_error(format!("task {task_id} failed"), None),
                    ));
                }
                TaskPayload::Cancelled => {
                    return Err(McpError::invalid_params(
                        format!("task {task_id} was cancelled; it has no result"),
                        None,
                    ));
                }
                TaskPayload::InputRequired { input_requests } => {
                    if cx.peer.supported_elicitation_modes().is_empty() {
                        return Err(McpError::invalid_request(
                            format!(
                                "task {task_id} waits for a person, and this client cannot show \
                                 them a form (elicitation); ask for its result from one that can"
                            ),
                            None,
                        ));
                    }
                    for (key, asked) in input_requests {
                        let Some(reply) = ask(cx, task_id, asked).await else {
                            return Err(McpError::internal_error(
                                format!(
                                    "toolwarden: the person was not reached about task \
                                     {task_id}; it still waits for them: ask for its result \
                                     again"
                                ),
                                None,
                            ));
                        };
                        self.tasks.update(task_id, [(key, reply)])?;
                    }
                }
                TaskPayload::Working => {
                    tokio::select! {
                        () = tokio::time::sleep(LOOK_AGAIN) => {}
                        () = cx.ct.cancelled() => {
                            return Err(McpError::invalid_request("tasks/result was cancelled", None));
                        }
                    }
                }
                _ => tokio::time::sleep(LOOK_AGAIN).await,
            }
        }
    }
}

fn params_of<P: serde::de::DeserializeOwned>(request: &CustomRequest) -> Result<P, McpError> {
    request
        .params_as::<P>()
        .map_err(|e| McpError::invalid_params(format!("{}: {e}", request.method), None))?
        .ok_or_else(|| {
            McpError::invalid_params(format!("{}: params are required", request.method), None)
        })
}

fn task_id_of(request: &CustomRequest) -> Result<String, McpError> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Params {
        task_id: String,
    }
    params_of::<Params>(request).map(|p| p.task_id)
}

/// A task as the 2025-11-25 revision shows it.
fn task_json(task: &Task) -> Value {
    let mut shown = json!({
        "taskId": task.task_id,
        "status": task.status,
        "createdAt": task.created_at,
        "lastUpdatedAt": task.last_updated_at,
        "ttl": task.ttl_ms,
    });
    if let Some(every) = task.poll_interval_ms {
        shown["pollInterval"] = json!(every);
    }
    if let Some(message) = &task.status_message {
        shown["statusMessage"] = json!(message);
    }
    shown
}

/// Asks the person behind `cx` one question of task `task_id`; what they
/// did, as the task takes it, or `None` if they were not reached (the
/// client failed or went away, or did not answer in time): that decides
/// nothing, and the task goes on waiting. A kind of question this host
/// never asks is answered as cancelled.
async fn ask(cx: &RequestContext<RoleServer>, task_id: &str, asked: InputRequest) -> Option<Value> {
    let InputRequest::Elicitation(elicit) = asked else {
        return Some(json!({ "action": "cancel" }));
    };
    let mut params = elicit.params;
    if let ElicitRequestParams::FormElicitationParams { meta, .. } = &mut params {
        meta.get_or_insert_with(Default::default)
            .0
            .insert(RELATED_TASK.to_owned(), json!({ "taskId": task_id }));
    }
    match tokio::time::timeout(ELICITATION_TIMEOUT, cx.peer.create_elicitation(params)).await {
        Ok(Ok(reply)) => serde_json::to_value(reply).ok(),
        Ok(Err(e)) => {
            tracing::warn!("asking the person for task {task_id} failed: {e}");
            None
        }
        Err(_) => None,
    }
}

/// A finished task's result as the revision has it: the call's result in
/// its legacy shape, tied to its task.
fn related(result: serde_json::Map<String, Value>, task_id: &str) -> Value {
    let stored = Value::Object(result);
    let mut result = match CallToolResult::deserialize(&stored) {
        Ok(typed) => {
            let mut typed = ServerResult::CallToolResult(typed);
            typed.strip_result_type_for_legacy_peer();
            typed.strip_non_object_output_for_legacy_peer();
            serde_json::to_value(typed).unwrap_or(stored)
        }
        Err(_) => stored,
    };
    if !result["_meta"].is_object() {
        result["_meta"] = json!({});
    }
    result["_meta"][RELATED_TASK] = json!({ "taskId": task_id });
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_finished_tasks_result_is_tied_to_it_in_the_legacy_shape() {
        let stored = json!({
            "resultType": "complete",
            "content": [{"type": "text", "text": "done"}],
            "isError": false,
            "_meta": {"toolwarden": {"status": "ok"}},
        });
        let Value::Object(stored) = stored else {
            unreachable!()
        };
        let shown = related(stored, "t-1");
        assert!(shown.get("resultType").is_none(), "{shown}");
        assert_eq!(shown["_meta"][RELATED_TASK]["taskId"], "t-1");
        assert_eq!(shown["_meta"]["toolwarden"]["status"], "ok");
        assert_eq!(shown["content"][0]["text"], "done");
    }
}
