//! Host-level errors: problems that are not about one call but stop the host
//! from starting or a plugin from loading. Each has a stable [`Error::code`]
//! and a [`Error::hint`] that tells the person who must act what to do.
//!
//! Sorted by who must act: the operator (config, directories), the plugin
//! author ([`PluginError`]), or us ([`Error::Engine`], a host bug or an
//! unsupported machine).

use crate::engine::PluginError;
use crate::registry::RegistryError;
use std::path::PathBuf;

/// What [`Error::StateInWorkspace`] names for the state directory itself.
pub(crate) const STATE_DIRECTORY: &str = "state directory";

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    #[error("cannot read config file `{}`: {source}", path.display())]
    ConfigRead {
        path: PathBuf,
        source: std::io::Error,
    },

    #[error("invalid config `{}`{}: {message}", path.display(), line.map(|l| format!(" line {l}")).unwrap_or_default())]
    Config {
        path: PathBuf,
        line: Option<usize>,
        message: String,
        hint: String,
    },

    #[error(transparent)]
    Registry(#[from] RegistryError),

    #[error("plugin `{}`: {source}", file.display())]
    Plugin { file: PathBuf, source: PluginError },

    #[error("cannot use {what} `{}`: {source}", path.display())]
    Directory {
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },

    #[error("the {what} `{}` is inside the workspace `{}`", state.display(), workspace.display())]
    StateInWorkspace {
        /// `state directory`, or `audit archive`.
        what: &'static str,
        state: PathBuf,
        workspace: PathBuf,
    },

    #[error("the plugins directory `{}` is inside the workspace `{}`, which this session lets tools write", plugins.display(), workspace.display())]
    PluginsInWorkspace {
        plugins: PathBuf,
        workspace: PathBuf,
    },

    #[error("no {what} was given, and neither HOME nor an XDG directory is set to put one in")]
    NoHome {
        what: &'static str,
        flag: &'static str,
        env: &'static str,
    },

    #[error("the {what} `{}` {problem}", path.display())]
    UnsafePermissions {
        what: &'static str,
        path: PathBuf,
        problem: String,
        fix: String,
    },

    #[error("the config file `{}` is not trusted: {why}", path.display())]
    ConfigUntrusted { path: PathBuf, why: Untrusted },

    #[error("cannot set up the sandbox engine: {0}")]
    Engine(String),

    #[error("{source}")]
    State {
        path: PathBuf,
        source: crate::store::StoreError,
    },

    #[error("{0}")]
    Audit(#[from] crate::audit::AuditError),

    #[error("cannot create the plugin: {message}")]
    Scaffold { message: String, hint: String },

    /// `toolwarden build` could not build a plugin project: a toolchain is
    /// missing, or the build itself failed.
    #[error("cannot build the plugin: {message}")]
    Build { message: String, hint: String },

    #[error("no workspace was named, and `{}` is not a project folder", cwd.display())]
    NoWorkspace {
        /// Where the command was started (the home directory or `/`).
        cwd: PathBuf,
    },

    #[error(
        "none of the folders the MCP client offers as its roots is a project folder (offered: {})",
        list_paths(offered)
    )]
    NoProjectRoot {
        /// The client's roots that are local folders, in its order.
        offered: Vec<PathBuf>,
    },
}

fn list_paths(paths: &[PathBuf]) -> String {
    if paths.is_empty() {
        return "no local folder".into();
    }
    let shown: Vec<String> = paths.iter().map(|p| format!("`{}`", p.display())).collect();
    shown.join(", ")
}

impl Error {
    /// Stable machine code. A released code never changes.
    pub fn code(&self) -> &'static str {
        match self {
            Error::ConfigRead { .. } | Error::Config { .. } => "CONFIG_INVALID",
            Error::Registry(e) => e.code(),
            Error::Plugin { .. } => "PLUGIN_INVALID",
            Error::Directory { .. } => "DIRECTORY",
            Error::StateInWorkspace { .. } => "STATE_IN_WORKSPACE",
            Error::PluginsInWorkspace { .. } => "PLUGINS_IN_WORKSPACE",
            Error::NoHome { .. } => "NO_HOME",
            Error::UnsafePermissions { .. } => "UNSAFE_PERMISSIONS",
            Error::ConfigUntrusted { .. } => "CONFIG_UNTRUSTED",
            Error::Engine(_) => "ENGINE",
            Error::State { .. } => "STATE",
            Error::Audit(_) => "AUDIT",
            Error::Scaffold { .. } => "SCAFFOLD",
            Error::Build { .. } => "BUILD",
            Error::NoWorkspace { .. } | Error::NoProjectRoot { .. } => "NO_WORKSPACE",
        }
    }

    /// What to do about it.
    pub fn hint(&self) -> String {
        match self {
            Error::ConfigRead { .. } => {
                "check the path given by `--config` (or TOOLWARDEN_CONFIG); without it, \
                 `<workspace>/toolwarden.toml` is used when it exists"
                    .into()
            }
            Error::Config { hint, .. } => hint.clone(),
            Error::Registry(e) => e.hint(),
            Error::Plugin { source, .. } => source.hint(),
            Error::Directory { .. } => "check that the directory exists and is writable".into(),
            Error::StateInWorkspace { what, .. } => match *what {
                STATE_DIRECTORY => "name a project folder as the workspace (`--workspace DIR`), \
                     or choose a `--state` directory outside it: a tool that can write the \
                     workspace could otherwise tamper with the host's state"
                    .into(),
                _ => format!(
                    "put the {what} outside the workspace (a relative one sits in the state \
                     directory): a tool that can write the workspace could otherwise tamper with it"
                ),
            },
            Error::PluginsInWorkspace { .. } => {
                "keep `--plugins` outside the workspace: a tool that can write the workspace could \
                 otherwise add a plugin of its own choosing"
                    .into()
            }
            Error::NoHome { flag, env, .. } => format!(
                "pass `{flag} DIR` (or set {env}) to a directory only you can write; the host \
                 never falls back to a shared place such as /tmp"
            ),
            Error::UnsafePermissions { fix, .. } => format!(
                "{fix}; anyone who can write it could plant code or state that the host trusts"
            ),
            Error::ConfigUntrusted { why, .. } => match why {
                Untrusted::NeverTrusted => "read it, then run `toolwarden policy trust` (or pass \
                    `--trust-config`, which trusts a file only the first time it is seen)"
                    .into(),
                Untrusted::Changed => "review the change with `toolwarden policy diff`, then run \
                    `toolwarden policy trust` if it is yours"
                    .into(),
                Untrusted::ChangedSinceStart => "the running host keeps the policy it started \
                    with; review `toolwarden policy diff`, run `toolwarden policy trust`, then \
                    restart it"
                    .into(),
            },
            Error::Engine(_) => {
                "this is a host problem, not a plugin's: please report it with the message".into()
            }
            Error::State { path, .. } => format!(
                "check that `{}` is a writable toolwarden database on a disk with free space; \
                 if it is damaged, move it aside to start a new one (it holds the approvals and the audit log)",
                path.display()
            ),
            Error::Audit(_) => {
                "check that the state directory is writable and its disk has free space; \
                 the call or decision was not recorded"
                    .into()
            }
            Error::Scaffold { hint, .. } | Error::Build { hint, .. } => hint.clone(),
            Error::NoWorkspace { .. } => "toolwarden governs one project folder, which its tools \
                see as /workspace: run it inside that folder, or name it with `--workspace DIR` \
                (or TOOLWARDEN_WORKSPACE). An MCP client starts servers in your home folder or \
                in `/`: `toolwarden mcp-config --client NAME` prints a configuration that names \
                the workspace (a client that offers MCP roots names it itself)"
                .into(),
            Error::NoProjectRoot { .. } => "open a project folder in the client (not your home \
                folder or `/`), or name the workspace in the server's configuration with \
                `--workspace DIR`: `toolwarden mcp-config --client NAME` prints one"
                .into(),
        }
    }
}

impl From<crate::engine::EngineError> for Error {
    fn from(e: crate::engine::EngineError) -> Error {
        Error::Engine(e.0)
    }
}

impl From<crate::workspace::Unopenable> for Error {
    fn from(e: crate::workspace::Unopenable) -> Error {
        Error::Directory {
            what: "workspace",
            path: e.path,
            source: e.source,
        }
    }
}

/// Why a config file is not trusted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Untrusted {
    /// No person trusted it yet.
    NeverTrusted,
    /// It differs from the text a person trusted.
    Changed,
    /// It changed after this host started with it.
    ChangedSinceStart,
}

impl std::fmt::Display for Untrusted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Untrusted::NeverTrusted => "it was never trusted",
            Untrusted::Changed => "it changed since it was trusted",
            Untrusted::ChangedSinceStart => "it changed since this host started",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::{CallError, ErrorCode};

    /// Where each kind of error stands in [`samples`]. A new variant (of
    /// `Error`, `RegistryError` or `PluginError`) does not compile here until
    /// it gets the next position, a sample and its line in the snapshot.
    fn position(e: &Error) -> usize {
        match e {
            Error::ConfigRead { .. } => 0,
            Error::Config { .. } => 1,
            Error::Registry(RegistryError::PluginsDir { .. }) => 2,
            Error::Registry(RegistryError::DuplicateTool { .. }) => 3,
            Error::Registry(RegistryError::DuplicatePrompt { .. }) => 29,
            Error::Registry(RegistryError::ResourceClaim { .. }) => 31,
            Error::Plugin { source, .. } => match source {
                PluginError::Read(_) => 4,
                PluginError::TooLarge { .. } => 5,
                PluginError::NotAComponent(_) => 6,
                PluginError::WrongWorld(_) => 7,
                PluginError::Describe(_) => 8,
                PluginError::Spec { .. } => 9,
                PluginError::TooManyTools { .. } => 10,
                PluginError::Conflict { .. } => 11,
                PluginError::UndeclaredNetwork { .. } => 22,
                PluginError::Unproven { .. } => 23,
                PluginError::FileName => 24,
                PluginError::Prompt { .. } => 28,
                PluginError::Resources { .. } => 30,
            },
            Error::Directory { .. } => 12,
            Error::StateInWorkspace { .. } => 13,
            Error::PluginsInWorkspace { .. } => 14,
            Error::NoHome { .. } => 15,
            Error::UnsafePermissions { .. } => 16,
            Error::ConfigUntrusted { .. } => 17,
            Error::Engine(_) => 18,
            Error::State { .. } => 19,
            Error::Audit(_) => 20,
            Error::Scaffold { .. } => 21,
            Error::NoWorkspace { .. } => 25,
            Error::NoProjectRoot { .. } => 26,
            Error::Build { .. } => 27,
        }
    }

    fn samples() -> Vec<Error> {
        let path = || PathBuf::from("p");
        let io = || std::io::Error::other("x");
        let plugin = |source| Error::Plugin {
            file: path(),
            source,
        };
        vec![
            Error::ConfigRead {
                path: path(),
                source: io(),
            },
            Error::Config {
                path: path(),
                line: Some(1),
                message: "m".into(),
                hint: "h".into(),
            },
            RegistryError::PluginsDir {
                path: path(),
                source: io(),
            }
            .into(),
            RegistryError::DuplicateTool {
                tool: "t".into(),
                first: path(),
                second: path(),
            }
            .into(),
            plugin(PluginError::Read(io())),
            plugin(PluginError::TooLarge { bytes: 2, max: 1 }),
            plugin(PluginError::NotAComponent("m".into())),
            plugin(PluginError::WrongWorld("m".into())),
            plugin(PluginError::Describe(CallError::new(
                ErrorCode::Timeout,
                "m",
            ))),
            plugin(PluginError::Spec {
                tool: "t".into(),
                problem: "m".into(),
            }),
            plugin(PluginError::TooManyTools {
                declared: 2,
                max: 1,
                key: "k",
            }),
            plugin(PluginError::Conflict {
                tool: "t".into(),
                other: path(),
            }),
            Error::Directory {
                what: "w",
                path: path(),
                source: io(),
            },
            Error::StateInWorkspace {
                what: STATE_DIRECTORY,
                state: path(),
                workspace: path(),
            },
            Error::PluginsInWorkspace {
                plugins: path(),
                workspace: path(),
            },
            Error::NoHome {
                what: "w",
                flag: "--f",
                env: "E",
            },
            Error::UnsafePermissions {
                what: "w",
                path: path(),
                problem: "m".into(),
                fix: "f".into(),
            },
            Error::ConfigUntrusted {
                path: path(),
                why: Untrusted::Changed,
            },
            Error::Engine("m".into()),
            Error::State {
                path: path(),
                source: crate::store::StoreError {
                    path: path(),
                    source: rusqlite::Error::QueryReturnedNoRows.into(),
                },
            },
            Error::Audit(crate::audit::AuditError("m".into())),
            Error::Scaffold {
                message: "m".into(),
                hint: "h".into(),
            },
            plugin(PluginError::UndeclaredNetwork {
                import: "wasi:http/outgoing-handler".into(),
            }),
            plugin(PluginError::Unproven {
                reason: "r".into(),
                fix: "f".into(),
            }),
            plugin(PluginError::FileName),
            Error::NoWorkspace { cwd: path() },
            Error::NoProjectRoot {
                offered: vec![path()],
            },
            Error::Build {
                message: "m".into(),
                hint: "h".into(),
            },
            plugin(PluginError::Prompt {
                prompt: "p".into(),
                problem: "x".into(),
            }),
            Error::Registry(RegistryError::DuplicatePrompt {
                prompt: "p".into(),
                first: path(),
                second: path(),
            }),
            plugin(PluginError::Resources {
                problem: "x".into(),
            }),
            Error::Registry(RegistryError::ResourceClaim {
                prefix: "p".into(),
                first: path(),
                second: path(),
            }),
        ]
    }

    /// Every host error code, by kind of error. A released code never
    /// changes: this snapshot changes only by adding lines.
    const SNAPSHOT: &str = "\
        config read: CONFIG_INVALID\n\
        config: CONFIG_INVALID\n\
        plugins dir: PLUGINS_DIR\n\
        duplicate tool: DUPLICATE_TOOL\n\
        plugin read: PLUGIN_INVALID\n\
        plugin too large: PLUGIN_INVALID\n\
        not a component: PLUGIN_INVALID\n\
        wrong world: PLUGIN_INVALID\n\
        describe failed: PLUGIN_INVALID\n\
        bad spec: PLUGIN_INVALID\n\
        too many tools: PLUGIN_INVALID\n\
        tool conflict: PLUGIN_INVALID\n\
        directory: DIRECTORY\n\
        state in workspace: STATE_IN_WORKSPACE\n\
        plugins in workspace: PLUGINS_IN_WORKSPACE\n\
        no home: NO_HOME\n\
        unsafe permissions: UNSAFE_PERMISSIONS\n\
        config untrusted: CONFIG_UNTRUSTED\n\
        engine: ENGINE\n\
        state: STATE\n\
        audit: AUDIT\n\
        scaffold: SCAFFOLD\n\
        undeclared network: PLUGIN_INVALID\n\
        unproven: PLUGIN_INVALID\n\
        file name: PLUGIN_INVALID\n\
        no workspace: NO_WORKSPACE\n\
        no project root: NO_WORKSPACE\n\
        build: BUILD\n\
        bad prompt: PLUGIN_INVALID\n\
        duplicate prompt: DUPLICATE_PROMPT\n\
        bad resources: PLUGIN_INVALID\n\
        resource claim: DUPLICATE_RESOURCE_PREFIX\n";

    #[test]
    fn every_host_error_has_a_stable_code_and_a_hint() {
        let samples = samples();
        let kinds: Vec<&str> = SNAPSHOT
            .lines()
            .map(|l| l.split(':').next().unwrap())
            .collect();
        assert_eq!(
            samples.len(),
            kinds.len(),
            "one sample per line of the snapshot"
        );
        let mut listed = String::new();
        for (i, error) in samples.iter().enumerate() {
            assert_eq!(position(error), i, "sample {i} is out of place: {error}");
            assert!(!error.hint().is_empty(), "{error} has no hint");
            listed.push_str(&format!("{}: {}\n", kinds[i], error.code()));
        }
        assert_eq!(listed, SNAPSHOT);
    }
}
