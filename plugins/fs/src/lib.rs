//! `fs`: read, list, search and write files in the agent's workspace.
//!
//! Paths are joined onto the workspace's guest path and handed to WASI as they
//! are: the plugin does not try to police `..`, absolute paths or symlinks,
//! because the sandbox (a preopen of exactly the workspace, with the granted
//! permissions) is what keeps every access inside, and tests prove it with
//! this very plugin.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::io::{ErrorKind, Read};
use toolwarden_plugin::{
    Context, Effects, Filesystem, Presentation, Risk, Tool, ToolError, View, WorkspacePath,
};

/// Largest file `read_file` returns in one call; larger reads are truncated
/// and say so, so a model never mistakes a prefix for the whole file.
const MAX_READ_BYTES: u64 = 1 << 20;
const DEFAULT_READ_BYTES: u64 = 65536;
/// Files larger than this are skipped by `search_text`.
const MAX_SEARCH_FILE_BYTES: u64 = 1 << 20;
const MAX_LIST_ENTRIES: usize = 1000;
const MAX_WRITE_BYTES: u32 = 1 << 20;

pub fn tools() -> Vec<Tool> {
    let read_only = Effects::READ_ONLY | Effects::IDEMPOTENT;
    vec![
        Tool::new(
            "read_file",
            "Reads a UTF-8 text file from the workspace and returns its content. Use it to look \
             at a file whose path you know. Not for directories (use `list_dir`) or for finding \
             text across files (use `search_text`). Files larger than `max_bytes` are cut off \
             and `truncated` is true.",
            read_file,
        )
        .title("Read a text file")
        .show_result(|args: ReadArgs, read: FileContent| {
            let cut = if read.truncated { ", cut" } else { "" };
            Some(Presentation {
                view: View::Read,
                title: format!("read {} ({} bytes{cut})", args.path, read.bytes),
                path: Some(read.path),
                body: read.content,
            })
        })
        .effects(read_only)
        .filesystem(Filesystem::ReadOnly)
        .timeout_ms(2000),
        Tool::new(
            "list_dir",
            "Lists the entries of one workspace directory (not recursive) with their kind and \
             size. Use it to explore the layout before reading files. Use `.` for the workspace \
             root. At most 1000 entries are returned.",
            list_dir,
        )
        .title("List a directory")
        .effects(read_only)
        .filesystem(Filesystem::ReadOnly)
        .timeout_ms(2000),
        Tool::new(
            "search_text",
            "Finds lines containing a literal string (case-sensitive, not a regex) in the UTF-8 \
             files under a workspace directory, recursively. Use it to find where something is \
             defined or used. Files over 1 MiB are skipped.",
            search_text,
        )
        .title("Search text in files")
        .show_result(|args: SearchArgs, found: Matches| {
            let more = if found.truncated {
                " (more not shown)"
            } else {
                ""
            };
            let lines: Vec<String> = found
                .matches
                .iter()
                .map(|m| format!("{}:{}: {}", m.path, m.line, m.text))
                .collect();
            Some(Presentation {
                view: View::Search,
                title: format!(
                    "`{}` under {}: {} matches{more}",
                    args.pattern,
                    args.path,
                    found.matches.len()
                ),
                path: None,
                body: lines.join("\n"),
            })
        })
        .effects(read_only)
        .filesystem(Filesystem::ReadOnly)
        .timeout_ms(5000),
        Tool::new(
            "write_file",
            "Creates or replaces a UTF-8 text file in the workspace with the given content. Use \
             it to save a change you have decided on. Not for appending or partial edits: the \
             whole file is replaced. Parent directories must exist.",
            write_file,
        )
        .title("Write a text file")
        .preview(|args: WriteArgs, _| {
            Some(Presentation {
                view: View::Diff,
                title: format!("write {} bytes to {}", args.content.len(), args.path),
                path: Some(args.path.to_string()),
                body: args.content,
            })
        })
        .effects(Effects::MUTATES_WORKSPACE | Effects::IDEMPOTENT)
        .risk(Risk::Normal)
        .filesystem(Filesystem::WorkspaceWrite)
        .timeout_ms(2000),
    ]
}

toolwarden_plugin::export!(tools);

fn io_error(path: &WorkspacePath, e: std::io::Error) -> ToolError {
    match e.kind() {
        ErrorKind::NotFound => {
            ToolError::NotFound(format!("`{path}` does not exist in the workspace"))
        }
        _ => ToolError::Failed(format!("`{path}`: {e}")),
    }
}

#[derive(Deserialize, JsonSchema)]
struct ReadArgs {
    /// The file to read, relative to the workspace root (e.g. `src/main.rs`).
    path: WorkspacePath,
    /// Read at most this many bytes (default 65536).
    #[schemars(range(min = 1, max = MAX_READ_BYTES))]
    max_bytes: Option<u64>,
}

#[derive(Serialize, Deserialize, JsonSchema)]
struct FileContent {
    path: String,
    content: String,
    bytes: usize,
    truncated: bool,
}

fn read_file(args: ReadArgs, ctx: &Context) -> Result<FileContent, ToolError> {
    let path = &args.path;
    let limit = args
        .max_bytes
        .unwrap_or(DEFAULT_READ_BYTES)
        .min(MAX_READ_BYTES);
    let file = std::fs::File::open(path.resolve(ctx)?).map_err(|e| io_error(path, e))?;
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
    Ok(FileContent {
        path: path.to_string(),
        bytes: content.len(),
        content,
        truncated,
    })
}

#[derive(Deserialize, JsonSchema)]
struct ListArgs {
    /// The directory to list, relative to the workspace root (`.` for the root).
    path: WorkspacePath,
}

#[derive(Serialize, JsonSchema)]
struct Listing {
    entries: Vec<Entry>,
    truncated: bool,
}

#[derive(Serialize, JsonSchema)]
struct Entry {
    name: String,
    kind: Kind,
    size: u64,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Kind {
    File,
    Dir,
    Symlink,
    Other,
}

fn list_dir(args: ListArgs, ctx: &Context) -> Result<Listing, ToolError> {
    let path = &args.path;
    let dir = std::fs::read_dir(path.resolve(ctx)?).map_err(|e| io_error(path, e))?;
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
            Kind::Symlink
        } else if meta.is_dir() {
            Kind::Dir
        } else if meta.is_file() {
            Kind::File
        } else {
            Kind::Other
        };
        entries.push(Entry {
            name: entry.file_name().to_string_lossy().into_owned(),
            kind,
            size: meta.len(),
        });
    }
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(Listing { entries, truncated })
}

#[derive(Deserialize, JsonSchema)]
struct SearchArgs {
    /// The literal text to look for.
    #[schemars(length(min = 1, max = 1000))]
    pattern: String,
    /// The directory to search, relative to the workspace root.
    path: WorkspacePath,
    /// Stop after this many matches (default 100).
    #[schemars(range(min = 1, max = 1000))]
    max_matches: Option<u32>,
}

#[derive(Serialize, Deserialize, JsonSchema)]
struct Matches {
    matches: Vec<Match>,
    truncated: bool,
}

#[derive(Serialize, Deserialize, JsonSchema)]
struct Match {
    path: String,
    #[schemars(range(min = 1))]
    line: usize,
    text: String,
}

fn search_text(args: SearchArgs, ctx: &Context) -> Result<Matches, ToolError> {
    let workspace = ctx.workspace()?;
    let max = args.max_matches.unwrap_or(100) as usize;
    let root = args.path.resolve(ctx)?;
    std::fs::metadata(&root).map_err(|e| io_error(&args.path, e))?;
    let mut matches = Vec::new();
    let mut pending = vec![root];
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
                if line.contains(&args.pattern) {
                    if matches.len() == max {
                        return Ok(Matches {
                            matches,
                            truncated: true,
                        });
                    }
                    matches.push(Match {
                        path: shown.clone(),
                        line: n + 1,
                        text: line.to_owned(),
                    });
                }
            }
        }
    }
    Ok(Matches {
        matches,
        truncated: false,
    })
}

#[derive(Deserialize, JsonSchema)]
struct WriteArgs {
    /// The file to write, relative to the workspace root.
    path: WorkspacePath,
    /// The complete new content of the file.
    #[schemars(length(max = MAX_WRITE_BYTES))]
    content: String,
}

#[derive(Serialize, JsonSchema)]
struct Written {
    path: String,
    bytes: usize,
}

fn write_file(args: WriteArgs, ctx: &Context) -> Result<Written, ToolError> {
    let path = &args.path;
    std::fs::write(path.resolve(ctx)?, &args.content).map_err(|e| io_error(path, e))?;
    Ok(Written {
        path: path.to_string(),
        bytes: args.content.len(),
    })
}
