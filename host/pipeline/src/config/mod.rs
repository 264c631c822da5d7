//! Settings: where plugins, workspace and state live, the session's sandbox
//! mode, and every step's section of `toolwarden.toml`, gathered once into
//! a [`Config`] by [`ConfigBuilder::build`].
//!
//! It only gathers: each step owns its section (the table, defaults, bounds
//! and messages); [`file`] reads the file, hands each table to its owner and
//! reports keys nobody claimed; this module places the directories, checks
//! what spans settings (the state and plugins outside a writable workspace,
//! trust in the file) and compiles the policy. No step imports it, and
//! nothing here runs a plugin.

mod auth;
mod builder;
mod file;
mod mcp;
mod private;
mod project;
mod trust;

pub use auth::{AuthSettings, CONSOLE_CALLBACK_PATH, DEFAULT_LEEWAY_SECONDS, is_loopback};
pub use builder::ConfigBuilder;
pub use mcp::{
    DEFAULT_MAX_MCP_SESSIONS, DEFAULT_MAX_TASKS, DEFAULT_SESSION_IDLE_SECONDS,
    DEFAULT_TASK_AFTER_MS, DEFAULT_TASK_TTL_SECONDS, McpSessions, McpTasks,
};
pub use project::{current_project, data_home, default_plugins_dir, project_among};
pub use trust::Standing;

use crate::capability::SandboxMode;
use crate::limits::Limits;

use crate::error::{Error, Untrusted};
use crate::policy::Policy;
use std::path::{Path, PathBuf};

/// The config file looked for in the workspace when none is named.
pub const DEFAULT_CONFIG_FILE: &str = "toolwarden.toml";

/// Everything a host needs, resolved and checked.
#[derive(Debug)]
pub struct Config {
    pub(crate) load_progress: Option<crate::registry::LoadProgress>,
    pub(crate) plugins_dir: PathBuf,
    pub(crate) workspace: PathBuf,
    pub(crate) state_dir: PathBuf,
    pub(crate) config_file: Option<PathBuf>,
    /// The text read from `config_file`: what trust is decided on (never
    /// read again, so the file cannot change between check and use).
    pub(crate) config_text: Option<String>,
    pub(crate) sandbox: SandboxMode,
    pub(crate) limits: Limits,
    pub(crate) policy: Policy,
    /// The compiled rules' fingerprint: approvals are bound to the policy
    /// that asked (see [`Policy::fingerprint`]).
    pub(crate) policy_hash: String,
    pub(crate) approvals: crate::approval::ApprovalSettings,
    pub(crate) redact_keys: Vec<String>,
    pub(crate) audit_durability: crate::audit::Durability,
    pub(crate) audit_batch_window: std::time::Duration,
    pub(crate) audit_retention: crate::audit::Retention,
    pub(crate) budget: crate::guards::Budget,
    /// Calls per caller and tool over windows (`[[rate_limit]]`).
    pub(crate) rate_limits: crate::guards::RateLimits,
    pub(crate) mcp_list_denied: bool,
    pub(crate) mcp_sessions: McpSessions,
    pub(crate) mcp_tasks: McpTasks,
    /// Parallel-safe calls of one turn that may run at once.
    pub(crate) max_parallel: usize,
    /// Which failed calls run again, how often (`[retry]`).
    pub(crate) retry: crate::sandbox::Retry,
    /// How deep and wide a tree of calls may grow (`[compose]`).
    pub(crate) nesting: crate::nesting::Nesting,
    /// How long a keyed call's outcome answers repeats (`[idempotency]`).
    pub(crate) idempotency_window: std::time::Duration,
    /// Whether the workspace's files are `file://` resources (`[resources]`).
    pub(crate) workspace_files: crate::workspace::WorkspaceFiles,
    /// Limits, TLS roots and credentials of every call's requests (what a
    /// call may reach is in `policy`).
    pub(crate) egress: std::sync::Arc<crate::egress::Egress>,
    /// What a plugin file must prove before it loads (`[plugins]`).
    pub(crate) provenance: std::sync::Arc<crate::provenance::Provenance>,
    /// Tool sets sessions may declare (`[profile.NAME]`).
    profiles: crate::profile::Profiles,
    /// The store several hosts share (`[store]`), if any.
    pub(crate) shared_store: Option<crate::store::SharedSettings>,
    /// Who vouches for callers over HTTP (`[auth]`), if anyone does.
    auth: Option<AuthSettings>,
}

impl Config {
    pub fn plugins_dir(&self) -> &Path {
        &self.plugins_dir
    }

    pub fn workspace(&self) -> &Path {
        &self.workspace
    }

    pub fn state_dir(&self) -> &Path {
        &self.state_dir
    }

    /// The config file that was read, if any.
    pub fn config_file(&self) -> Option<&Path> {
        self.config_file.as_deref()
    }

    /// How the config file that was read stands with its trust record
    /// (see [`trust`]); `None` when no file was read.
    pub fn trust_standing(&self) -> Result<Option<Standing>, Error> {
        let (Some(file), Some(text)) = (&self.config_file, &self.config_text) else {
            return Ok(None);
        };
        trust::standing(&self.state_dir, file, text)
            .map(Some)
            .map_err(|source| self.trust_error(source))
    }

    /// Records the config file's text, as it was read, as trusted.
    pub fn trust_config(&self) -> Result<(), Error> {
        let (Some(file), Some(text)) = (&self.config_file, &self.config_text) else {
            return Ok(());
        };
        trust::trust(&self.state_dir, file, text).map_err(|source| self.trust_error(source))
    }

    /// The config text as it was read, if from a file.
    pub fn config_text(&self) -> Option<&str> {
        self.config_text.as_deref()
    }

    /// Refuses a config file that no longer reads as it did when this host
    /// started: a running host does not take on a policy nobody trusted.
    pub(crate) fn still_as_started(&self) -> Result<(), Error> {
        let (Some(file), Some(text)) = (&self.config_file, &self.config_text) else {
            return Ok(());
        };
        match std::fs::read_to_string(file) {
            Ok(now) if now == *text => Ok(()),
            Ok(_) | Err(_) => Err(Error::ConfigUntrusted {
                path: file.clone(),
                why: Untrusted::ChangedSinceStart,
            }),
        }
    }

    fn trust_error(&self, source: std::io::Error) -> Error {
        Error::Directory {
            what: "trust record of the config file",
            path: self.state_dir.join("trusted"),
            source,
        }
    }

    pub fn sandbox(&self) -> SandboxMode {
        self.sandbox
    }

    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// How many MCP sessions over HTTP may be open, and how long one may
    /// sit idle (`[mcp] max_sessions`, `session_idle_seconds`).
    pub fn mcp_sessions(&self) -> McpSessions {
        self.mcp_sessions
    }

    /// How the MCP server runs long calls as tasks (`[mcp] task_*`).
    pub fn mcp_tasks(&self) -> &McpTasks {
        &self.mcp_tasks
    }

    /// The authorization server whose access tokens `serve --http`
    /// accepts (`[auth]`), if one is configured.
    pub fn auth(&self) -> Option<&AuthSettings> {
        self.auth.as_ref()
    }

    /// The wasmtime engine this config describes: its limits, workspace,
    /// compile cache and egress.
    pub fn engine(&self) -> Result<crate::engine::Engine, crate::engine::EngineError> {
        crate::engine::Engine::new(
            &self.workspace,
            &self.state_dir,
            &self.limits,
            std::sync::Arc::clone(&self.egress),
            std::sync::Arc::clone(&self.provenance),
        )
    }

    /// What calls of `tool` may reach: what it declares, narrowed to what
    /// the operator allows its plugin.
    pub fn policy_network(&self, tool: &crate::registry::Tool) -> crate::capability::Network {
        self.policy.network(&tool.spec, tool.plugin.file_name())
    }

    /// Whether MCP `tools/list` also shows tools the policy always denies.
    pub fn mcp_list_denied(&self) -> bool {
        self.mcp_list_denied
    }

    /// The tools a session declaring `profile` (or none) sees and calls.
    pub fn tool_set<'a>(&'a self, profile: Option<&'a str>) -> crate::profile::ToolSet<'a> {
        self.profiles.select(profile)
    }

    /// The prompts a session declaring `profile` (or none) may get.
    pub fn prompt_set<'a>(&'a self, profile: Option<&'a str>) -> crate::profile::ToolSet<'a> {
        self.profiles.select_prompts(profile)
    }

    /// The resource URIs a session declaring `profile` (or none) may read.
    pub fn resource_set<'a>(&'a self, profile: Option<&'a str>) -> crate::profile::ToolSet<'a> {
        self.profiles.select_resources(profile)
    }

    /// The `[profile.NAME]` names the config defines, sorted.
    pub fn profile_names(&self) -> impl Iterator<Item = &str> {
        self.profiles.names()
    }
}

/// Parses config text and compiles its policy, touching no file: what the
/// config fuzz target exercises.
#[cfg(feature = "fuzzing")]
pub(crate) fn parse_policy(text: &str) -> Result<Policy, String> {
    let parsed = file::parse(text).map_err(|e| e.message().to_owned())?;
    Policy::compile(parsed.rules, parsed.network.allowance).map_err(|e| e.message)
}
