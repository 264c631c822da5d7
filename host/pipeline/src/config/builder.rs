//! Gathering a [`Config`]: the directories placed and made canonical, the
//! file found, read and trusted (or not), every section handed to its
//! owner, and what spans settings checked (the state and plugins outside a
//! writable workspace).

use super::project::{default_plugins_dir, state_home};
use super::{Config, DEFAULT_CONFIG_FILE, file, private};
use crate::capability::SandboxMode;
use crate::error::Error;
use crate::policy::Policy;
use std::path::{Path, PathBuf};

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
            audit_batch_window: parsed.audit.batch_window,
            audit_retention,
            budget: parsed.budget,
            rate_limits: parsed.rate_limits,
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
            auth: parsed.auth,
            workspace_files: parsed.workspace_files,
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
