//! The `[budget]` table: what a session may spend, as written and as the
//! guard reads it.

use crate::settings::SettingError;
use serde::Deserialize;
use std::time::Duration;

/// Limits per session, from the `[budget]` table. `None` is unlimited.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Budget {
    pub max_calls: Option<u64>,
    pub max_calls_per_tool: Option<u64>,
    pub max_run_time: Option<Duration>,
    /// Calls one model turn may ask for (checked by the batch runner).
    pub max_calls_per_turn: Option<u64>,
    /// The same tool with the same arguments may run again in a session.
    /// Off by default, except for tools declaring `read-only` and `idempotent`.
    pub allow_duplicate_calls: bool,
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
}

impl BudgetSection {
    pub const KEYS: &str =
        "max_calls, max_calls_per_tool, max_run_ms, max_calls_per_turn, allow_duplicate_calls";

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
        Ok(Budget {
            max_calls: self.max_calls,
            max_calls_per_tool: self.max_calls_per_tool,
            max_run_time: self.max_run_ms.map(Duration::from_millis),
            max_calls_per_turn: self.max_calls_per_turn,
            allow_duplicate_calls: self.allow_duplicate_calls,
        })
    }
}
