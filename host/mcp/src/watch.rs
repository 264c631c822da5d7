//! Watches the plugins directory and reloads the registry when it changes.
//!
//! Polls the directory's `*.wasm` names, sizes and modification times: no
//! platform-specific notification API, and a file still being copied is
//! simply reloaded again once it settles (a truncated file fails to load and
//! is logged; the previous tools keep serving meanwhile).

use crate::controller::Controller;
use rmcp::RoleServer;
use rmcp::service::Peer;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

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
#[derive(Clone)]
pub struct Peers {
    legacy: Arc<Mutex<Vec<Peer<RoleServer>>>>,
    generation: Arc<tokio::sync::watch::Sender<u64>>,
}

impl Default for Peers {
    fn default() -> Peers {
        Peers {
            legacy: Arc::default(),
            generation: Arc::new(tokio::sync::watch::Sender::new(0)),
        }
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

pub async fn watch(host: Arc<Controller>, peers: Peers) {
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
