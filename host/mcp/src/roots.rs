//! A stdio server started with no workspace takes it from the client's
//! roots (MCP `roots/list`), when the client offers them.
//!
//! The host cannot exist before its workspace is known, and a server may
//! ask the client for its roots only once it has answered `initialize` and
//! heard `notifications/initialized`. So a connection opens in two acts on
//! one transport. First a handshake server answers `initialize` as the
//! real one would (the same [`super::server_info`], negotiated by the same
//! SDK code), asks for the roots, and holds back every other message the
//! client sends meanwhile. Then the real server starts on the same
//! transport: it is handed the client's `initialize` and `initialized`
//! again, then the held messages, and its second answer to `initialize` is
//! not sent. The client sees one handshake.
//!
//! A client that offers no roots (or none that is a project folder) is
//! answered with why the server cannot start, as a server refused at once
//! answers ([`refuse`]).
//!
//! Never: hand a request of the client's to the handshake server (it has
//! no tools; the request waits for the real one), nor choose the folder
//! here: the caller's `choose` does, from the local folders offered.

#![allow(deprecated)] // Roots are in the 2025 revisions clients speak; 2026-07-28 (SEP-2577) drops them.

use super::server_info;
use super::task_requests::Dialect;
use rmcp::model::{
    ClientJsonRpcMessage, ClientNotification, ClientRequest, ErrorData, JsonRpcMessage, RequestId,
    ServerConfig, ServerJsonRpcMessage,
};
use rmcp::service::{NotificationContext, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::{RoleServer, ServerHandler, ServiceExt};
use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::oneshot;

/// How long the client has to list its roots once asked.
const ROOTS_WAIT: Duration = Duration::from_secs(10);

/// How long a server waits for the client's first request: to open, or to
/// answer it with why it cannot. A silent client must not keep it alive.
pub const FIRST_REQUEST_WAIT: Duration = Duration::from_secs(10);

/// Why the server cannot start, as the client is told: a stable code, what
/// is wrong and what to do.
#[derive(Clone, Debug)]
pub struct Refusal {
    pub code: &'static str,
    pub message: String,
    pub hint: String,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "toolwarden cannot start: {}. {}",
            self.message, self.hint
        )
    }
}

/// What the handshake leaves: the transport, the client's messages to hand
/// the real server, and the folders it offers (or why there are none).
pub(super) struct Opened<T> {
    pub(super) transport: T,
    pub(super) held: Held,
    pub(super) roots: Result<Vec<PathBuf>, String>,
}

/// The client's messages the handshake did not answer, in order, and the
/// `initialize` among them whose second answer is not sent.
#[derive(Default)]
pub(super) struct Held {
    messages: VecDeque<ClientJsonRpcMessage>,
    initialize: Option<RequestId>,
}

/// Runs the handshake on `transport` (see the module docs).
pub(super) async fn open<T>(transport: T) -> Result<Opened<T>, String>
where
    T: Transport<RoleServer> + Send + 'static,
{
    let (give_back, given_back) = oneshot::channel();
    let (tell, told) = oneshot::channel();
    let holding = Holding {
        inner: Some(transport),
        held: Held::default(),
        act: Act::Opening,
        give_back: Some(give_back),
    };
    let asking = AskForRoots {
        tell: Arc::new(Mutex::new(Some(tell))),
    };
    let opening = tokio::time::timeout(FIRST_REQUEST_WAIT, asking.serve(Dialect::new(holding)));
    let roots = match opening.await {
        Err(_) => Err(format!(
            "the client sent no initialize within {} s",
            FIRST_REQUEST_WAIT.as_secs()
        )),
        Ok(Ok(running)) => {
            let listed = tokio::time::timeout(ROOTS_WAIT, told).await;
            let _ = running.cancel().await;
            match listed {
                Ok(Ok(listed)) => listed.map(|roots| local_folders(&roots)),
                Ok(Err(_)) => Err("the client did not list its roots".to_owned()),
                Err(_) => Err(format!(
                    "the client did not list its roots within {} s",
                    ROOTS_WAIT.as_secs()
                )),
            }
        }
        Ok(Err(_)) => Err("the client offers no roots".to_owned()),
    };
    let (transport, held) = given_back
        .await
        .map_err(|_| "the connection's transport was lost in the handshake".to_owned())?;
    Ok(Opened {
        transport,
        held,
        roots,
    })
}

/// The roots that are local folders (`file://` URIs), in the client's order.
fn local_folders(roots: &[rmcp::model::Root]) -> Vec<PathBuf> {
    roots
        .iter()
        .filter_map(|root| url::Url::parse(&root.uri).ok())
        .filter(|uri| uri.scheme() == "file")
        .filter_map(|uri| uri.to_file_path().ok())
        .collect()
}

/// Answers the client's requests with `refusal` and closes: those it sent
/// already, else the next one by `deadline`.
pub(super) async fn refuse<T>(
    mut transport: T,
    held: Held,
    refusal: &Refusal,
    deadline: tokio::time::Instant,
) where
    T: Transport<RoleServer>,
{
    let mut answered = false;
    for message in held.messages {
        if let JsonRpcMessage::Request(request) = message {
            answered = true;
            let _ = transport.send(refusal_of(refusal, request.id)).await;
        }
    }
    while !answered {
        match tokio::time::timeout_at(deadline, transport.receive()).await {
            Ok(Some(JsonRpcMessage::Request(request))) => {
                answered = true;
                let _ = transport.send(refusal_of(refusal, request.id)).await;
            }
            Ok(Some(_)) => {}
            Ok(None) | Err(_) => break,
        }
    }
    let _ = transport.close().await;
}

fn refusal_of(refusal: &Refusal, id: RequestId) -> ServerJsonRpcMessage {
    let data = serde_json::json!({ "code": refusal.code });
    ServerJsonRpcMessage::error(
        ErrorData::internal_error(refusal.to_string(), Some(data)),
        Some(id),
    )
}

/// The transport the real server runs on after a handshake: the held
/// messages first, and no second answer to `initialize`.
pub(super) struct Replay<T> {
    inner: T,
    held: Held,
}

impl<T> Replay<T> {
    pub(super) fn new(inner: T, held: Held) -> Replay<T> {
        Replay { inner, held }
    }
}

impl<T: Transport<RoleServer>> Transport<RoleServer> for Replay<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), T::Error>> + Send + 'static {
        use futures::future::Either;
        if let JsonRpcMessage::Response(response) = &item
            && self.held.initialize.as_ref() == Some(&response.id)
        {
            self.held.initialize = None;
            return Either::Left(std::future::ready(Ok(())));
        }
        Either::Right(self.inner.send(item))
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        match self.held.messages.pop_front() {
            Some(message) => Some(message),
            None => self.inner.receive().await,
        }
    }

    async fn close(&mut self) -> Result<(), T::Error> {
        self.inner.close().await
    }
}

/// Where the handshake is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Act {
    /// Waiting for `initialize` (a ping may come first).
    Opening,
    /// Answered `initialize`; waiting for `notifications/initialized`.
    Initializing,
    /// Asking for the roots: only answers to that pass.
    Listing,
}

/// The handshake's transport: passes the handshake through, holds the
/// rest, and gives the transport and what it held back when dropped.
struct Holding<T> {
    inner: Option<T>,
    held: Held,
    act: Act,
    give_back: Option<oneshot::Sender<(T, Held)>>,
}

impl<T> Holding<T> {
    /// Whether `message` is for the handshake server (else it is held).
    fn passes(&mut self, message: &ClientJsonRpcMessage) -> bool {
        match (self.act, message) {
            (_, JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_)) => true,
            (Act::Opening, JsonRpcMessage::Request(request))
                if matches!(request.request, ClientRequest::PingRequest(_)) =>
            {
                true
            }
            (Act::Opening, JsonRpcMessage::Request(request)) => {
                if let ClientRequest::InitializeRequest(initialize) = &request.request
                    && initialize.params.capabilities.roots.is_some()
                {
                    self.act = Act::Initializing;
                    self.held.initialize = Some(request.id.clone());
                    self.held.messages.push_back(message.clone());
                    return true;
                }
                false
            }
            (Act::Initializing, JsonRpcMessage::Notification(notification))
                if matches!(
                    notification.notification,
                    ClientNotification::InitializedNotification(_)
                ) =>
            {
                self.act = Act::Listing;
                self.held.messages.push_back(message.clone());
                true
            }
            _ => false,
        }
    }
}

impl<T: Transport<RoleServer>> Transport<RoleServer> for Holding<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), T::Error>> + Send + 'static {
        use futures::future::Either;
        match self.inner.as_mut() {
            Some(inner) => Either::Left(inner.send(item)),
            None => Either::Right(std::future::pending()),
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            let message = self.inner.as_mut()?.receive().await?;
            if self.passes(&message) {
                return Some(message);
            }
            let opening = self.act == Act::Opening;
            self.held.messages.push_back(message);
            if opening {
                // No initialize offering roots: the handshake ends here.
                return None;
            }
        }
    }

    /// The transport outlives the handshake: it is given back, not closed.
    async fn close(&mut self) -> Result<(), T::Error> {
        Ok(())
    }
}

impl<T> Drop for Holding<T> {
    fn drop(&mut self) {
        if let (Some(inner), Some(give_back)) = (self.inner.take(), self.give_back.take()) {
            let _ = give_back.send((inner, std::mem::take(&mut self.held)));
        }
    }
}

type Listed = Result<Vec<rmcp::model::Root>, String>;

/// The handshake server: the real server's `initialize` answer, and a
/// `roots/list` once the client is initialized.
struct AskForRoots {
    tell: Arc<Mutex<Option<oneshot::Sender<Listed>>>>,
}

impl ServerHandler for AskForRoots {
    fn get_info(&self) -> ServerConfig {
        server_info()
    }

    async fn on_initialized(&self, cx: NotificationContext<RoleServer>) {
        let tell = self
            .tell
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        let Some(tell) = tell else {
            return;
        };
        // Its answer comes through the loop that runs this handler.
        tokio::spawn(async move {
            let listed = cx
                .peer
                .list_roots()
                .await
                .map(|listed| listed.roots)
                .map_err(|e| format!("the client's roots/list failed: {e}"));
            let _ = tell.send(listed);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_local_folders_count_as_roots_in_the_clients_order() {
        let root = |uri: &str| rmcp::model::Root::new(uri);
        let offered = [
            root("https://example.com/project"),
            root("file:///srv/my%20project"),
            root("not a uri"),
            root("file://remote-host/share"),
            root("file:///home/a"),
        ];
        assert_eq!(
            local_folders(&offered),
            [PathBuf::from("/srv/my project"), PathBuf::from("/home/a")]
        );
    }
}
