//! Argument types whose schema tells the host what they are: a workspace
//! path (`format: path`, checked by the host's path guard) and a web URL
//! (`format: uri`, read canonically and held to the policy's URL rules).

use crate::{Context, ToolError};
use serde::Serialize;
use std::path::PathBuf;

/// A path argument relative to the workspace root. Its schema carries
/// `format: path`, so the host's path guard checks it before the call runs;
/// the sandbox's preopen keeps the access inside the workspace regardless.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize, Serialize)]
#[serde(transparent)]
pub struct WorkspacePath(String);

impl WorkspacePath {
    /// The path as the model wrote it.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The path joined onto the workspace this call was granted.
    pub fn resolve(&self, ctx: &Context) -> Result<PathBuf, ToolError> {
        Ok(ctx.workspace()?.join(&self.0))
    }
}

impl std::fmt::Display for WorkspacePath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl schemars::JsonSchema for WorkspacePath {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "WorkspacePath".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "format": "path",
            "minLength": 1,
            "maxLength": 4096,
        })
    }

    fn inline_schema() -> bool {
        true
    }
}

/// An `http(s)` URL argument. Its schema carries `format: uri`, so before
/// the call runs the host reads it as browsers do, hands the tool that
/// canonical form, and refuses a URL whose origin the call is not granted
/// (the host checks every request the tool sends as well).
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize, Serialize)]
#[serde(transparent)]
pub struct WebUrl(String);

impl WebUrl {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for WebUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl schemars::JsonSchema for WebUrl {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "WebUrl".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "format": "uri",
            "minLength": 1,
            "maxLength": 8192,
        })
    }

    fn inline_schema() -> bool {
        true
    }
}
