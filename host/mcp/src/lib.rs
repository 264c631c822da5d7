//! # `toolwarden-mcp` (host/mcp)
//!
//! Owns the MCP protocol: the only crate that names rmcp. Depends on the
//! pipeline library (`toolwarden`, through its controller) and on
//! `toolwarden-web` for browser origins; never decides a call itself, and
//! never writes to stdout except through its transport.
//!
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
//! the same connection, runs once. A tool's question (`ask`) is asked the
//! same ways (see `questions`). A plugin's `progress` becomes
//! `notifications/progress`, and its `log` lines `notifications/message`
//! for a client that set a log level (see `reports`);
//! `notifications/cancelled` stops the call. For
//! clients that declared the tasks extension, a call that outlasts a moment
//! goes on as a task (see `tasks`); a 2025-11-25 client may ask for one
//! (see `task_requests`).
//!
//! One connection is one session, unless a request names its own
//! ([`SESSION_META`]): budgets, duplicate detection and approvals are bound
//! to it. Only this module names `rmcp`.

#![deny(clippy::print_stdout, clippy::print_stderr)]

mod approvals;
mod convert;
mod http;
mod input;
mod prompts;
mod questions;
mod reports;
mod requests;
mod resources;
mod roots;
mod running;
mod session_owners;
mod shared_tasks;
mod stdio;
mod subscriptions;
mod task_requests;
mod tasks;
mod transport;
mod watch;

// The library's modules, by the names this code knew them under when it
// was one crate with them.
use toolwarden::{
    approval, call, config, content, controller, outcome, presentation, prompt, question, sampling,
    spec, store,
};
use toolwarden_web as web_origin;

use reports::{log_forwarder, progress_forwarder};

pub use http::{Exposure, HttpOptions};
pub use requests::{PROFILE_META, SESSION_META};
pub use roots::Refusal;
pub use stdio::{HostFrom, Stopped, refuse as refuse_stdio, serve as serve_stdio};

/// A tool as MCP `tools/list` shows it, as JSON (for `toolwarden schemas`).
pub fn tool_json(spec: &crate::spec::ToolSpec) -> serde_json::Value {
    serde_json::to_value(convert::tool(spec)).unwrap_or_default()
}

use crate::call::SessionId;
use crate::controller::Controller;
use crate::outcome::ErrorCode;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, CompleteRequestParams,
    CompleteResult, CustomRequest, CustomResult, GetPromptRequestParams, GetPromptResponse,
    GetTaskParams, GetTaskResult, Implementation, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, ProtocolVersion,
    ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities, ServerConfig,
    SubscribeRequestParams, SubscriptionFilter, Tool, UnsubscribeRequestParams, UpdateTaskParams,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use std::sync::Arc;
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
    tasks: tasks::Tasks,
    /// Where calls that do not finish in their first poll go on.
    calls: Handle,
    /// Told when such a call finishes, on a stdio connection (whose thread
    /// may be watching stdin rather than asleep).
    waiting: Option<Arc<stdio::Waiting>>,
    /// The profile the operator gave the server (`serve --profile`); when
    /// set, what a request declares in `_meta` does not count.
    profile: Option<Arc<str>>,
    /// The log level the session's client set (`logging/setLevel`).
    log_level: reports::SessionLevel,
    /// The resources the session subscribed to (`resources/subscribe`).
    subscribed: Arc<watch::Subscribed>,
}

impl Server {
    /// A stdio connection whose long calls go on on the runtime `calls`
    /// and, when they finish, tell `waiting`.
    fn over_stdio(
        host: Arc<Controller>,
        calls: Handle,
        waiting: Arc<stdio::Waiting>,
        profile: Option<Arc<str>>,
    ) -> Server {
        let tasks = tasks::Tasks::new(host.config().mcp_tasks().clone(), host.records().store());
        let states = input::RequestStates::for_store(host.records().store());
        Server {
            waiting: Some(waiting),
            ..Server::with_peers(host, watch::Peers::default(), states, tasks, calls, profile)
        }
    }

    /// A connection that shares its list of peers to notify with others.
    fn with_peers(
        host: Arc<Controller>,
        peers: watch::Peers,
        states: input::RequestStates,
        tasks: tasks::Tasks,
        calls: Handle,
        profile: Option<Arc<str>>,
    ) -> Server {
        Server {
            host,
            session: SessionId::new(),
            peers,
            states,
            tasks,
            calls,
            waiting: None,
            profile,
            log_level: reports::SessionLevel::default(),
            subscribed: Arc::default(),
        }
    }

    /// Serves MCP over Streamable HTTP until the process stops; `listening`
    /// hears the bound address once requests can come in.
    pub async fn serve_http(
        host: Arc<Controller>,
        options: HttpOptions,
        beside: axum::Router,
        listening: impl FnOnce(std::net::SocketAddr) + Send,
    ) -> Result<(), String> {
        http::serve(host, options, beside, listening).await
    }

    /// Serves this connection on `transport` (stdin/stdout) until the
    /// client goes away.
    async fn serve_stdio<T>(self, transport: T) -> Result<(), String>
    where
        T: rmcp::transport::Transport<RoleServer> + Send + 'static,
    {
        let watcher = tokio::spawn(watch::watch(Arc::clone(&self.host), self.peers.clone()));
        let running = self
            .serve(task_requests::Dialect::new(transport))
            .await
            .map_err(|e| e.to_string())?;
        // SIGTERM (how a client stops a server that does not go when its
        // stdin closes) or Ctrl-C ends the connection as a closed stdin
        // does: the calls in flight are cancelled and recorded, and the
        // host is dropped in order, so its audit writer commits what is
        // queued (the signal's default action would lose the last batch).
        let stop = running.cancellation_token();
        let signals = tokio::spawn(async move {
            if http::stop_requested().await.is_ok() {
                stop.cancel();
            }
        });
        let ended = running.waiting().await.map_err(|e| e.to_string());
        signals.abort();
        watcher.abort();
        ended.map(drop)
    }

    fn tools(&self, profile: Option<&str>) -> Vec<Tool> {
        self.host
            .offered_tools(profile, |tool| convert::tool(tool.spec()))
    }
}

/// What the server tells a client in its `initialize` answer.
#[allow(deprecated)] // logging: see `reports`
fn server_info() -> ServerConfig {
    ServerConfig::new(
        ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_tasks()
            .enable_logging()
            .enable_prompts()
            .enable_resources()
            .enable_resources_subscribe()
            .enable_completions()
            .build(),
    )
    .with_server_info(Implementation::new("toolwarden", env!("CARGO_PKG_VERSION")))
    .with_instructions(
        "Tools run in a sandbox under a policy. An error result starts with its code \
             (e.g. POLICY_DENIED, INVALID_ARGS) and says what you may do next.",
    )
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        server_info()
    }

    async fn on_initialized(&self, cx: NotificationContext<RoleServer>) {
        self.peers.add_legacy(cx.peer);
    }

    /// A 2026-07-28 `subscriptions/listen` stream (see `subscriptions`).
    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(subscriptions::accepted(requested))
    }

    async fn listen(&self, subscription: SubscriptionContext) -> Result<(), McpError> {
        self.serve_subscription(subscription).await
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        cx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let profile = self.profile(&cx.meta);
        Ok(ListToolsResult::with_all_items(
            self.tools(profile.as_deref()),
        ))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.host
            .registry()
            .get(name)
            .map(|tool| convert::tool(tool.spec()))
    }

    async fn call_tool(
        &self,
        mut params: CallToolRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let mut request = self.call_request(&mut params, &cx)?;
        self.refuse_untasked(&request.tool, &cx)?;
        let modern = cx
            .protocol_version()
            .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28);
        if modern && let Some(refusal) = self.take_up(&params, &mut request)? {
            return Ok(convert::result(*refusal).into());
        }
        let (progress, forwarder) = progress_forwarder(&cx).unzip();
        request.progress = progress;
        let (log, log_forwarder) = log_forwarder(&cx, &self.log_level).unzip();
        request.log = log;
        // Boxed like the elicitation below, and only for clients that
        // declared the extension: the wait for a task is rare and its
        // future large, and every other call skips the allocation.
        let begun = if tasks::declared_tasks(&cx) {
            Box::pin(self.begin(request.clone(), &cx)).await?
        } else {
            tasks::Begun::Usual
        };
        let mut result = match begun {
            // The call goes on in its task; its progress forwarder, if any,
            // ends with it.
            tasks::Begun::Task(created) => return Ok(created),
            tasks::Begun::Ended(result) => *result,
            tasks::Begun::Usual => self.run(request.clone(), &cx).await,
        };
        let mut asked = None;
        if modern {
            match result.code() {
                Some(ErrorCode::ApprovalRequired) => {
                    if let Some(id) = result.approval_id.clone() {
                        asked = self.ask_to_retry(&cx, id, &request);
                    }
                }
                Some(ErrorCode::InputRequired) => {
                    asked = self.hand_question(&cx, &request, &result)?;
                }
                _ => {}
            }
        } else if tasks::stops_for_a_person(&result) && questions::can_answer(&cx, &result) {
            // Boxed: inline, this rare wait (kilobytes of future) would make
            // every call's future that much larger, and rmcp moves a
            // request's future when it spawns it.
            result = Box::pin(self.ask_the_person(&cx, &mut request, result)).await;
        }
        drop(request);
        for forwarder in [forwarder, log_forwarder].into_iter().flatten() {
            let _ = forwarder.await;
        }
        Ok(asked.unwrap_or_else(|| convert::result(result).into()))
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        cx: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        Ok(ListPromptsResult::with_all_items(self.prompts(&cx)))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        self.get_prompt_for(request, &cx).await
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, McpError> {
        self.complete_for(request, &cx).await
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        cx: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        Ok(ListResourcesResult::with_all_items(self.resources(&cx)))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        cx: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        Ok(ListResourceTemplatesResult::with_all_items(
            self.templates(&cx),
        ))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        self.read_for(request, &cx).await.map(Into::into)
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.subscribe_to(request.uri, &cx)
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _cx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.subscribed.remove(&request.uri);
        Ok(())
    }

    /// Which of its plugins' log lines this session's client gets.
    #[allow(deprecated)]
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        _cx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.log_level.set(request.level);
        Ok(())
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        cx: RequestContext<RoleServer>,
    ) -> Result<CustomResult, McpError> {
        self.answer_task_request(request, cx).await
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        _cx: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        self.tasks.get(&request.task_id).map(GetTaskResult::new)
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        _cx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.tasks.update(&request.task_id, request.input_responses)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        _cx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.tasks.cancel(&request.task_id)
    }
}
