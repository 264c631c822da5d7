//! The MCP server: every governed tool, available to MCP clients.
//!
//! `tools/list` comes from the registry, with annotations derived from each
//! tool's declared effects; tools the policy denies outright are left out
//! unless `[mcp] list_denied = true`. `tools/call` goes through the
//! controller like every other call; this module only translates. A call the
//! policy asks about becomes a form elicitation for clients that declared
//! that capability (accept runs it once through the approval book, decline
//! or cancel denies it); other clients get `APPROVAL_REQUIRED` with the
//! approval's id, and once a person approves it the same call, repeated on
//! the same connection, runs once. A plugin's `progress` becomes
//! `notifications/progress`; `notifications/cancelled` stops the call.
//!
//! One connection is one session: budgets, duplicate detection and
//! approvals are bound to it. Only this module names `rmcp`.

mod convert;
mod http;
mod input;
mod stdio;
mod transport;
mod watch;

pub use http::{Exposure, HttpOptions};
pub use stdio::serve as serve_stdio;

/// A tool as MCP `tools/list` shows it, as JSON (for `toolwarden schemas`).
pub fn tool_json(spec: &crate::spec::ToolSpec) -> serde_json::Value {
    serde_json::to_value(convert::tool(spec)).unwrap_or_default()
}

use crate::approval::ApprovalDecision;
use crate::call::{CallRequest, Progress, ProgressSink, RawArgs, SessionId};
use crate::controller::Controller;
use crate::outcome::{CallResult, ErrorCode};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ElicitRequest, ElicitRequestParams, Implementation,
    InputRequest, InputRequiredResult, ListToolsResult, PaginatedRequestParams,
    ProgressNotificationParam, ProtocolVersion, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{NotificationContext, Peer, RequestContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use std::future::Future;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;
use tokio::runtime::Handle;

/// How long a person has to answer an approval elicitation; no answer means
/// nothing runs (the approval stays pending for `toolwarden approvals`).
pub const ELICITATION_TIMEOUT: Duration = Duration::from_secs(300);

/// One MCP connection.
#[derive(Clone)]
pub struct Server {
    host: Arc<Controller>,
    session: SessionId,
    peers: watch::Peers,
    states: input::RequestStates,
    /// Where calls that do not finish in their first poll go on.
    calls: Handle,
    /// Told when such a call finishes, on a stdio connection (whose thread
    /// may be watching stdin rather than asleep).
    waiting: Option<Arc<stdio::Waiting>>,
}

impl Server {
    /// A stdio connection whose long calls go on on the runtime `calls`
    /// and, when they finish, tell `waiting`.
    fn over_stdio(host: Arc<Controller>, calls: Handle, waiting: Arc<stdio::Waiting>) -> Server {
        Server {
            waiting: Some(waiting),
            ..Server::with_peers(
                host,
                watch::Peers::default(),
                input::RequestStates::default(),
                calls,
            )
        }
    }

    /// A connection that shares its list of peers to notify with others.
    fn with_peers(
        host: Arc<Controller>,
        peers: watch::Peers,
        states: input::RequestStates,
        calls: Handle,
    ) -> Server {
        Server {
            host,
            session: SessionId::new(),
            peers,
            states,
            calls,
            waiting: None,
        }
    }

    /// Serves MCP over Streamable HTTP until the process stops.
    pub async fn serve_http(host: Arc<Controller>, options: HttpOptions) -> Result<(), String> {
        http::serve(host, options).await
    }

    /// Serves this connection on stdin/stdout until the client goes away.
    async fn serve_stdio(self) -> Result<(), String> {
        let watcher = tokio::spawn(watch::watch(
            Arc::clone(&self.host),
            Arc::clone(&self.peers),
        ));
        let running = match stdio::pipes() {
            Some((read, write)) => self.serve(transport::Stdio::new(read, write)).await,
            None => {
                self.serve(transport::Stdio::new(
                    tokio::io::stdin(),
                    tokio::io::stdout(),
                ))
                .await
            }
        }
        .map_err(|e| e.to_string())?;
        let ended = running.waiting().await.map_err(|e| e.to_string());
        watcher.abort();
        ended.map(drop)
    }

    fn tools(&self) -> Vec<Tool> {
        self.host.offered_tools(|tool| convert::tool(&tool.spec))
    }

    /// What a person is shown to decide on approval `id`.
    fn approval_question(&self, id: &str) -> Option<ElicitRequestParams> {
        let approval = self.host.records().approval(id).ok()??;
        input::approval_form(format!(
            "toolwarden: approve this one call?\n\ntool: {}\narguments: {}\ncapability: filesystem {}\nwhy the policy asks: {}",
            approval.tool, approval.args, approval.capability, approval.reason
        ))
    }

    /// Records a person's answer to approval `id`; `false` if it could not be.
    fn record_answer(&self, id: &str, decision: ApprovalDecision) -> bool {
        let reason = match decision {
            ApprovalDecision::Approve => "approved by the user of the MCP client",
            ApprovalDecision::Deny => "declined by the user of the MCP client",
        };
        match self.host.records().decide(id, decision, Some(reason)) {
            Ok(Some(_)) => true,
            Ok(None) => false,
            Err(e) => {
                tracing::error!("cannot record the answer to approval {id}: {e}");
                false
            }
        }
    }

    /// Asks the person behind a legacy client about a pending approval,
    /// mid-call, and records the answer. `false` when there was no answer.
    async fn elicit(&self, peer: &Peer<RoleServer>, id: &str) -> bool {
        let Some(params) = self.approval_question(id) else {
            return false;
        };
        let answer = match tokio::time::timeout(
            ELICITATION_TIMEOUT,
            peer.create_elicitation(params),
        )
        .await
        {
            Ok(Ok(answer)) => answer,
            Ok(Err(e)) => {
                tracing::warn!("elicitation for approval {id} failed: {e}");
                return false;
            }
            Err(_) => return false,
        };
        self.record_answer(id, input::decision(&answer.action, answer.content.as_ref()))
    }

    /// For a 2026-07-28 client that can show a form: an `input_required`
    /// result asking about approval `id`, with a single-use request state.
    /// `None` when the client cannot be asked.
    fn ask_to_retry(
        &self,
        cx: &RequestContext<RoleServer>,
        id: String,
        request: &CallRequest,
    ) -> Option<CallToolResponse> {
        cx.client_capabilities()?.elicitation.as_ref()?;
        let question = self.approval_question(&id)?;
        let state = self.states.issue(input::Pending {
            approval_id: id,
            session: request.session.clone(),
            tool: request.tool.clone(),
        });
        let requests = [(
            input::APPROVAL_INPUT.to_owned(),
            InputRequest::Elicitation(ElicitRequest::new(question)),
        )]
        .into();
        Some(CallToolResponse::InputRequired(InputRequiredResult::new(
            Some(requests),
            Some(state),
        )))
    }

    /// A 2026-07-28 client's retry with the person's answer: redeems the
    /// request state (once), records the answer, and makes `request` carry
    /// the approval and the session that asked. `Err` is the refusal to
    /// return; nothing runs then.
    fn resume(
        &self,
        state: &str,
        params: &CallToolRequestParams,
        request: &mut CallRequest,
    ) -> Result<(), Box<CallResult>> {
        let refuse = |message: &str| {
            let error = crate::outcome::CallError::new(ErrorCode::ApprovalInvalid, message);
            Err(Box::new(self.host.refuse(request.clone(), error)))
        };
        let Some(pending) = self.states.redeem(state) else {
            return refuse(
                "the request state is unknown, expired or already used; call the tool again to be asked again",
            );
        };
        if pending.tool != params.name {
            return refuse("the request state belongs to a call of another tool; nothing ran");
        }
        let answer = params
            .input_responses
            .as_ref()
            .and_then(|r| r.get(input::APPROVAL_INPUT))
            .and_then(|v| serde_json::from_value::<rmcp::model::ElicitResult>(v.clone()).ok());
        if let Some(answer) = &answer {
            let decision = input::decision(&answer.action, answer.content.as_ref());
            self.record_answer(&pending.approval_id, decision);
        }
        request.session = pending.session;
        request.approval = Some(pending.approval_id);
        Ok(())
    }

    /// Runs the call: here, if it finishes in its first poll (most do: the
    /// governed path and a short plugin call never wait), else on a task of
    /// its own on the calls' runtime, so that it always finishes (and is
    /// recorded) even if the transport drops this future; dropping it, or
    /// the client's cancellation, cancels the call.
    async fn run(&self, request: CallRequest, cx: &RequestContext<RoleServer>) -> CallResult {
        /// Cancels the call unless disarmed once the call has ended (the
        /// token is shared with retries of the same request).
        struct CancelOnDrop(Option<crate::call::CancelToken>);
        impl Drop for CancelOnDrop {
            fn drop(&mut self) {
                if let Some(token) = self.0.take() {
                    token.cancel();
                }
            }
        }
        let cancel = request.cancel.clone();
        let (tool, call_id) = (request.tool.clone(), request.call_id.clone());
        let host = Arc::clone(&self.host);
        let mut call = match self.start(async move { host.handle(request).await }) {
            Started::Finished(result) => return result,
            Started::Elsewhere(task) => task,
        };
        let mut stop_if_abandoned = CancelOnDrop(Some(cancel.clone()));
        let finished = tokio::select! {
            result = &mut call => result,
            _ = cx.ct.cancelled() => {
                cancel.cancel();
                call.await
            }
        };
        stop_if_abandoned.0 = None;
        finished.unwrap_or_else(|e| {
            let error = crate::outcome::CallError::new(
                ErrorCode::HostError,
                format!("the call's task failed: {e}"),
            );
            let mut request = CallRequest::new(tool, "{}");
            request.call_id = call_id;
            self.host.refuse(request, error)
        })
    }
}

/// Where a call stands once started.
#[expect(
    clippy::large_enum_variant,
    reason = "lives on the stack for one match; boxing the result would cost an allocation per call"
)]
enum Started {
    Finished(CallResult),
    Elsewhere(tokio::task::JoinHandle<CallResult>),
}

impl Server {
    /// Polls `call` once here; if it must wait, it goes on on the calls'
    /// runtime. The box keeps the future where its first poll left it
    /// (registered as a waiter, a timer armed) while it changes threads;
    /// the task's first poll replaces the no-op waker, and wakers work
    /// across runtimes.
    fn start(&self, call: impl Future<Output = CallResult> + Send + 'static) -> Started {
        let mut call = Box::pin(call);
        let waker = std::task::Waker::noop();
        match call
            .as_mut()
            .poll(&mut std::task::Context::from_waker(waker))
        {
            Poll::Ready(result) => Started::Finished(result),
            Poll::Pending => {
                let waiting = self.waiting.clone();
                Started::Elsewhere(self.calls.spawn(async move {
                    let result = call.await;
                    if let Some(waiting) = waiting {
                        waiting.answer_ready();
                    }
                    result
                }))
            }
        }
    }
}

/// Progress notifications waiting for one slow client, per call.
const PROGRESS_QUEUE: usize = 64;

/// Forwards a call's progress reports to the client, in order. The caller
/// awaits the returned task after the call, so every notification is sent
/// before the response (a client drops progress for a finished request).
fn progress_forwarder(
    cx: &RequestContext<RoleServer>,
) -> Option<(ProgressSink, tokio::task::JoinHandle<()>)> {
    let token = cx.meta.get_progress_token()?;
    let peer = cx.peer.clone();
    // Bounded: the sandbox already lets through at most a report every
    // few milliseconds, and a client that reads slower than that loses
    // reports rather than holding the call's answer (or the host's memory).
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Progress>(PROGRESS_QUEUE);
    let forwarder = tokio::spawn(async move {
        while let Some(p) = rx.recv().await {
            let mut param = ProgressNotificationParam::new(token.clone(), p.done as f64);
            if let Some(total) = p.total {
                param = param.with_total(total as f64);
            }
            if let Some(message) = p.message {
                param = param.with_message(message);
            }
            if let Err(e) = peer.notify_progress(param).await {
                tracing::debug!("cannot send a progress notification: {e}");
            }
        }
    });
    let sink = ProgressSink::new(move |p| {
        // Full: the client is behind, and this report is dropped.
        let _ = tx.try_send(p);
    });
    Some((sink, forwarder))
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
        .with_server_info(Implementation::new("toolwarden", env!("CARGO_PKG_VERSION")))
        .with_instructions(
            "Tools run in a sandbox under a policy. An error result starts with its code \
                 (e.g. POLICY_DENIED, INVALID_ARGS) and says what you may do next.",
        )
    }

    async fn on_initialized(&self, cx: NotificationContext<RoleServer>) {
        self.peers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(cx.peer);
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _cx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(self.tools()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.host
            .registry()
            .get(name)
            .map(|tool| convert::tool(&tool.spec))
    }

    async fn call_tool(
        &self,
        mut params: CallToolRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        // The SDK parsed the arguments with the request: they go on as an
        // object, written out once, as the canonical form.
        let args = params
            .arguments
            .take()
            .map_or(RawArgs::Text(String::new()), RawArgs::from);
        let mut request =
            CallRequest::new(params.name.to_string(), args).in_session(self.session.clone());
        let modern = cx
            .protocol_version()
            .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28);
        if modern
            && let Some(state) = params.request_state.as_deref()
            && let Err(refusal) = self.resume(state, &params, &mut request)
        {
            return Ok(convert::result(*refusal).into());
        }
        let (progress, forwarder) = progress_forwarder(&cx).unzip();
        request.progress = progress;
        let mut result = self.run(request.clone(), &cx).await;
        let pending = (result.code() == Some(ErrorCode::ApprovalRequired))
            .then(|| result.approval_id.clone())
            .flatten();
        let mut asked = None;
        if let Some(id) = pending {
            if modern {
                asked = self.ask_to_retry(&cx, id, &request);
            } else if !cx.peer.supported_elicitation_modes().is_empty()
                // Boxed: inline, this rare wait (2.5 KB of future) would
                // make every call's future that much larger, and rmcp moves
                // a request's future when it spawns it.
                && Box::pin(self.elicit(&cx.peer, &id)).await
            {
                request.call_id = crate::call::CallId::new();
                request.approval = Some(id);
                result = self.run(request.clone(), &cx).await;
            }
        }
        drop(request);
        if let Some(forwarder) = forwarder {
            let _ = forwarder.await;
        }
        Ok(asked.unwrap_or_else(|| convert::result(result).into()))
    }
}
