//! Why the engine cannot start, and why one plugin cannot be loaded.

use crate::outcome::CallError;
use std::path::PathBuf;

/// The engine cannot be set up (an unsupported machine or a host bug).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct EngineError(pub String);

impl EngineError {
    pub(super) fn from_wasmtime(e: wasmtime::Error) -> EngineError {
        EngineError(format!("{e:#}"))
    }
}

/// Why one plugin file could not be loaded. The other plugins still load.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PluginError {
    #[error("cannot read the file: {0}")]
    Read(std::io::Error),

    #[error("the file is {bytes} bytes; plugins may be at most {max} bytes")]
    TooLarge { bytes: u64, max: u64 },

    #[error("not a valid WebAssembly component: {0}")]
    NotAComponent(String),

    #[error("does not fit the `toolwarden:tool/plugin` world: {0}")]
    WrongWorld(String),

    #[error("`tools()` failed: {0}")]
    Describe(CallError),

    #[error("tool `{tool}`: {problem}")]
    Spec { tool: String, problem: String },

    #[error("prompt `{prompt}`: {problem}")]
    Prompt { prompt: String, problem: String },

    #[error("its resources: {problem}")]
    Resources { problem: String },

    #[error("declares {declared} tools; a plugin may declare at most {max} (`limits.{key}`)")]
    TooManyTools {
        declared: usize,
        max: usize,
        key: &'static str,
    },

    #[error("tool `{tool}` is already served by `{}`", other.display())]
    Conflict { tool: String, other: PathBuf },

    #[error("imports `{import}`, but none of its tools declares `network`")]
    UndeclaredNetwork { import: String },

    #[error("its origin is not proven: {reason}")]
    Unproven { reason: String, fix: String },

    #[error("its file name holds control characters or direction overrides")]
    FileName,
}

impl PluginError {
    pub fn hint(&self) -> String {
        match self {
            PluginError::Read(_) => "check the file's permissions".into(),
            PluginError::TooLarge { .. } => {
                "strip debug info (`strip = true` in the profile)".into()
            }
            PluginError::NotAComponent(_) => {
                "build the plugin with `cargo build --release --target wasm32-wasip2`; a core \
                 module or a truncated file is not a component"
                    .into()
            }
            PluginError::WrongWorld(_) => {
                "build against `wit/tool.wit` (world `plugin`, `toolwarden:tool@0.3.0`; \
                 0.2.0 and 0.1.0 plugins load too); a plugin may import only `toolwarden:tool/host` and \
                 WASI interfaces"
                    .into()
            }
            PluginError::Describe(_) => {
                "`tools()` must return the specs without touching the filesystem; run \
                 `toolwarden inspect FILE.wasm` to see the failure"
                    .into()
            }
            PluginError::Spec { .. } => {
                "fix the tool's spec; `wit/tool.wit` documents every field".into()
            }
            PluginError::Resources { .. } => {
                "fix the plugin's resource catalog; `interface resources` in `wit/tool.wit` \
                 documents every field"
                    .into()
            }
            PluginError::Prompt { .. } => {
                "fix the prompt's declaration; `interface prompts` in `wit/tool.wit` documents \
                 every field"
                    .into()
            }
            PluginError::TooManyTools { key, .. } => format!(
                "split the plugin, or raise `{key}` in `[limits]` if the operator trusts it"
            ),
            PluginError::Conflict { tool, .. } => format!(
                "rename `{tool}` in the new plugin, or remove the plugin that serves it first"
            ),
            PluginError::Unproven { fix, .. } => fix.clone(),
            PluginError::FileName => {
                "rename the file to a plain name, e.g. `tool.wasm`: a newline or an escape in \
                 it would forge what `list` and the logs print"
                    .into()
            }
            PluginError::UndeclaredNetwork { .. } => {
                "declare the origins the tool reaches in its spec (`network` in \
                 `toolwarden:tool`, `.network(&[...])` in the Rust SDK); a plugin that \
                 reaches no network must not import `wasi:http`"
                    .into()
            }
        }
    }
}
