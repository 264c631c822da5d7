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

mod file;
mod private;
mod project;
mod trust;

use project::state_home;
pub use project::{current_project, data_home, default_plugins_dir, project_among};
pub use trust::Standing;

use crate::capability::SandboxMode;
use crate::limits::Limits;

use crate::error::{Error, Untrusted};
use crate::policy::Policy;
use std::path::{Path, PathBuf};

/// The config file looked for in the workspace when none is named.
pub const DEFAULT_CONFIG_FILE: &str = "toolwarden.toml";

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
    pub(crate) audit_retention: crate::audit::Retention,
    pub(crate) budget: crate::guards::Budget,
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
    /// Limits, TLS roots and credentials of every call's requests (what a
    /// call may reach is in `policy`).
    pub(crate) egress: std::sync::Arc<crate::egress::Egress>,
    /// What a plugin file must prove before it loads (`[plugins]`).
    pub(crate) provenance: std::sync::Arc<crate::provenance::Provenance>,
    /// Tool sets sessions may declare (`[profile.NAME]`).
    profiles: crate::profile::Profiles,
    /// The store several hosts share (`[store]`), if any.
    pub(crate) shared_store: Option<crate::store::SharedSettings>,
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

    /// The `[profile.NAME]` names the config defines, sorted.
    pub fn profile_names(&self) -> impl Iterator<Item = &str> {
        self.profiles.names()
    }
}

/// Where the policy and limits come from.
#[derive(Clone, Debug, Default)]
enum Source {
    /// `<workspace>/toolwarden.toml` if it exists, else no rules (deny all).
    #[default]
    WorkspaceDefault,
    /// A file the user named: it must exist.
    File(PathBuf),
    /// Config text given directly (library use and tests).
    Text(String),
}

/// Builds a [`Config`]. Every setting has a safe default.
#[derive(Clone, Debug)]
pub struct ConfigBuilder {
    workspace: PathBuf,
    plugins_dir: Option<PathBuf>,
    state_dir: Option<PathBuf>,
    source: Source,
    sandbox: SandboxMode,
    load_progress: Option<crate::registry::LoadProgress>,
}

impl ConfigBuilder {
    /// Starts from a workspace directory. Defaults: plugins from
    /// `$XDG_DATA_HOME/toolwarden/plugins`, state in
    /// `$XDG_STATE_HOME/toolwarden`, policy from `<workspace>/toolwarden.toml`
    /// (no file: every call denied), sandbox mode `read-only`.
    pub fn new(workspace: impl Into<PathBuf>) -> Self {
        ConfigBuilder {
            workspace: workspace.into(),
            plugins_dir: None,
            state_dir: None,
            source: Source::default(),
            sandbox: SandboxMode::default(),
            load_progress: None,
        }
    }

    pub fn plugins_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.plugins_dir = Some(dir.into());
        self
    }

    pub fn state_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.state_dir = Some(dir.into());
        self
    }

    /// Reads policy and limits from this file, which must exist.
    pub fn config_file(mut self, file: impl Into<PathBuf>) -> Self {
        self.source = Source::File(file.into());
        self
    }

    /// Uses this TOML text as the config file.
    pub fn config_text(mut self, text: impl Into<String>) -> Self {
        self.source = Source::Text(text.into());
        self
    }

    pub fn sandbox(mut self, mode: SandboxMode) -> Self {
        self.sandbox = mode;
        self
    }

    /// Told (plugins loaded, of how many) as a host starting on this
    /// config loads its plugins: compiling one never seen takes a while.
    pub fn load_progress(
        mut self,
        progress: impl Fn(usize, usize) + Send + Sync + 'static,
    ) -> Self {
        self.load_progress = Some(crate::registry::LoadProgress(std::sync::Arc::new(progress)));
        self
    }

    pub fn build(self) -> Result<Config, Error> {
        let workspace = canonical_dir("workspace", &self.workspace)?;
        let (config_file, text) = match self.source {
            Source::WorkspaceDefault => {
                let path = workspace.join(DEFAULT_CONFIG_FILE);
                match std::fs::read_to_string(&path) {
                    Ok(text) => (Some(path), text),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                        tracing::warn!(
                            "no `{}` found: no policy rules, so every call is denied",
                            path.display()
                        );
                        (None, String::new())
                    }
                    Err(source) => return Err(Error::ConfigRead { path, source }),
                }
            }
            Source::File(path) => match std::fs::read_to_string(&path) {
                Ok(text) => (Some(path), text),
                Err(source) => return Err(Error::ConfigRead { path, source }),
            },
            Source::Text(text) => (None, text),
        };
        let config_text = config_file.as_ref().map(|_| text.clone());
        let shown = config_file
            .clone()
            .unwrap_or_else(|| PathBuf::from("<config>"));
        let parsed = file::parse(&text).map_err(|e| e.at(&shown))?;
        let policy =
            Policy::compile(parsed.rules, parsed.network.allowance).map_err(|e| Error::Config {
                path: shown.clone(),
                line: e.line,
                message: e.message,
                hint: e.hint,
            })?;
        let egress = crate::egress::Egress::new(
            parsed.network.limits,
            parsed.credentials,
            parsed.network.extra_roots,
        );

        let plugins_dir = match self.plugins_dir {
            Some(dir) => dir,
            // The default directory is the host's own: made on first use
            // (private), so a fresh install lists no tools instead of failing.
            None => {
                let dir = default_plugins_dir()?;
                crate::private_file::create_dir(&dir).map_err(|source| Error::Directory {
                    what: "plugins directory",
                    path: dir.clone(),
                    source,
                })?;
                dir
            }
        };
        let state_dir = match self.state_dir {
            Some(dir) => dir,
            None => state_home()?,
        };
        crate::private_file::create_dir(&state_dir).map_err(|source| Error::Directory {
            what: "state directory",
            path: state_dir.clone(),
            source,
        })?;
        let state_dir = canonical_dir("state directory", &state_dir)?;
        private::state_dir(&state_dir)?;
        private::not_shared("plugins directory", &plugins_dir)?;
        // A tool that can write the workspace could plant a plugin that the
        // host would load (at once, with hot reload).
        if self.sandbox == SandboxMode::WorkspaceWrite
            && let Ok(plugins) = std::fs::canonicalize(&plugins_dir)
            && plugins.starts_with(&workspace)
        {
            return Err(Error::PluginsInWorkspace { plugins, workspace });
        }
        if state_dir.starts_with(&workspace) {
            return Err(Error::StateInWorkspace {
                what: crate::error::STATE_DIRECTORY,
                state: state_dir,
                workspace,
            });
        }
        let mut audit_retention = parsed.audit.retention;
        if let Some(dir) = &audit_retention.archive_dir {
            // A relative archive sits in the state directory; one in the
            // workspace would let tools rewrite the records taken out.
            // Created now, so its real path is what is checked.
            let dir = state_dir.join(dir);
            let existed = dir.exists();
            crate::private_file::create_dir(&dir).map_err(|source| Error::Directory {
                what: "audit archive",
                path: dir.clone(),
                source,
            })?;
            let made = dir.clone();
            let dir = canonical_dir("audit archive", &dir)?;
            if dir.starts_with(&workspace) {
                if !existed {
                    let _ = std::fs::remove_dir(&made);
                }
                return Err(Error::StateInWorkspace {
                    what: "audit archive",
                    state: dir,
                    workspace,
                });
            }
            audit_retention.archive_dir = Some(dir);
        }
        Ok(Config {
            load_progress: self.load_progress,
            plugins_dir,
            workspace,
            state_dir,
            config_file,
            config_text,
            sandbox: self.sandbox,
            limits: parsed.limits,
            policy_hash: policy.fingerprint(),
            policy,
            approvals: parsed.approvals,
            redact_keys: parsed.audit.redact_keys,
            audit_durability: parsed.audit.durability,
            audit_retention,
            budget: parsed.budget,
            mcp_list_denied: parsed.mcp_list_denied,
            mcp_tasks: parsed.mcp_tasks,
            mcp_sessions: parsed.mcp_sessions,
            max_parallel: parsed.max_parallel,
            retry: parsed.retry,
            nesting: parsed.nesting,
            idempotency_window: parsed.idempotency_window,
            egress: std::sync::Arc::new(egress),
            provenance: std::sync::Arc::new(parsed.provenance),
            profiles: parsed.profiles,
            shared_store: parsed.store,
        })
    }
}

fn canonical_dir(what: &'static str, path: &Path) -> Result<PathBuf, Error> {
    let canonical = std::fs::canonicalize(path).map_err(|source| Error::Directory {
        what,
        path: path.to_owned(),
        source,
    })?;
    if !canonical.is_dir() {
        return Err(Error::Directory {
            what,
            path: path.to_owned(),
            source: std::io::Error::new(std::io::ErrorKind::NotADirectory, "not a directory"),
        });
    }
    Ok(canonical)
}

/// Parses config text and compiles its policy, touching no file: what the
/// config fuzz target exercises.
#[cfg(feature = "fuzzing")]
pub(crate) fn parse_policy(text: &str) -> Result<Policy, String> {
    let parsed = file::parse(text).map_err(|e| e.message().to_owned())?;
    Policy::compile(parsed.rules, parsed.network.allowance).map_err(|e| e.message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sandbox_mode_defaults_to_read_only() {
        assert_eq!(SandboxMode::default(), SandboxMode::ReadOnly);
        assert_eq!("workspace-write".parse(), Ok(SandboxMode::WorkspaceWrite));
        assert!(
            "full"
                .parse::<SandboxMode>()
                .unwrap_err()
                .contains("read-only")
        );
    }

    #[test]
    fn state_dir_inside_workspace_is_refused() {
        let ws = tempfile::tempdir().unwrap();
        let err = ConfigBuilder::new(ws.path())
            .state_dir(ws.path().join(".state"))
            .config_text("")
            .build()
            .unwrap_err();
        assert_eq!(err.code(), "STATE_IN_WORKSPACE");
    }

    #[test]
    fn plugins_inside_a_writable_workspace_are_refused() {
        let ws = tempfile::tempdir().unwrap();
        let state = tempfile::tempdir().unwrap();
        std::fs::create_dir(ws.path().join("plugins")).unwrap();
        let build = |mode| {
            ConfigBuilder::new(ws.path())
                .plugins_dir(ws.path().join("plugins"))
                .state_dir(state.path())
                .config_text("")
                .sandbox(mode)
                .build()
        };
        assert_eq!(
            build(SandboxMode::WorkspaceWrite).unwrap_err().code(),
            "PLUGINS_IN_WORKSPACE"
        );
        assert!(
            build(SandboxMode::ReadOnly).is_ok(),
            "nothing can write them in a read-only session"
        );
    }

    #[test]
    fn a_named_config_file_must_exist() {
        let ws = tempfile::tempdir().unwrap();
        let state = tempfile::tempdir().unwrap();
        let err = ConfigBuilder::new(ws.path())
            .state_dir(state.path())
            .config_file(ws.path().join("missing.toml"))
            .build()
            .unwrap_err();
        assert_eq!(err.code(), "CONFIG_INVALID");
    }
}
