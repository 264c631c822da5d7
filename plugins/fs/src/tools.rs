//! The four tools: their specs and their handlers.

use crate::exports::toolwarden::tool::tool::{Effects, Filesystem, Risk, ToolError, ToolSpec};
use serde_json::{Value, json};
use std::io::{ErrorKind, Read};
use std::path::{Path, PathBuf};

/// Largest file `read_file` returns in one call; larger reads are truncated
/// and say so, so a model never mistakes a prefix for the whole file.
const MAX_READ_BYTES: u64 = 1 << 20;
/// Files larger than this are skipped by `search_text`.
const MAX_SEARCH_FILE_BYTES: u64 = 1 << 20;
const MAX_LIST_ENTRIES: usize = 1000;
const MAX_WRITE_BYTES: u64 = 1 << 20;

pub fn specs() -> Vec<ToolSpec> {
    let path = |what: &str| {
        json!({ "type": "string", "format": "path", "minLength": 1, "maxLength": 4096,
                "description": format!("{what}, relative to the workspace root (e.g. `src/main.rs`).") })
    };
    let read_only = Effects::READ_ONLY | Effects::IDEMPOTENT;
    vec![
        ToolSpec {
            name: "read_file".into(),
            title: "Read a text file".into(),
            description: "Reads a UTF-8 text file from the workspace and returns its content. \
                Use it to look at a file whose path you know. Not for directories (use \
                `list_dir`) or for finding text across files (use `search_text`). Files larger \
                than `max_bytes` are cut off and `truncated` is true."
                .into(),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "path": path("The file to read"),
                    "max_bytes": { "type": "integer", "minimum": 1, "maximum": MAX_READ_BYTES,
                                   "description": "Read at most this many bytes (default 65536)." },
                },
                "required": ["path"],
                "additionalProperties": false,
            })
            .to_string(),
            output_schema: Some(
                json!({
                    "type": "object",
                    "properties": {
                        "path": { "type": "string" },
                        "content": { "type": "string" },
                        "bytes": { "type": "integer", "minimum": 0 },
                        "truncated": { "type": "boolean" },
                    },
                    "required": ["path", "content", "bytes", "truncated"],
                    "additionalProperties": false,
                })
                .to_string(),
            ),
            effects: read_only,
            risk: Risk::Normal,
            filesystem: Filesystem::ReadOnly,
            timeout_ms: Some(2000),
        },
        ToolSpec {
            name: "list_dir".into(),
            title: "List a directory".into(),
            description: "Lists the entries of one workspace directory (not recursive) with \
                their kind and size. Use it to explore the layout before reading files. Use \
                `.` for the workspace root. At most 1000 entries are returned."
                .into(),
            input_schema: json!({
                "type": "object",
                "properties": { "path": path("The directory to list") },
                "required": ["path"],
                "additionalProperties": false,
            })
            .to_string(),
            output_schema: Some(
                json!({
                    "type": "object",
                    "properties": {
                        "entries": { "type": "array", "items": {
                            "type": "object",
                            "properties": {
                                "name": { "type": "string" },
                                "kind": { "enum": ["file", "dir", "symlink", "other"] },
                                "size": { "type": "integer", "minimum": 0 },
                            },
                            "required": ["name", "kind", "size"],
                            "additionalProperties": false,
                        }},
                        "truncated": { "type": "boolean" },
                    },
                    "required": ["entries", "truncated"],
                    "additionalProperties": false,
                })
                .to_string(),
            ),
            effects: read_only,
            risk: Risk::Normal,
            filesystem: Filesystem::ReadOnly,
            timeout_ms: Some(2000),
        },
        ToolSpec {
            name: "search_text".into(),
            title: "Search text in files".into(),
            description: "Finds lines containing a literal string (case-sensitive, not a \
                regex) in the UTF-8 files under a workspace directory, recursively. Use it to \
                find where something is defined or used. Files over 1 MiB are skipped."
                .into(),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "pattern": { "type": "string", "minLength": 1, "maxLength": 1000,
                                 "description": "The literal text to look for." },
                    "path": path("The directory to search"),
                    "max_matches": { "type": "integer", "minimum": 1, "maximum": 1000,
                                     "description": "Stop after this many matches (default 100)." },
                },
                "required": ["pattern", "path"],
                "additionalProperties": false,
            })
            .to_string(),
            output_schema: Some(
                json!({
                    "type": "object",
                    "properties": {
                        "matches": { "type": "array", "items": {
                            "type": "object",
                            "properties": {
                                "path": { "type": "string" },
                                "line": { "type": "integer", "minimum": 1 },
                                "text": { "type": "string" },
                            },
                            "required": ["path", "line", "text"],
                            "additionalProperties": false,
                        }},
                        "truncated": { "type": "boolean" },
                    },
                    "required": ["matches", "truncated"],
                    "additionalProperties": false,
                })
                .to_string(),
            ),
            effects: read_only,
            risk: Risk::Normal,
            filesystem: Filesystem::ReadOnly,
            timeout_ms: Some(5000),
        },
        ToolSpec {
            name: "write_file".into(),
            title: "Write a text file".into(),
            description: "Creates or replaces a UTF-8 text file in the workspace with the given \
                content. Use it to save a change you have decided on. Not for appending or \
                partial edits: the whole file is replaced. Parent directories must exist."
                .into(),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "path": path("The file to write"),
                    "content": { "type": "string", "maxLength": MAX_WRITE_BYTES,
                                 "description": "The complete new content of the file." },
                },
                "required": ["path", "content"],
                "additionalProperties": false,
            })
            .to_string(),
            output_schema: Some(
                json!({
                    "type": "object",
                    "properties": {
                        "path": { "type": "string" },
                        "bytes": { "type": "integer", "minimum": 0 },
                    },
                    "required": ["path", "bytes"],
                    "additionalProperties": false,
                })
                .to_string(),
            ),
            effects: Effects::MUTATES_WORKSPACE | Effects::IDEMPOTENT,
            risk: Risk::Normal,
            filesystem: Filesystem::WorkspaceWrite,
            timeout_ms: Some(2000),
        },
    ]
}

fn str_arg<'a>(args: &'a Value, key: &str) -> Result<&'a str, ToolError> {
    args[key]
        .as_str()
        .ok_or_else(|| ToolError::InvalidArgs(format!("`{key}` must be a string")))
}

fn io_error(path: &str, e: std::io::Error) -> ToolError {
    match e.kind() {
        ErrorKind::NotFound => {
            ToolError::NotFound(format!("`{path}` does not exist in the workspace"))
        }
        _ => ToolError::Failed(format!("`{path}`: {e}")),
    }
}

fn resolve(workspace: &Path, path: &str) -> PathBuf {
    workspace.join(path)
}

pub fn read_file(workspace: &Path, args: &Value) -> Result<Value, ToolError> {
    let path = str_arg(args, "path")?;
    let limit = args["max_bytes"]
        .as_u64()
        .unwrap_or(65536)
        .min(MAX_READ_BYTES);
    let file = std::fs::File::open(resolve(workspace, path)).map_err(|e| io_error(path, e))?;
    let mut buf = Vec::new();
    file.take(limit + 1)
        .read_to_end(&mut buf)
        .map_err(|e| io_error(path, e))?;
    let truncated = buf.len() as u64 > limit;
    buf.truncate(limit as usize);
    let content = match String::from_utf8(buf) {
        Ok(s) => s,
        // A cut may split a character; drop the partial tail instead of failing.
        Err(e) if truncated && e.utf8_error().error_len().is_none() => {
            let valid = e.utf8_error().valid_up_to();
            let mut bytes = e.into_bytes();
            bytes.truncate(valid);
            String::from_utf8(bytes).unwrap_or_default()
        }
        Err(_) => return Err(ToolError::Failed(format!("`{path}` is not UTF-8 text"))),
    };
    Ok(json!({ "path": path, "bytes": content.len(), "content": content, "truncated": truncated }))
}

pub fn list_dir(workspace: &Path, args: &Value) -> Result<Value, ToolError> {
    let path = str_arg(args, "path")?;
    let dir = std::fs::read_dir(resolve(workspace, path)).map_err(|e| io_error(path, e))?;
    let mut entries = Vec::new();
    let mut truncated = false;
    for entry in dir {
        let entry = entry.map_err(|e| io_error(path, e))?;
        if entries.len() == MAX_LIST_ENTRIES {
            truncated = true;
            break;
        }
        let meta = entry.metadata().map_err(|e| io_error(path, e))?;
        let kind = if meta.is_symlink() {
            "symlink"
        } else if meta.is_dir() {
            "dir"
        } else if meta.is_file() {
            "file"
        } else {
            "other"
        };
        entries.push(json!({
            "name": entry.file_name().to_string_lossy(),
            "kind": kind,
            "size": meta.len(),
        }));
    }
    entries.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    Ok(json!({ "entries": entries, "truncated": truncated }))
}

pub fn search_text(workspace: &Path, args: &Value) -> Result<Value, ToolError> {
    let pattern = str_arg(args, "pattern")?;
    let path = str_arg(args, "path")?;
    let max = args["max_matches"].as_u64().unwrap_or(100) as usize;
    let root = resolve(workspace, path);
    let mut matches = Vec::new();
    let mut pending = vec![root.clone()];
    std::fs::metadata(&root).map_err(|e| io_error(path, e))?;
    while let Some(dir) = pending.pop() {
        let Ok(read) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut children: Vec<_> = read.filter_map(Result::ok).collect();
        children.sort_by_key(|e| e.file_name());
        for entry in children {
            let Ok(meta) = entry.metadata() else { continue };
            let child = entry.path();
            if meta.is_dir() {
                pending.push(child);
                continue;
            }
            if !meta.is_file() || meta.len() > MAX_SEARCH_FILE_BYTES {
                continue;
            }
            let Ok(text) = std::fs::read_to_string(&child) else {
                continue;
            };
            let shown = child
                .strip_prefix(workspace)
                .unwrap_or(&child)
                .to_string_lossy()
                .into_owned();
            for (n, line) in text.lines().enumerate() {
                if line.contains(pattern) {
                    if matches.len() == max {
                        return Ok(json!({ "matches": matches, "truncated": true }));
                    }
                    matches.push(json!({ "path": shown, "line": n + 1, "text": line }));
                }
            }
        }
    }
    Ok(json!({ "matches": matches, "truncated": false }))
}

pub fn write_file(workspace: &Path, args: &Value) -> Result<Value, ToolError> {
    let path = str_arg(args, "path")?;
    let content = str_arg(args, "content")?;
    std::fs::write(resolve(workspace, path), content).map_err(|e| io_error(path, e))?;
    Ok(json!({ "path": path, "bytes": content.len() }))
}
