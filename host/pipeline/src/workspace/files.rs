//! The workspace's files as `file://` resources, off unless the config says
//! `[resources] workspace = true`: a file's URI, where a `file:` URI leads
//! (resolved as a path argument is, by [`Workspace::place`]: inside the
//! workspace only, links followed only inside it, never to the host's own
//! files), a bounded listing, and a file's bytes read under the workspace's
//! shared lease. Never decides whether a session may read a file: the
//! policy's resource rules do, on where the URI leads and on how it was
//! written.

use super::{Place, Workspace};
use crate::settings::{SettingError, bounded};
use serde::Deserialize;

/// Files a listing shows when `max_listed` is left out, and at most.
pub const DEFAULT_MAX_LISTED: u64 = 256;
const MAX_LISTED: u64 = 10_000;
/// Directory entries one listing looks at: a huge workspace is listed in
/// part rather than walked whole on every `resources/list`.
const MAX_SCANNED: usize = 20_000;

/// The `[resources]` table as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResourcesSection {
    workspace: Option<bool>,
    max_listed: Option<u64>,
}

/// Whether the workspace's files are resources, and how many are listed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WorkspaceFiles {
    pub offered: bool,
    pub max_listed: usize,
}

impl ResourcesSection {
    pub const KEYS: &str = "workspace, max_listed";

    pub fn resolve(self) -> Result<WorkspaceFiles, SettingError> {
        let max_listed = bounded(
            "resources",
            "max_listed",
            self.max_listed,
            DEFAULT_MAX_LISTED,
            MAX_LISTED,
        )?;
        Ok(WorkspaceFiles {
            offered: self.workspace.unwrap_or(false),
            max_listed: max_listed as usize,
        })
    }
}

/// Whether `uri` is a `file:` URI, whatever its case.
pub fn is_file_uri(uri: &str) -> bool {
    uri.get(..5)
        .is_some_and(|scheme| scheme.eq_ignore_ascii_case("file:"))
}

/// The media type a file's name suggests; `None` where it suggests none.
pub fn media_type(rel: &str) -> Option<&'static str> {
    let extension = rel.rsplit_once('.')?.1.to_ascii_lowercase();
    Some(match extension.as_str() {
        "txt" | "log" => "text/plain",
        "md" | "markdown" => "text/markdown",
        "json" => "application/json",
        "toml" => "application/toml",
        "yaml" | "yml" => "application/yaml",
        "csv" => "text/csv",
        "html" | "htm" => "text/html",
        "css" => "text/css",
        "js" | "mjs" => "text/javascript",
        "rs" | "py" | "ts" | "go" | "c" | "h" | "java" | "sh" => "text/plain",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "svg" => "image/svg+xml",
        "pdf" => "application/pdf",
        _ => return None,
    })
}

impl Workspace {
    /// The `file://` URI of workspace file `rel`.
    pub fn file_uri(&self, rel: &str) -> String {
        url::Url::from_file_path(self.root.join(rel))
            .map(String::from)
            .unwrap_or_default()
    }

    /// Where `uri` leads: the workspace-relative path of what it names,
    /// resolved, or why it names nothing a session could read.
    pub fn locate_file_uri(&self, uri: &str) -> Result<String, String> {
        let shown = crate::presentation::one_line(uri);
        let url = url::Url::parse(uri).map_err(|e| format!("`{shown}` is not a URI: {e}"))?;
        if url.scheme() != "file" {
            return Err(format!("`{shown}` is not a `file:` URI"));
        }
        if url.host_str().is_some_and(|h| h != "localhost") {
            return Err(format!("`{shown}` names another machine"));
        }
        if url.query().is_some() || url.fragment().is_some() {
            return Err(format!(
                "`{shown}` has a query or a fragment; a file's URI has neither"
            ));
        }
        let path = url
            .to_file_path()
            .map_err(|()| format!("`{shown}` is not a local path"))?;
        let outside = || {
            format!(
                "`{shown}` is outside the workspace (`{}`)",
                self.root.display()
            )
        };
        let rel = path.strip_prefix(&self.root).map_err(|_| outside())?;
        let rel = rel
            .to_str()
            .ok_or_else(|| format!("`{shown}` is not UTF-8"))?;
        if rel.is_empty() {
            return Err("the workspace itself is a folder, not a file".into());
        }
        match self.place(rel) {
            Place::Inside { resolved } => Ok(resolved),
            Place::HostFile { what, .. } => Err(format!("`{shown}` leads to the host's {what}")),
            Place::Outside { why } => Err(format!("`{shown}` {why}")),
        }
    }

    /// Up to `max` of the workspace's files, workspace-relative, folder by
    /// folder from the top, in name order. Links, hidden names (`.git`,
    /// `.env`) and the host's own files are left out: a listing shows what
    /// is plainly there, and reading decides on the rest.
    pub fn listing(&self, max: usize) -> Vec<String> {
        let mut files = Vec::new();
        let mut folders = std::collections::VecDeque::from([String::new()]);
        let mut scanned = 0;
        while let Some(folder) = folders.pop_front() {
            let dir = if folder.is_empty() {
                self.dir.try_clone()
            } else {
                self.dir.open_dir(&folder)
            };
            let Ok(entries) = dir.and_then(|d| d.entries()) else {
                continue;
            };
            let entries: Vec<_> = entries.take(MAX_SCANNED.saturating_sub(scanned)).collect();
            scanned += entries.len().max(1);
            let mut names: Vec<(String, bool)> = entries
                .into_iter()
                .filter_map(|entry| {
                    let entry = entry.ok()?;
                    let name = entry.file_name().into_string().ok()?;
                    let kind = entry.file_type().ok()?;
                    let folder = kind.is_dir();
                    (!name.starts_with('.') && (folder || kind.is_file())).then_some((name, folder))
                })
                .collect();
            names.sort();
            for (name, is_folder) in names {
                let rel = if folder.is_empty() {
                    name
                } else {
                    format!("{folder}/{name}")
                };
                let host = self.root.join(&rel);
                if self.protected.iter().any(|(own, _)| host.starts_with(own)) {
                    continue;
                }
                if is_folder {
                    folders.push_back(rel);
                } else {
                    files.push(rel);
                    if files.len() >= max {
                        return files;
                    }
                }
            }
            if scanned >= MAX_SCANNED {
                break;
            }
        }
        files
    }

    /// Workspace file `rel`'s bytes, up to `max`, read under the
    /// workspace's shared lease (so no call that may change the workspace
    /// runs meanwhile); none when there is no such file inside.
    pub async fn read_file(&self, rel: &str, max: usize) -> Option<Vec<u8>> {
        let _lease = std::sync::Arc::clone(&self.lease).read_owned().await;
        self.read(rel, max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capability::SandboxMode;

    #[test]
    fn a_file_uri_leads_inside_the_workspace_or_nowhere() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir(root.join("docs")).unwrap();
        std::fs::write(root.join("docs/a.md"), "a").unwrap();
        std::fs::write(root.join("toolwarden.toml"), "").unwrap();
        std::os::unix::fs::symlink("docs/a.md", root.join("link.md")).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", root.join("out")).unwrap();
        let config = root.join("toolwarden.toml");
        let ws =
            Workspace::open(&root, SandboxMode::ReadOnly, &[(&config, "config file")]).unwrap();

        let uri = ws.file_uri("docs/a.md");
        assert!(
            uri.starts_with("file:///") && uri.ends_with("/docs/a.md"),
            "{uri}"
        );
        assert_eq!(ws.locate_file_uri(&uri).unwrap(), "docs/a.md");
        assert_eq!(
            ws.locate_file_uri(&ws.file_uri("link.md")).unwrap(),
            "docs/a.md"
        );
        let base = ws.file_uri("");
        for refused in [
            format!("{base}out"),
            format!("{base}toolwarden.toml"),
            format!("{base}docs/../../etc/passwd"),
            format!("{base}docs/%2e%2e/%2e%2e/etc/passwd"),
            format!("{base}docs%2F..%2F..%2Fetc%2Fpasswd"),
            "file:///etc/passwd".into(),
            format!(
                "{}docs/a.md",
                base.replacen("file:///", "file://elsewhere/", 1)
            ),
            format!("{base}docs/a.md?x=1"),
            "https://example.org/docs/a.md".into(),
        ] {
            assert!(
                ws.locate_file_uri(&refused).is_err(),
                "{refused} was located"
            );
        }
        assert_eq!(
            ws.listing(10),
            ["docs/a.md"],
            "links and host files are not listed"
        );
    }
}
