//! `fs`: read, list, search and write files in the agent's workspace.
//!
//! Paths are joined onto the workspace's guest path and handed to WASI as they
//! are: the plugin does not try to police `..`, absolute paths or symlinks,
//! because the sandbox (a preopen of exactly the workspace, with the granted
//! permissions) is what keeps every access inside, and tests prove it with
//! this very plugin.

wit_bindgen::generate!({ path: "../../wit", world: "plugin" });

mod tools;

use exports::toolwarden::tool::tool::{CallContext, Guest, ToolError, ToolOutput, ToolSpec};
use serde_json::Value;
use std::path::PathBuf;

struct Fs;

impl Guest for Fs {
    fn tools() -> Vec<ToolSpec> {
        tools::specs()
    }

    fn invoke(name: String, args_json: String, ctx: CallContext) -> Result<ToolOutput, ToolError> {
        let args: Value = serde_json::from_str(&args_json)
            .map_err(|e| ToolError::InvalidArgs(format!("arguments are not JSON: {e}")))?;
        let workspace = ctx
            .workspace
            .map(PathBuf::from)
            .ok_or_else(|| ToolError::Failed("no workspace was granted to this call".into()))?;
        let value = match name.as_str() {
            "read_file" => tools::read_file(&workspace, &args)?,
            "list_dir" => tools::list_dir(&workspace, &args)?,
            "search_text" => tools::search_text(&workspace, &args)?,
            "write_file" => tools::write_file(&workspace, &args)?,
            other => {
                return Err(ToolError::NotFound(format!(
                    "this plugin has no tool `{other}`"
                )));
            }
        };
        Ok(ToolOutput {
            value: value.to_string(),
            text: None,
        })
    }
}

export!(Fs);
