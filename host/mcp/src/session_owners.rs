//! An MCP session over HTTP belongs to the caller that opened it.
//!
//! The session's id travels in a header (`Mcp-Session-Id`), and whoever
//! holds it could otherwise send requests in that session: spend its
//! toolwarden session (budget, approvals) and answer its pending forms. With
//! callers proven at the door (a shared token or access tokens, see
//! `toolwarden_auth`), the id is bound to the caller whose `initialize`
//! opened it, as the MCP spec's security guidance asks (bind session ids to
//! user-specific information). A request naming the session with another
//! caller's credentials gets what a request naming no such session gets,
//! `404 Session not found`: nothing tells it the session exists.
//!
//! Bindings live as long as their sessions; closed ones are dropped when
//! the map outgrows the sessions a server may hold.

use axum::extract::Request;
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use toolwarden::caller::Caller;

const SESSION_HEADER: &str = "mcp-session-id";

/// Which caller opened each open session, by session id.
#[derive(Clone)]
pub(super) struct SessionOwners {
    owners: Arc<Mutex<HashMap<String, String>>>,
    manager: Arc<LocalSessionManager>,
    /// Bindings kept before closed sessions' are dropped.
    room: usize,
}

impl SessionOwners {
    pub fn new(manager: Arc<LocalSessionManager>, max_sessions: usize) -> SessionOwners {
        SessionOwners {
            owners: Arc::default(),
            manager,
            room: max_sessions.saturating_mul(2).max(64),
        }
    }

    fn owners(&self) -> std::sync::MutexGuard<'_, HashMap<String, String>> {
        self.owners
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    async fn bind(&self, session: &str, identity: String) {
        if self.owners().len() >= self.room {
            let open = self.manager.sessions.read().await;
            self.owners().retain(|id, _| open.contains_key(id.as_str()));
        }
        self.owners().insert(session.to_owned(), identity);
    }
}

/// Lets a request into a session only with the credentials of the caller
/// that opened it, and binds a session an `initialize` opens to its caller.
pub(super) async fn hold_to_owner(owners: SessionOwners, request: Request, next: Next) -> Response {
    let Some(identity) = request
        .extensions()
        .get::<Arc<Caller>>()
        .map(|caller| caller.identity())
    else {
        return next.run(request).await;
    };
    let named = request
        .headers()
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    match named {
        Some(session) => {
            let owner = owners.owners().get(&session).cloned();
            if owner.is_some_and(|owner| owner != identity) {
                tracing::warn!("refused a request in another caller's MCP session");
                return (StatusCode::NOT_FOUND, "Not Found: Session not found").into_response();
            }
            next.run(request).await
        }
        None => {
            let response = next.run(request).await;
            let opened = response
                .headers()
                .get(SESSION_HEADER)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            if let Some(session) = opened {
                owners.bind(&session, identity).await;
            }
            response
        }
    }
}
