//! The `[mcp]` section's values: how many HTTP sessions and tasks one
//! server keeps and for how long. Read here because the MCP server is a
//! crate above the library; it takes them from the [`super::Config`].

use crate::settings::{SettingError, bounded};
use serde::Deserialize;
use std::time::Duration;

/// MCP sessions over HTTP one server keeps open at most, and how long one
/// may sit idle before it is closed. An idle session costs memory (see
/// the README); without these, a client that opens sessions and never
/// closes them grows the server without end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct McpSessions {
    pub max: usize,
    pub idle: std::time::Duration,
}

pub const DEFAULT_MAX_MCP_SESSIONS: usize = 256;

pub const DEFAULT_SESSION_IDLE_SECONDS: u64 = 300;

pub(crate) const MAX_MCP_SESSIONS: u64 = 100_000;

pub(crate) const MAX_SESSION_IDLE_SECONDS: u64 = 86_400;

impl Default for McpSessions {
    fn default() -> Self {
        McpSessions {
            max: DEFAULT_MAX_MCP_SESSIONS,
            idle: std::time::Duration::from_secs(DEFAULT_SESSION_IDLE_SECONDS),
        }
    }
}

/// How the MCP server runs long calls as tasks (the
/// `io.modelcontextprotocol/tasks` extension) for clients that declared it
/// (`[mcp] task_after_ms`, `task_ttl_seconds`, `max_tasks`, `task_only`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct McpTasks {
    /// A call still running this long after it started becomes a task; one
    /// that ends sooner is answered as usual.
    pub after: std::time::Duration,
    /// How long a task and its result are kept (the wire's `ttlMs`); a
    /// call still running then is stopped and its task failed.
    pub ttl: std::time::Duration,
    /// Tasks running at once, over every connection; past it, calls are
    /// answered as usual (clients wait) and task-only tools are refused.
    pub max_running: usize,
    /// Tools whose calls only run as tasks: a client that did not declare
    /// the extension is refused (-32021) rather than kept waiting.
    pub task_only: Vec<String>,
}

pub const DEFAULT_TASK_AFTER_MS: u64 = 250;

pub const DEFAULT_TASK_TTL_SECONDS: u64 = 3_600;

pub const DEFAULT_MAX_TASKS: usize = 64;

pub(crate) const MAX_TASK_AFTER_MS: u64 = 60_000;

pub(crate) const MAX_TASK_TTL_SECONDS: u64 = 7 * 86_400;

pub(crate) const MAX_TASKS: u64 = 10_000;

impl Default for McpTasks {
    fn default() -> Self {
        McpTasks {
            after: std::time::Duration::from_millis(DEFAULT_TASK_AFTER_MS),
            ttl: std::time::Duration::from_secs(DEFAULT_TASK_TTL_SECONDS),
            max_running: DEFAULT_MAX_TASKS,
            task_only: Vec::new(),
        }
    }
}

/// The `[mcp]` table. Config owns it, unlike the steps' tables: the MCP
/// server is an edge above config, so it reads the result from `Config`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct McpSection {
    #[serde(default)]
    pub(super) list_denied: bool,
    max_sessions: Option<u64>,
    session_idle_seconds: Option<u64>,
    task_after_ms: Option<u64>,
    task_ttl_seconds: Option<u64>,
    max_tasks: Option<u64>,
    #[serde(default)]
    task_only: Vec<String>,
}

impl McpSection {
    pub(super) const KEYS: &str = "list_denied, max_sessions, session_idle_seconds, task_after_ms, \
                        task_ttl_seconds, max_tasks, task_only";

    pub(super) fn resolve(self) -> Result<(McpSessions, McpTasks), SettingError> {
        let defaults = McpSessions::default();
        let max = bounded(
            "mcp",
            "max_sessions",
            self.max_sessions,
            defaults.max as u64,
            MAX_MCP_SESSIONS,
        )?;
        let idle = bounded(
            "mcp",
            "session_idle_seconds",
            self.session_idle_seconds,
            defaults.idle.as_secs(),
            MAX_SESSION_IDLE_SECONDS,
        )?;
        let after = bounded(
            "mcp",
            "task_after_ms",
            self.task_after_ms,
            DEFAULT_TASK_AFTER_MS,
            MAX_TASK_AFTER_MS,
        )?;
        let ttl = bounded(
            "mcp",
            "task_ttl_seconds",
            self.task_ttl_seconds,
            DEFAULT_TASK_TTL_SECONDS,
            MAX_TASK_TTL_SECONDS,
        )?;
        let max_tasks = bounded(
            "mcp",
            "max_tasks",
            self.max_tasks,
            DEFAULT_MAX_TASKS as u64,
            MAX_TASKS,
        )?;
        Ok((
            McpSessions {
                max: max as usize,
                idle: Duration::from_secs(idle),
            },
            McpTasks {
                after: Duration::from_millis(after),
                ttl: Duration::from_secs(ttl),
                max_running: max_tasks as usize,
                task_only: self.task_only,
            },
        ))
    }
}
