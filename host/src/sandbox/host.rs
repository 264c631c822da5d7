//! The `toolwarden:tool/host` interface: what a plugin may ask of the host.
//! Every function is cheap and bounded; none can fail or block the host.

use super::bindings::toolwarden::tool::host::{Host, Level};
use super::state::CallState;
use crate::call::Progress;

/// Log text one call may write through `log`; later lines are dropped so a
/// chatty plugin cannot flood the host's log or memory.
pub const LOG_BUDGET_BYTES: usize = 64 << 10;

impl Host for CallState {
    fn log(&mut self, level: Level, message: String) {
        let host = &mut self.host;
        if host.log_bytes_left == 0 {
            return;
        }
        let mut end = message.len().min(host.log_bytes_left);
        while !message.is_char_boundary(end) {
            end -= 1;
        }
        host.log_bytes_left = if end < message.len() {
            0
        } else {
            host.log_bytes_left - end
        };
        let text = &message[..end];
        let (tool, call) = (&*host.tool, &*host.call_id);
        match level {
            Level::Trace => tracing::trace!(tool, call, "plugin: {text}"),
            Level::Debug => tracing::debug!(tool, call, "plugin: {text}"),
            Level::Info => tracing::info!(tool, call, "plugin: {text}"),
            Level::Warn => tracing::warn!(tool, call, "plugin: {text}"),
            Level::Error => tracing::error!(tool, call, "plugin: {text}"),
        }
    }

    fn progress(&mut self, done: u64, total: Option<u64>, message: Option<String>) {
        if let Some(sink) = &self.host.progress {
            sink.report(Progress {
                done,
                total,
                message,
            });
        }
    }

    fn cancelled(&mut self) -> bool {
        self.host.cancel.is_cancelled()
    }
}
