//! MCP over Streamable HTTP at `/mcp`.
//!
//! Each MCP session gets its own [`Server`] (one toolwarden session); the
//! plugin watcher and the list of peers to notify are shared. The `Host`
//! header must name an allowed host (rmcp checks it: a DNS-rebinding
//! defence), an `Origin` header an allowed origin (403 otherwise, as the
//! transport spec says; see [`crate::web_origin`]), and with a shared token
//! or an issuer (`[auth]`) configured every request needs
//! `Authorization: Bearer` with one of them (see `toolwarden_auth`; the
//! caller it proves rides on the request, and an MCP session stays its
//! opener's: see `session_owners`). Listening beyond loopback
//! without either is refused unless the operator says
//! `--insecure-no-auth`. Open
//! sessions are capped (`[mcp] max_sessions`: an `initialize` over the cap
//! gets 503 and opens nothing) and idle ones closed
//! (`session_idle_seconds`), so clients that never close cannot grow the
//! server without end. Two things are added around rmcp for 2025-11-25
//! clients' tasks (see `task_requests`): a request from such a session is
//! marked with its `task` field, and its `initialize` answer declares them.

use super::{Server, task_requests, watch};
use crate::controller::Controller;
use axum::extract::Request;
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::serve::ListenerExt;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::common::server_side_http::ServerSseMessage;
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError,
};
use rmcp::transport::streamable_http_server::session::store::EventStore;
use rmcp::transport::streamable_http_server::{SessionId, SessionManager};
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use std::future::IntoFuture;
use std::net::SocketAddr;
use std::sync::Arc;

/// Where and how to listen.
#[derive(Clone, Debug)]
pub struct HttpOptions {
    pub addr: SocketAddr,
    /// Required as `Authorization: Bearer` on every request, when set
    /// (or an access token `authority` accepts).
    pub token: Option<String>,
    /// The issuer whose access tokens are accepted (`[auth]`).
    pub authority: Option<Arc<toolwarden_auth::Authority>>,
    /// Accepted `Host` header values (besides loopback names).
    pub allowed_hosts: Vec<String>,
    /// Accepted `Origin` header values (a request without one is not a
    /// browser's and is not held to them).
    pub allowed_origins: Arc<crate::web_origin::AllowedOrigins>,
    /// Allows a non-loopback address without a token.
    pub exposure: Exposure,
    /// The profile every session runs under, whatever requests declare.
    pub profile: Option<Arc<str>>,
}

/// Whether listening beyond loopback without a token or issuer was asked for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Exposure {
    /// Refuse a non-loopback address unless a token is set.
    #[default]
    TokenRequired,
    /// The operator accepted an unauthenticated public listener.
    InsecureNoAuth,
}

impl HttpOptions {
    /// Why these options must not be served, if they must not.
    pub fn refusal(&self) -> Option<String> {
        let guarded = self.token.is_some() || self.authority.is_some();
        match (self.addr.ip().is_loopback(), guarded, self.exposure) {
            (false, false, Exposure::TokenRequired) => Some(format!(
                "refusing to serve MCP on `{}` without a token or an issuer: anyone who reaches it could call your tools",
                self.addr
            )),
            (true, _, _) | (false, true, _) | (false, false, Exposure::InsecureNoAuth) => None,
        }
    }
}

/// Refuses a request that would open a session once `max` are open. Only a
/// request without a session id can open one, and it is looked into (its
/// body read) only when the server is full, so calls pay nothing for it.
async fn refuse_over_cap(
    manager: Arc<LocalSessionManager>,
    max: usize,
    request: Request,
    next: Next,
) -> Response {
    if request.headers().contains_key("mcp-session-id")
        || request.method() != axum::http::Method::POST
        || manager.sessions.read().await.len() < max
    {
        return next.run(request).await;
    }
    let (parts, bytes) = match buffered(request).await {
        Ok(read) => read,
        Err(too_large) => return too_large,
    };
    let opens_a_session = serde_json::from_slice::<serde_json::Value>(&bytes)
        .is_ok_and(|message| message["method"] == "initialize");
    if opens_a_session {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            [(header::RETRY_AFTER, "5")],
            format!(
                "toolwarden: this server has {max} MCP sessions open, its limit \
                 (`[mcp] max_sessions`); close one (HTTP DELETE with its Mcp-Session-Id) or wait \
                 for idle ones to expire (`[mcp] session_idle_seconds`)\n"
            ),
        )
            .into_response();
    }
    next.run(Request::from_parts(parts, axum::body::Body::from(bytes)))
        .await
}

/// Marks a 2025-11-25 client's `tools/call` with its `task` field (rmcp's
/// types drop it). Only a request that says it speaks that revision (every
/// request after `initialize` must) is read here; others pass untouched.
async fn mark_task_requests(request: Request, next: Next) -> Response {
    let speaks_2025_11_25 = request
        .headers()
        .get("mcp-protocol-version")
        .is_some_and(|v| v.as_bytes() == b"2025-11-25");
    if !speaks_2025_11_25 || request.method() != axum::http::Method::POST {
        return next.run(request).await;
    }
    let (mut parts, bytes) = match buffered(request).await {
        Ok(read) => read,
        Err(too_large) => return too_large,
    };
    if let Some(task) = task_requests::peek(&bytes) {
        parts.extensions.insert(task);
    }
    next.run(Request::from_parts(parts, axum::body::Body::from(bytes)))
        .await
}

/// rmcp's session manager, each session's transport wrapped for
/// 2025-11-25 tasks (see `task_requests::Dialect`). Sessions are never
/// restored from a store (none is configured), so restoring keeps the
/// trait's answer: not supported.
struct Sessions(Arc<LocalSessionManager>);

impl SessionManager for Sessions {
    type Error = LocalSessionManagerError;
    type Transport = task_requests::Dialect<<LocalSessionManager as SessionManager>::Transport>;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let (id, transport) = self.0.create_session().await?;
        Ok((id, task_requests::Dialect::new(transport)))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.0.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.0.has_session(id).await
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.0.close_session(id).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl futures::Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error>
    {
        self.0.create_stream(id, message).await
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.0.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl futures::Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error>
    {
        self.0.create_standalone_stream(id).await
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl futures::Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error>
    {
        self.0.resume(id, last_event_id).await
    }

    fn event_store(&self) -> Option<Arc<dyn EventStore>> {
        self.0.event_store()
    }
}

/// A request's body read whole, for a middleware to look into before
/// passing the request on (rebuilt from the parts and the bytes); one
/// larger than [`MAX_PEEKED_BODY`] is answered 413 instead.
async fn buffered(
    request: Request,
) -> Result<(axum::http::request::Parts, axum::body::Bytes), Response> {
    let (parts, body) = request.into_parts();
    match axum::body::to_bytes(body, MAX_PEEKED_BODY).await {
        Ok(bytes) => Ok((parts, bytes)),
        Err(_) => Err((
            StatusCode::PAYLOAD_TOO_LARGE,
            "toolwarden: request too large\n",
        )
            .into_response()),
    }
}

/// Largest body read to tell an `initialize` from a stateless request when
/// the server is full, or to find a 2025-11-25 `task` field; the
/// arguments' own bound.
const MAX_PEEKED_BODY: usize = crate::call::MAX_ARGS_BYTES + (64 << 10);

/// Serves until the process is stopped. `beside` is served on the same
/// listener without `/mcp`'s token check (it brings its own: the console).
pub async fn serve(
    host: Arc<Controller>,
    options: HttpOptions,
    beside: axum::Router,
    listening: impl FnOnce(std::net::SocketAddr) + Send,
) -> Result<(), String> {
    let limits = host.config().mcp_sessions();
    let peers = watch::Peers::default();
    let watcher = tokio::spawn(watch::watch(Arc::clone(&host), peers.clone()));
    let mut config = StreamableHttpServerConfig::default();
    config
        .allowed_hosts
        .extend(options.allowed_hosts.iter().cloned());
    let states = super::input::RequestStates::for_store(host.records().store());
    let tasks = super::tasks::Tasks::new(host.config().mcp_tasks().clone(), host.records().store());
    // Every session runs on this (multi-thread) runtime, calls included.
    let calls = tokio::runtime::Handle::current();
    let factory = move || {
        Ok(Server::with_peers(
            Arc::clone(&host),
            peers.clone(),
            states.clone(),
            tasks.clone(),
            calls.clone(),
            options.profile.clone(),
        ))
    };
    let mut manager = LocalSessionManager::default();
    manager.session_config.keep_alive = Some(limits.idle);
    let manager = Arc::new(manager);
    let service =
        StreamableHttpService::new(factory, Arc::new(Sessions(Arc::clone(&manager))), config);
    let mut router = axum::Router::new()
        .nest_service("/mcp", service)
        .layer(axum::middleware::from_fn(mark_task_requests))
        .layer(axum::middleware::from_fn({
            let manager = Arc::clone(&manager);
            move |request: Request, next: Next| {
                refuse_over_cap(Arc::clone(&manager), limits.max, request, next)
            }
        }));
    let gate = Arc::new(toolwarden_auth::Gate::new(
        options.token,
        options.authority,
        "/mcp",
    ));
    if gate.guards() {
        let owners = super::session_owners::SessionOwners::new(Arc::clone(&manager), limits.max);
        router = router.layer(axum::middleware::from_fn(
            move |request: Request, next: Next| {
                super::session_owners::hold_to_owner(owners.clone(), request, next)
            },
        ));
        let guarded = Arc::clone(&gate);
        router = router.layer(axum::middleware::from_fn(
            move |request: Request, next: Next| {
                toolwarden_auth::guard(Arc::clone(&guarded), request, next)
            },
        ));
    }
    router = router.merge(toolwarden_auth::metadata_routes(gate));
    let origins = Arc::clone(&options.allowed_origins);
    router = router.layer(axum::middleware::from_fn(
        move |request: Request, next: Next| {
            crate::web_origin::guard(Arc::clone(&origins), request, next)
        },
    ));
    let router = router.merge(beside);
    let listener = tokio::net::TcpListener::bind(options.addr)
        .await
        .map_err(|e| format!("cannot listen on `{}`: {e}", options.addr))?
        // A session-mode answer goes out in two writes (the headers with
        // the SSE priming event, then the result). With Nagle's algorithm
        // the second waited for the client's delayed ACK, ~40 ms, on every
        // call from clients that keep the connection open (the official
        // TypeScript SDK among them).
        .tap_io(|tcp| {
            if let Err(e) = tcp.set_nodelay(true) {
                tracing::warn!("cannot turn off Nagle's algorithm on a connection: {e}");
            }
        });
    let bound = axum::serve::Listener::local_addr(&listener).unwrap_or(options.addr);
    tracing::info!("serving MCP at http://{bound}/mcp");
    listening(bound);
    // Stopping on SIGTERM or Ctrl-C returns from here, so the host is
    // dropped in order and its audit writer commits what it has queued:
    // killed by the signal's default action, the records of calls already
    // answered in the last batch would be lost.
    let served = tokio::select! {
        served = axum::serve(listener, router).into_future() => served.map_err(|e| e.to_string()),
        stop = stop_requested() => stop,
    };
    watcher.abort();
    served
}

/// Waits for SIGTERM or SIGINT.
pub(super) async fn stop_requested() -> Result<(), String> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut terminate =
        signal(SignalKind::terminate()).map_err(|e| format!("cannot watch for SIGTERM: {e}"))?;
    let mut interrupt =
        signal(SignalKind::interrupt()).map_err(|e| format!("cannot watch for SIGINT: {e}"))?;
    tokio::select! {
        _ = terminate.recv() => tracing::info!("SIGTERM: stopping"),
        _ = interrupt.recv() => tracing::info!("SIGINT: stopping"),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(addr: &str, token: Option<&str>, exposure: Exposure) -> HttpOptions {
        HttpOptions {
            addr: addr.parse().unwrap(),
            token: token.map(str::to_owned),
            authority: None,
            allowed_hosts: vec![],
            allowed_origins: Default::default(),
            exposure,
            profile: None,
        }
    }

    #[test]
    fn a_public_address_needs_a_token_or_an_explicit_opt_out() {
        assert!(
            options("127.0.0.1:8765", None, Exposure::TokenRequired)
                .refusal()
                .is_none()
        );
        assert!(
            options("[::1]:8765", None, Exposure::TokenRequired)
                .refusal()
                .is_none()
        );
        assert!(
            options("0.0.0.0:8765", None, Exposure::TokenRequired)
                .refusal()
                .is_some()
        );
        assert!(
            options("0.0.0.0:8765", Some("t"), Exposure::TokenRequired)
                .refusal()
                .is_none()
        );
        assert!(
            options("0.0.0.0:8765", None, Exposure::InsecureNoAuth)
                .refusal()
                .is_none()
        );
    }
}
