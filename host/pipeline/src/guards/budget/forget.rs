//! Forgetting sessions that stopped calling, so the `executions` table
//! holds about `[budget] forget_sessions_after` of history and no more:
//! a pass when the host starts and then every [`EVERY`], on a thread of its
//! own (a call never waits for it). A session still calling keeps its whole
//! history, so its limits hold for as long as it lives. Never decides
//! whether a call may run.

use crate::store::{Store, now_ms};
use std::sync::Arc;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

/// How often a running host looks for sessions to forget.
const EVERY: Duration = Duration::from_secs(600);

/// The thread, until dropped.
#[derive(Debug)]
pub(super) struct Forgetter {
    _stop: Option<mpsc::Sender<()>>,
}

impl Forgetter {
    pub(super) fn start(store: Arc<Store>, after: Duration) -> Forgetter {
        let (stop, stopped) = mpsc::channel::<()>();
        let after_ms = i64::try_from(after.as_millis()).unwrap_or(i64::MAX);
        let started = std::thread::Builder::new()
            .name("budget-forget".into())
            .spawn(move || {
                loop {
                    match store.forget_idle_sessions(now_ms().saturating_sub(after_ms)) {
                        Ok(0) => {}
                        Ok(rows) => tracing::info!(
                            rows,
                            "forgot the executions of sessions idle for {}",
                            humantime(after)
                        ),
                        Err(e) => tracing::warn!("idle sessions were not forgotten this time: {e}"),
                    }
                    match stopped.recv_timeout(EVERY) {
                        Err(RecvTimeoutError::Timeout) => continue,
                        Ok(()) | Err(RecvTimeoutError::Disconnected) => break,
                    }
                }
            });
        if let Err(e) = &started {
            tracing::warn!("idle sessions will not be forgotten: {e}");
        }
        Forgetter {
            _stop: started.ok().map(|_| stop),
        }
    }
}

fn humantime(d: Duration) -> String {
    let days = d.as_secs() / 86_400;
    if days * 86_400 == d.as_secs() {
        format!("{days} days")
    } else {
        format!("{} s", d.as_secs())
    }
}
