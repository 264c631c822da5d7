//! The `[budget]` table: what a session may spend, as written and as the
//! guard reads it.

use crate::settings::SettingError;
use serde::Deserialize;
use std::time::Duration;

/// How long a session may go without a call before it is forgotten, by
/// default: longer than any conversation an agent keeps open.
const DEFAULT_FORGET_AFTER: Duration = Duration::from_secs(30 * 86_400);
/// The least: a session forgotten sooner could start over in the middle of
/// a person's working day, which is its budget bypassed.
const MIN_FORGET_AFTER: Duration = Duration::from_secs(86_400);

/// Limits per session, from the `[budget]` table. `None` is unlimited.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Budget {
    pub max_calls: Option<u64>,
    pub max_calls_per_tool: Option<u64>,
    pub max_run_time: Option<Duration>,
    /// Calls one model turn may ask for (checked by the batch runner).
    pub max_calls_per_turn: Option<u64>,
    /// The same tool with the same arguments may run again in a session.
    /// Off by default, except for tools declaring `read-only` and `idempotent`.
    pub allow_duplicate_calls: bool,
    /// A session with no call for this long is forgotten: its executions
    /// leave the store, and named again it starts over.
    pub forget_sessions_after: Duration,
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            max_calls: None,
            max_calls_per_tool: None,
            max_run_time: None,
            max_calls_per_turn: None,
            allow_duplicate_calls: false,
            forget_sessions_after: DEFAULT_FORGET_AFTER,
        }
    }
}

/// The `[budget]` table as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BudgetSection {
    max_calls: Option<u64>,
    max_calls_per_tool: Option<u64>,
    max_run_ms: Option<u64>,
    max_calls_per_turn: Option<u64>,
    #[serde(default)]
    allow_duplicate_calls: bool,
    forget_sessions_after: Option<String>,
}

impl BudgetSection {
    pub const KEYS: &str = "max_calls, max_calls_per_tool, max_run_ms, max_calls_per_turn, \
                            allow_duplicate_calls, forget_sessions_after";

    pub fn resolve(self) -> Result<Budget, SettingError> {
        let limits = [
            self.max_calls,
            self.max_calls_per_tool,
            self.max_run_ms,
            self.max_calls_per_turn,
        ];
        if limits.contains(&Some(0)) {
            return Err(SettingError::new(
                "a `[budget]` limit is 0, which would refuse every call",
                "leave the key out for no limit, or set at least 1",
            ));
        }
        let forget_sessions_after = match self.forget_sessions_after {
            None => DEFAULT_FORGET_AFTER,
            Some(text) => crate::when::age_ms(&text)
                .map(|ms| Duration::from_millis(ms.unsigned_abs()))
                .filter(|after| *after >= MIN_FORGET_AFTER)
                .ok_or_else(|| {
                    SettingError::new(
                        format!(
                            "`[budget] forget_sessions_after = \"{text}\"` is not a duration of \
                             a day or more"
                        ),
                        "write it as 1d, 30d or 365d (a session forgotten sooner could start \
                         over within a working day)",
                    )
                })?,
        };
        Ok(Budget {
            forget_sessions_after,
            max_calls: self.max_calls,
            max_calls_per_tool: self.max_calls_per_tool,
            max_run_time: self.max_run_ms.map(Duration::from_millis),
            max_calls_per_turn: self.max_calls_per_turn,
            allow_duplicate_calls: self.allow_duplicate_calls,
        })
    }
}
