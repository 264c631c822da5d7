//! Watches the plugins directory and reloads the registry when it changes,
//! tells the sessions subscribed to a resource when its plugin announces
//! that it changed, and every session when a plugin offers or withdraws
//! tools.
//!
//! Polls the directory's `*.wasm` names, sizes and modification times: no
//! platform-specific notification API, and a file still being copied is
//! simply reloaded again once it settles (a truncated file fails to load and
//! is logged; the previous tools keep serving meanwhile).

use crate::controller::Controller;
use rmcp::RoleServer;
use rmcp::model::ResourceUpdatedNotificationParam;
use rmcp::service::Peer;
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, SystemTime};
use tokio::sync::broadcast::error::RecvError;
use toolwarden::changes::Change;

/// How often the plugins directory is checked for changes.
pub const PLUGIN_POLL: Duration = Duration::from_millis(500);

type Snapshot = Option<Vec<(std::ffi::OsString, u64, Option<SystemTime>)>>;

fn snapshot(dir: &Path) -> Snapshot {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "wasm"))
        .map(|e| {
            let meta = e.metadata().ok();
            (
                e.file_name(),
                meta.as_ref().map_or(0, |m| m.len()),
                meta.and_then(|m| m.modified().ok()),
            )
        })
        .collect();
    files.sort();
    Some(files)
}

/// Who hears that the tool list changed: legacy connections, on the
/// connection itself, and 2026-07-28 `subscriptions/listen` streams, each of
/// which watches a generation number (a stream busy sending when a change
/// lands still sees it: a `watch` channel keeps the latest value).
///
/// And who hears that a resource changed: the legacy sessions that
/// subscribed to it (`resources/subscribe`). A 2026-07-28 stream listens
/// for itself (see `Server::listen`).
#[derive(Clone)]
pub struct Peers {
    legacy: Arc<Mutex<Vec<Peer<RoleServer>>>>,
    generation: Arc<tokio::sync::watch::Sender<u64>>,
    subscribers: Arc<Mutex<Vec<Weak<Subscribed>>>>,
}

impl Default for Peers {
    fn default() -> Peers {
        Peers {
            legacy: Arc::default(),
            generation: Arc::new(tokio::sync::watch::Sender::new(0)),
            subscribers: Arc::default(),
        }
    }
}

/// One legacy session's resource subscriptions, and its connection,
/// known from its first `resources/subscribe` on. Dropped with the
/// session, which is then told nothing again.
#[derive(Default)]
pub struct Subscribed {
    uris: Mutex<BTreeSet<String>>,
    peer: OnceLock<Peer<RoleServer>>,
}

/// Resources one session may be subscribed to at once: more than a client
/// watches, few enough to bound what a session holds.
pub const MAX_SUBSCRIPTIONS: usize = 256;

impl Subscribed {
    fn uris(&self) -> std::sync::MutexGuard<'_, BTreeSet<String>> {
        self.uris.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Stops telling the session about `uri`.
    pub fn remove(&self, uri: &str) {
        self.uris().remove(uri);
    }

    fn covers(&self, uri: &str) -> bool {
        self.uris().contains(uri)
    }
}

impl Peers {
    /// A legacy connection that finished its `initialize`.
    pub fn add_legacy(&self, peer: Peer<RoleServer>) {
        self.legacy
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(peer);
    }

    /// Subscribes `session`, on `peer`, to `uri` (already found readable),
    /// unless it holds [`MAX_SUBSCRIPTIONS`] already.
    pub fn subscribe(
        &self,
        session: &Arc<Subscribed>,
        peer: Peer<RoleServer>,
        uri: String,
    ) -> Result<(), String> {
        {
            let mut uris = session.uris();
            if uris.len() >= MAX_SUBSCRIPTIONS && !uris.contains(&uri) {
                return Err(format!(
                    "a session holds at most {MAX_SUBSCRIPTIONS} resource subscriptions; \
                     unsubscribe from one first"
                ));
            }
            uris.insert(uri);
        }
        if session.peer.set(peer).is_ok() {
            let mut subscribers = self.subscribers.lock().unwrap_or_else(|p| p.into_inner());
            subscribers.retain(|s| s.strong_count() > 0);
            subscribers.push(Arc::downgrade(session));
        }
        Ok(())
    }

    /// The connections of the live sessions subscribed to `uri`.
    fn subscribed_to(&self, uri: &str) -> Vec<Peer<RoleServer>> {
        let mut subscribers = self.subscribers.lock().unwrap_or_else(|p| p.into_inner());
        subscribers.retain(|s| {
            s.upgrade()
                .and_then(|s| s.peer.get().map(|p| !p.is_transport_closed()))
                .unwrap_or(false)
        });
        subscribers
            .iter()
            .filter_map(Weak::upgrade)
            .filter(|s| s.covers(uri))
            .filter_map(|s| s.peer.get().cloned())
            .collect()
    }

    /// Changes from now on, for one `subscriptions/listen` stream.
    pub fn changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.generation.subscribe()
    }

    async fn tell(&self) {
        self.generation.send_modify(|g| *g += 1);
        let targets: Vec<_> = self
            .legacy
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        for peer in targets {
            if let Err(e) = peer.notify_tool_list_changed().await {
                tracing::debug!("cannot tell a client the tool list changed: {e}");
            }
        }
        // A closed connection is told nothing again.
        self.legacy
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|peer| !peer.is_transport_closed());
    }
}

/// Reloads the tools when the plugins directory changes, and tells the
/// sessions of the changes plugins make (a resource announced to those
/// subscribed to it; tools offered or withdrawn to everyone), until the
/// server stops.
pub async fn watch(host: Arc<Controller>, peers: Peers) {
    tokio::join!(
        reload_on_change(Arc::clone(&host), peers.clone()),
        tell_plugin_changes(host, peers)
    );
}

async fn tell_plugin_changes(host: Arc<Controller>, peers: Peers) {
    let mut changes = host.plugin_changes();
    loop {
        let uri = match changes.recv().await {
            Ok(Change::Resource(uri)) => uri,
            Ok(Change::Tools) => {
                peers.tell().await;
                continue;
            }
            Err(RecvError::Lagged(missed)) => {
                tracing::warn!("{missed} plugin changes were made faster than told");
                // What was missed may have been the tool list's.
                peers.tell().await;
                continue;
            }
            Err(RecvError::Closed) => return,
        };
        for peer in peers.subscribed_to(&uri) {
            let told = peer
                .notify_resource_updated(ResourceUpdatedNotificationParam::new(uri.as_ref()))
                .await;
            if let Err(e) = told {
                tracing::debug!("cannot tell a client that `{uri}` changed: {e}");
            }
        }
    }
}

async fn reload_on_change(host: Arc<Controller>, peers: Peers) {
    let dir = host.config().plugins_dir().to_owned();
    let mut seen = snapshot(&dir);
    loop {
        tokio::time::sleep(PLUGIN_POLL).await;
        let now = snapshot(&dir);
        if now == seen {
            continue;
        }
        seen = now;
        let reloading = Arc::clone(&host);
        match tokio::task::spawn_blocking(move || reloading.reload()).await {
            Ok(Ok(true)) => {
                tracing::info!("the plugins in `{}` changed; tools reloaded", dir.display());
                peers.tell().await;
            }
            Ok(Ok(false)) => {}
            Ok(Err(e)) => tracing::error!(
                "cannot reload `{}`, still serving the previous tools: {e}; hint: {}",
                dir.display(),
                e.hint()
            ),
            Err(e) => tracing::error!("the reload task failed: {e}"),
        }
    }
}
