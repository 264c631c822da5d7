//! What a running call reports, forwarded to its client in order before
//! its answer: a plugin's `progress` as `notifications/progress`, its `log`
//! lines as `notifications/message`.
//!
//! Log lines reach a client only when it asked for them: a 2025-11-25
//! session by `logging/setLevel` (kept per session, [`SessionLevel`]), a
//! 2026-07-28 request by `_meta["io.modelcontextprotocol/logLevel"]`; a
//! client that asked for neither gets none. What reaches the client is what
//! the host's own log gets: cut to the call's log budget, with the
//! credentials' secrets masked (see the pipeline's `engine::host`).
//!
//! MCP marks logging deprecated (SEP-2577) but both revisions still carry
//! it, hence the `allow(deprecated)` where its level is named.

use crate::call::{LogLevel as PluginLevel, LogLine, Progress, Sink};
use rmcp::RoleServer;
#[allow(deprecated)]
use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam, ProgressNotificationParam};
use rmcp::service::{Peer, RequestContext};
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use tokio::task::JoinHandle;

/// Reports waiting for one slow client, per call and kind.
const QUEUE: usize = 64;

/// A forwarder: the sink the call reports into, and the task that sends
/// what it reports. The caller awaits the task after the call, so every
/// notification is sent before the response (a client drops reports for a
/// finished request).
type Forwarder<T> = (Sink<T>, JoinHandle<()>);

/// Sends every report through `send`, in order. Bounded: a client that
/// reads slower than the call reports loses reports rather than holding
/// the call's answer (or the host's memory).
fn forward<T, F, Fut>(peer: Peer<RoleServer>, send: F) -> Forwarder<T>
where
    T: Send + 'static,
    F: Fn(Peer<RoleServer>, T) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send,
{
    let (tx, mut rx) = tokio::sync::mpsc::channel::<T>(QUEUE);
    let task = tokio::spawn(async move {
        while let Some(item) = rx.recv().await {
            send(peer.clone(), item).await;
        }
    });
    let sink = Sink::new(move |item| {
        // Full: the client is behind, and this report is dropped.
        let _ = tx.try_send(item);
    });
    (sink, task)
}

/// Forwards a call's progress, when the request carries a progress token
/// (the sandbox lets through at most a report every few milliseconds).
pub(super) fn progress_forwarder(cx: &RequestContext<RoleServer>) -> Option<Forwarder<Progress>> {
    let token = cx.meta.get_progress_token()?;
    Some(forward(cx.peer.clone(), move |peer, p: Progress| {
        let mut param = ProgressNotificationParam::new(token.clone(), p.done as f64);
        if let Some(total) = p.total {
            param = param.with_total(total as f64);
        }
        if let Some(message) = p.message {
            param = param.with_message(message);
        }
        async move {
            if let Err(e) = peer.notify_progress(param).await {
                tracing::debug!("cannot send a progress notification: {e}");
            }
        }
    }))
}

/// The least severe level a session's client wants log lines at, as set by
/// `logging/setLevel`, kept as its [`rank`] (plus one: zero is not set yet).
/// Shared by the clones of one connection's server.
#[derive(Clone, Debug, Default)]
pub(super) struct SessionLevel(Arc<AtomicU8>);

impl SessionLevel {
    #[allow(deprecated)]
    pub fn set(&self, level: LoggingLevel) {
        self.0.store(rank(level) + 1, Ordering::Relaxed);
    }

    fn rank(&self) -> Option<u8> {
        self.0.load(Ordering::Relaxed).checked_sub(1)
    }
}

/// MCP's levels, least severe first.
#[allow(deprecated)]
const LEVELS: [LoggingLevel; 8] = [
    LoggingLevel::Debug,
    LoggingLevel::Info,
    LoggingLevel::Notice,
    LoggingLevel::Warning,
    LoggingLevel::Error,
    LoggingLevel::Critical,
    LoggingLevel::Alert,
    LoggingLevel::Emergency,
];

/// Where `level` stands in [`LEVELS`].
#[allow(deprecated)]
fn rank(level: LoggingLevel) -> u8 {
    LEVELS.iter().position(|l| *l == level).unwrap_or(0) as u8
}

/// The MCP level a plugin's line is sent at (MCP has no `trace`).
#[allow(deprecated)]
fn level_of(level: PluginLevel) -> LoggingLevel {
    match level {
        PluginLevel::Trace | PluginLevel::Debug => LoggingLevel::Debug,
        PluginLevel::Info => LoggingLevel::Info,
        PluginLevel::Warn => LoggingLevel::Warning,
        PluginLevel::Error => LoggingLevel::Error,
    }
}

/// Forwards a call's log lines, and those of the tools it calls, at or
/// above the level the request (2026-07-28) or else the session
/// (2025-11-25) asked for; none when neither asked. Each line's logger is
/// the tool that logged it.
#[allow(deprecated)]
pub(super) fn log_forwarder(
    cx: &RequestContext<RoleServer>,
    session: &SessionLevel,
) -> Option<Forwarder<LogLine>> {
    let least = cx.meta.log_level().map(rank).or_else(|| session.rank())?;
    let (sink, task) = forward(cx.peer.clone(), move |peer, line: LogLine| {
        let param = LoggingMessageNotificationParam::new(
            level_of(line.level),
            serde_json::Value::String(line.text),
        )
        .with_logger(&*line.tool);
        async move {
            if let Err(e) = peer.notify_logging_message(param).await {
                tracing::debug!("cannot send a log notification: {e}");
            }
        }
    });
    let wanted = Sink::new(move |line: LogLine| {
        if rank(level_of(line.level)) >= least {
            sink.report(line);
        }
    });
    Some((wanted, task))
}
