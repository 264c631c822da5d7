//! The `[[rate_limit]]` tables: how many calls of which tools, over which
//! window, counted for whom, as written and as the guard reads them.

use crate::settings::SettingError;
use globset::{Glob, GlobSet, GlobSetBuilder};
use serde::Deserialize;

/// The longest window a limit may count over. Units older than this leave
/// the store whatever the config says, so an idle caller's units do not
/// stay for ever.
pub const MAX_WINDOW_MS: i64 = 31 * 86_400_000;

/// What a limit counts separately.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Per {
    /// Each caller (a token's issuer and subject, the shared token, or the
    /// OS user a stdio, CLI or library call came from).
    Caller,
    /// Each tool the limit names.
    Tool,
}

/// One limit: at most `calls` calls of the tools it names in any window of
/// `window_ms`, counted separately for each caller and/or tool (`per`).
#[derive(Clone, Debug)]
pub struct RateLimit {
    /// Where it is written, for messages.
    pub line: Option<usize>,
    /// The `tools` globs as written (none: every tool).
    pub patterns: Option<Vec<String>>,
    tools: Option<GlobSet>,
    pub calls: u32,
    pub window_ms: i64,
    /// The window as written (`1h`), for messages.
    pub window: String,
    pub per_caller: bool,
    pub per_tool: bool,
}

impl RateLimit {
    pub fn names(&self, tool: &str) -> bool {
        self.tools.as_ref().is_none_or(|set| set.is_match(tool))
    }
}

/// A `[[rate_limit]]` table as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateLimitSection {
    tools: Option<Vec<String>>,
    calls: u32,
    window: String,
    per: Option<Vec<Per>>,
}

impl RateLimitSection {
    pub const KEYS: &str = "tools, calls, window, per";

    /// The limit, which starts at `line` of the file.
    pub fn resolve(self, line: usize) -> Result<RateLimit, SettingError> {
        if self.calls == 0 {
            return Err(SettingError::new(
                "`rate_limit.calls` is 0, which would refuse every call it counts",
                "set at least 1, or deny the tools with a rule",
            ));
        }
        let window_ms = crate::when::age_ms(&self.window)
            .filter(|ms| (1000..=MAX_WINDOW_MS).contains(ms))
            .ok_or_else(|| {
                SettingError::new(
                    format!(
                        "`rate_limit.window = \"{}\"` is not a window from 1s to 31d",
                        self.window
                    ),
                    "write a number and a unit: \"30s\", \"10m\", \"1h\", \"7d\"",
                )
            })?;
        let tools = match &self.tools {
            None => None,
            Some(list) if list.is_empty() => {
                return Err(SettingError::new(
                    "`rate_limit.tools` is empty, so the limit counts nothing",
                    "list tool names or globs, or leave the key out to count every tool",
                ));
            }
            Some(list) => {
                let mut set = GlobSetBuilder::new();
                for pattern in list {
                    set.add(Glob::new(pattern).map_err(|e| {
                        SettingError::new(
                            format!("`{pattern}` in `rate_limit.tools` is not a valid glob: {e}"),
                            "use `*` and `?` wildcards, e.g. \"web_*\"",
                        )
                    })?);
                }
                Some(set.build().map_err(|e| {
                    SettingError::new(
                        format!("cannot build the `rate_limit.tools` globs: {e}"),
                        "simplify the globs",
                    )
                })?)
            }
        };
        let per = self.per.unwrap_or_else(|| vec![Per::Caller, Per::Tool]);
        Ok(RateLimit {
            line: Some(line),
            patterns: self.tools,
            tools,
            calls: self.calls,
            window_ms,
            window: self.window,
            per_caller: per.contains(&Per::Caller),
            per_tool: per.contains(&Per::Tool),
        })
    }
}
