//! Task-augmented requests of the 2025-11-25 revision, for the clients that
//! speak it (the official TypeScript SDK's `callToolStream` among them): a
//! `tools/call` carrying `"task": {"ttl": ms}` is answered at once with a
//! task; `tasks/get` polls it, `tasks/result` waits for its result (and,
//! while it waits, asks the person what the call stops for, as elicitations
//! tied to the task), `tasks/list` lists the tasks the session started, and
//! `tasks/cancel` stops one. Every tool is offered with
//! `execution.taskSupport`: `required` for the tools in `[mcp] task_only`
//! (called without a task they are refused, -32601), `optional` for the rest.
//!
//! The tasks are the extension's (see `tasks`): the same manager, limits,
//! TTLs and governed runs; this module only speaks the older dialect. rmcp
//! models only the extension, so the work is done around it: the
//! transports mark a request's `task` field (rmcp's typed params drop it)
//! with [`TaskRequested`] in the request's extensions, where no client can
//! forge it, and [`Dialect`] wraps each session's transport, declaring the
//! revision's `tasks` capability and handing its task requests to the
//! server as custom requests, answered in the revision's shapes. Which
//! dialect a request gets depends only on the version its session
//! negotiated. This file marks and carries the requests; `answers` answers
//! them. This module never decides whether a call may run.

use rmcp::RoleServer;
use rmcp::model::{
    ClientJsonRpcMessage, ClientRequest, CustomRequest, CustomResult, Extensions, GetExtensions,
    JsonRpcMessage, ProtocolVersion, RequestMetaObject, ServerJsonRpcMessage, ServerResult,
};
use rmcp::transport::Transport;
use serde::Deserialize;
use serde_json::{Value, json};
use std::future::Future;

mod answers;

/// A `tools/call`'s `task` field, as the transport found it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum TaskRequested {
    /// `{"ttl": ms}`, the TTL optional.
    Task { ttl_ms: Option<u64> },
    /// Not an object whose `ttl`, if any, is a whole number of milliseconds.
    Malformed,
}

/// The `task` field of a `tools/call` message, if it has one. Every other
/// message costs a substring search: only one holding `"task"` is parsed
/// again. (A key spelled with escapes is not seen, and that call simply
/// runs as a plain call.)
pub(super) fn peek(message: &[u8]) -> Option<TaskRequested> {
    #[derive(Deserialize)]
    struct Message {
        method: Option<String>,
        params: Option<Params>,
    }
    #[derive(Deserialize)]
    struct Params {
        task: Option<Value>,
    }
    memchr::memmem::find(message, b"\"task\"")?;
    let message: Message = serde_json::from_slice(message).ok()?;
    if message.method.as_deref() != Some("tools/call") {
        return None;
    }
    let requested = match message.params?.task? {
        Value::Object(task) => match task.get("ttl") {
            None | Some(Value::Null) => TaskRequested::Task { ttl_ms: None },
            Some(ttl) => ttl
                .as_u64()
                .map_or(TaskRequested::Malformed, |ttl| TaskRequested::Task {
                    ttl_ms: Some(ttl),
                }),
        },
        _ => TaskRequested::Malformed,
    };
    Some(requested)
}

/// Marks `request` with what [`peek`] found in the message it came in.
pub(super) fn mark(request: &mut ClientRequest, requested: TaskRequested) {
    if let ClientRequest::CallToolRequest(call) = request {
        call.extensions.insert(requested);
    }
}

/// What the transport marked a request with: over stdio on the request
/// itself, over HTTP on the HTTP request rmcp hands on with it.
fn requested(extensions: &Extensions) -> Option<TaskRequested> {
    extensions.get::<TaskRequested>().copied().or_else(|| {
        extensions
            .get::<axum::http::request::Parts>()?
            .extensions
            .get::<TaskRequested>()
            .copied()
    })
}

/// Adds the 2025-11-25 `tasks` capability to an `initialize` answer that
/// agreed on that revision (rmcp's typed capabilities cannot hold it);
/// `true` if it did.
fn declare_capability(message: &mut ServerJsonRpcMessage) -> bool {
    let JsonRpcMessage::Response(response) = message else {
        return false;
    };
    let ServerResult::InitializeResult(initialized) = &response.result else {
        return false;
    };
    if initialized.protocol_version != ProtocolVersion::V_2025_11_25 {
        return false;
    }
    let Ok(mut answer) = serde_json::to_value(initialized) else {
        return false;
    };
    answer["capabilities"]["tasks"] = json!({
        "list": {},
        "cancel": {},
        "requests": {"tools": {"call": {}}},
    });
    response.result = ServerResult::CustomResult(CustomResult(answer));
    true
}

/// A connection's transport, as a 2025-11-25 session needs it: its
/// `initialize` answer declares the revision's tasks, and its task requests
/// reach the server as the custom requests they are in rmcp's model, where
/// [`Server::answer_task_request`] answers them. rmcp would otherwise take
/// `tasks/get` and `tasks/cancel` for the extension's (refusing a client
/// that did not declare it), a `tools/call` with a task for a plain call,
/// and would list tools without their `execution`.
pub(super) struct Dialect<T> {
    inner: T,
    /// The session agreed on 2025-11-25 (seen in its `initialize` answer).
    speaks_2025_11_25: bool,
}

impl<T> Dialect<T> {
    pub(super) fn new(inner: T) -> Dialect<T> {
        Dialect {
            inner,
            speaks_2025_11_25: false,
        }
    }
}

impl<T: Transport<RoleServer>> Transport<RoleServer> for Dialect<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        mut item: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), T::Error>> + Send + 'static {
        if declare_capability(&mut item) {
            self.speaks_2025_11_25 = true;
        }
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        let mut message = self.inner.receive().await?;
        if self.speaks_2025_11_25
            && let JsonRpcMessage::Request(request) = &mut message
        {
            as_custom(&mut request.request);
        }
        Some(message)
    }

    async fn close(&mut self) -> Result<(), T::Error> {
        self.inner.close().await
    }
}

/// Turns the requests the revision defines differently from rmcp into
/// custom requests of the same method, params and `_meta`.
fn as_custom(request: &mut ClientRequest) {
    let ours = match request {
        ClientRequest::CallToolRequest(call) => requested(&call.extensions).is_some(),
        ClientRequest::ListToolsRequest(_)
        | ClientRequest::GetTaskRequest(_)
        | ClientRequest::CancelTaskRequest(_) => true,
        _ => false,
    };
    if !ours {
        return;
    }
    let Ok(Value::Object(mut wire)) = serde_json::to_value(&*request) else {
        return;
    };
    let Some(Value::String(method)) = wire.remove("method") else {
        return;
    };
    let params = wire.remove("params");
    let meta = params
        .as_ref()
        .and_then(|p| p.get("_meta"))
        .and_then(|m| RequestMetaObject::deserialize(m).ok());
    let mut custom = CustomRequest::new(method, params);
    custom.extensions = std::mem::take(request.extensions_mut());
    if let Some(meta) = meta {
        custom.extensions.insert(meta);
    }
    *request = ClientRequest::CustomRequest(custom);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_tools_calls_task_is_seen() {
        let task = |line: &str| peek(line.as_bytes());
        assert_eq!(
            task(
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","task":{"ttl":60000}}}"#
            ),
            Some(TaskRequested::Task {
                ttl_ms: Some(60000)
            })
        );
        assert_eq!(
            task(r#"{"id":1,"method":"tools/call","params":{"task":{},"name":"a"}}"#),
            Some(TaskRequested::Task { ttl_ms: None })
        );
        for malformed in [r#""soon""#, r#"{"ttl":-1}"#, r#"{"ttl":1.5}"#, "[]"] {
            let line =
                format!(r#"{{"method":"tools/call","params":{{"name":"a","task":{malformed}}}}}"#);
            assert_eq!(task(&line), Some(TaskRequested::Malformed), "{line}");
        }
        for plain in [
            r#"{"method":"tools/call","params":{"name":"task","arguments":{"task":1}}}"#,
            r#"{"method":"tools/call","params":{"name":"a","task":null}}"#,
            r#"{"method":"tasks/get","params":{"taskId":"x","task":{}}}"#,
            r#"{"method":"tools/call","params":{"name":"a"}}"#,
            r#"{"method":"tools/call","params":{"name":"a","task":{}"#,
        ] {
            assert_eq!(task(plain), None, "{plain}");
        }
    }
}
