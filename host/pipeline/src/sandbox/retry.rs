//! Running a failed call again, only where that cannot do harm (seed 002
//! §5.10): the plugin never started, or the tool declares it only reads and
//! the failure was its own `failed` or a crash. Never after a refusal (those
//! never reach the sandbox), a tool's `invalid-args` or `not-found`, a limit
//! stop (timeout, fuel, memory, output), a cancellation, or any failure of a
//! tool that may write: a write that crashed half-way has an unknown
//! outcome. Owns the `[retry]` table; off (one attempt) unless configured.

use crate::engine::{RawOutput, ToolFailure};
use crate::outcome::{CallError, ErrorCode};
use crate::settings::{SettingError, bounded};
use crate::spec::{Effect, Effects};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Most attempts a call may get, whatever the config says: retries are for
/// a hiccup, not for hammering a broken tool.
const MAX_ATTEMPTS: u64 = 5;
const MAX_BACKOFF_MS: u64 = 60_000;
const DEFAULT_BACKOFF_MS: u64 = 200;

/// The `[retry]` table as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetrySection {
    attempts: Option<u64>,
    backoff_ms: Option<u64>,
}

/// How often a call may be tried, and how long to wait before the next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Retry {
    /// Attempts in all, the first included.
    pub attempts: u32,
    /// Wait before the second attempt; doubled before each further one.
    pub backoff: Duration,
}

impl Default for Retry {
    fn default() -> Retry {
        Retry {
            attempts: 1,
            backoff: Duration::from_millis(DEFAULT_BACKOFF_MS),
        }
    }
}

impl RetrySection {
    pub const KEYS: &str = "attempts, backoff_ms";

    pub fn resolve(self) -> Result<Retry, SettingError> {
        let attempts = bounded("retry", "attempts", self.attempts, 1, MAX_ATTEMPTS)?;
        let backoff = bounded(
            "retry",
            "backoff_ms",
            self.backoff_ms,
            DEFAULT_BACKOFF_MS,
            MAX_BACKOFF_MS,
        )?;
        Ok(Retry {
            attempts: attempts as u32,
            backoff: Duration::from_millis(backoff),
        })
    }
}

/// One attempt that failed and was tried again, for the audit trail.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Retried {
    /// 1 for the first attempt.
    pub attempt: u32,
    pub code: ErrorCode,
    pub message: String,
    /// How long the host waited before the next attempt.
    pub backoff_ms: u64,
}

impl Retry {
    /// The wait after failed attempt `attempt` (1-based).
    pub(super) fn backoff_after(&self, attempt: u32) -> Duration {
        self.backoff.saturating_mul(
            1u32.checked_shl(attempt.saturating_sub(1))
                .unwrap_or(u32::MAX),
        )
    }
}

/// Why a failed attempt may be run again: `None` when it must not be.
/// `started`: the plugin was instantiated, so it may have done something.
pub(super) fn retryable(
    result: &Result<Result<RawOutput, ToolFailure>, CallError>,
    started: bool,
    effects: Effects,
) -> Option<(ErrorCode, &str)> {
    let (code, message) = match result {
        Ok(Ok(_)) => return None,
        Ok(Err(ToolFailure::Failed(message))) => (ErrorCode::ToolFailed, message.as_str()),
        Ok(Err(ToolFailure::InvalidArgs(_) | ToolFailure::NotFound(_))) => return None,
        Err(e) => (e.code, e.message.as_str()),
    };
    if !started {
        return (code == ErrorCode::HostError).then_some((code, message));
    }
    let reads_only = effects.contains(Effect::ReadOnly);
    let transient = matches!(
        code,
        ErrorCode::ToolFailed | ErrorCode::ToolCrashed | ErrorCode::HostError
    );
    (reads_only && transient).then_some((code, message))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failed() -> Result<Result<RawOutput, ToolFailure>, CallError> {
        Ok(Err(ToolFailure::Failed("503 from upstream".into())))
    }

    fn stopped(code: ErrorCode) -> Result<Result<RawOutput, ToolFailure>, CallError> {
        Err(CallError::new(code, "stopped"))
    }

    #[test]
    fn only_reads_that_failed_or_crashed_are_tried_again() {
        let read = [Effect::ReadOnly].into_iter().collect::<Effects>();
        let write = [Effect::MutatesWorkspace].into_iter().collect::<Effects>();
        assert!(retryable(&failed(), true, read).is_some());
        assert!(retryable(&stopped(ErrorCode::ToolCrashed), true, read).is_some());
        assert!(
            retryable(&failed(), true, write).is_none(),
            "unknown outcome"
        );
        assert!(retryable(&stopped(ErrorCode::ToolCrashed), true, write).is_none());
        for limit in [
            ErrorCode::Timeout,
            ErrorCode::OutOfFuel,
            ErrorCode::MemoryLimit,
            ErrorCode::OutputTooLarge,
            ErrorCode::Cancelled,
        ] {
            assert!(
                retryable(&stopped(limit), true, read).is_none(),
                "{limit:?}"
            );
        }
        let business = Ok(Err(ToolFailure::InvalidArgs("no such op".into())));
        assert!(retryable(&business, true, read).is_none());
        let missing = Ok(Err(ToolFailure::NotFound("gone".into())));
        assert!(retryable(&missing, true, read).is_none());
    }

    #[test]
    fn a_host_failure_before_the_plugin_started_is_tried_again_for_any_tool() {
        let write = [Effect::MutatesWorkspace].into_iter().collect::<Effects>();
        assert!(retryable(&stopped(ErrorCode::HostError), false, write).is_some());
        assert!(retryable(&stopped(ErrorCode::Cancelled), false, write).is_none());
    }

    #[test]
    fn backoff_doubles_and_the_config_is_bounded() {
        let retry = RetrySection {
            attempts: Some(3),
            backoff_ms: Some(100),
        }
        .resolve()
        .unwrap();
        assert_eq!(retry.backoff_after(1), Duration::from_millis(100));
        assert_eq!(retry.backoff_after(3), Duration::from_millis(400));
        assert!(
            retry.backoff_after(99) >= retry.backoff_after(3),
            "saturates, never wraps"
        );
        for (attempts, backoff_ms) in [(Some(0), None), (Some(6), None), (None, Some(60_001))] {
            assert!(
                RetrySection {
                    attempts,
                    backoff_ms
                }
                .resolve()
                .is_err()
            );
        }
        assert_eq!(
            RetrySection {
                attempts: None,
                backoff_ms: None
            }
            .resolve()
            .unwrap(),
            Retry::default()
        );
    }
}
