//! Why a plugins directory as a whole cannot be served, with a stable code
//! and a hint each.

use std::path::PathBuf;

/// Why the plugins directory as a whole cannot be served. One plugin that
/// does not load is a [`LoadFailure`] instead: the others still serve.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    #[error("cannot read plugins directory `{}`: {source}", path.display())]
    PluginsDir {
        path: PathBuf,
        source: std::io::Error,
    },

    #[error("tool `{tool}` is declared by two plugins: `{}` and `{}`", first.display(), second.display())]
    DuplicateTool {
        tool: String,
        first: PathBuf,
        second: PathBuf,
    },

    #[error("prompt `{prompt}` is declared by two plugins: `{}` and `{}`", first.display(), second.display())]
    DuplicatePrompt {
        prompt: String,
        first: PathBuf,
        second: PathBuf,
    },

    #[error("resource prefix `{prefix}` overlaps one `{}` claims, claimed by `{}`", first.display(), second.display())]
    ResourceClaim {
        prefix: String,
        first: PathBuf,
        second: PathBuf,
    },
}

impl RegistryError {
    /// Stable machine code. A released code never changes.
    pub fn code(&self) -> &'static str {
        match self {
            RegistryError::PluginsDir { .. } => "PLUGINS_DIR",
            RegistryError::DuplicateTool { .. } => "DUPLICATE_TOOL",
            RegistryError::DuplicatePrompt { .. } => "DUPLICATE_PROMPT",
            RegistryError::ResourceClaim { .. } => "DUPLICATE_RESOURCE_PREFIX",
        }
    }

    pub fn hint(&self) -> String {
        match self {
            RegistryError::PluginsDir { .. } => {
                "pass an existing directory with `--plugins DIR` (or TOOLWARDEN_PLUGINS); \
                 `make plugins` builds the examples into `target/plugins`"
                    .into()
            }
            RegistryError::DuplicateTool { tool, .. } => format!(
                "rename `{tool}` in one plugin or remove one of the files: a tool name must \
                 mean exactly one tool"
            ),
            RegistryError::DuplicatePrompt { prompt, .. } => format!(
                "rename `{prompt}` in one plugin or remove one of the files: a prompt name \
                 must mean exactly one prompt"
            ),
            RegistryError::ResourceClaim { prefix, .. } => format!(
                "give one plugin another prefix than `{prefix}`, or remove one of the files: \
                 a resource URI must belong to exactly one plugin"
            ),
        }
    }
}
