//! Where toolwarden's own files live when nobody named them (plugins, the
//! SDK, state: under the XDG directories), and which folder is the
//! workspace when none was named: the current directory, or one of the
//! roots an MCP client offers.
//!
//! It never guesses a workspace into the home directory or `/`: those are
//! where clients and service managers start processes, not folders anyone
//! chose to govern.

use crate::error::Error;
use std::path::{Path, PathBuf};

/// A directory from the environment, if it names one.
fn env_dir(name: &str) -> Option<PathBuf> {
    std::env::var_os(name)
        .filter(|value| !value.is_empty())
        .map(PathBuf::from)
}

/// Where plugins are loaded from when no directory is given:
/// `$XDG_DATA_HOME/toolwarden/plugins`, else `~/.local/share/...`. Never a
/// shared place such as `/tmp`, where another user could put plugins first.
pub fn default_plugins_dir() -> Result<PathBuf, Error> {
    data_home("plugins directory", "--plugins", "TOOLWARDEN_PLUGINS").map(|d| d.join("plugins"))
}

/// `$XDG_DATA_HOME/toolwarden`, else `~/.local/share/toolwarden`: where
/// plugins and the SDK `toolwarden new` writes out live. `what`, `flag` and
/// `env` name what needed it, for the error without either.
pub fn data_home(
    what: &'static str,
    flag: &'static str,
    env: &'static str,
) -> Result<PathBuf, Error> {
    env_dir("XDG_DATA_HOME")
        .or_else(|| env_dir("HOME").map(|home| home.join(".local/share")))
        .map(|data| data.join("toolwarden"))
        .ok_or(Error::NoHome { what, flag, env })
}

/// The workspace when none is named: the current directory, unless it is
/// the home directory or `/`. Those are where MCP clients and service
/// managers start a process, never a project someone chose to govern, and
/// the host's own state lives under the home directory.
pub fn current_project() -> Result<PathBuf, Error> {
    let cwd = std::env::current_dir().map_err(|source| Error::Directory {
        what: "current directory",
        path: PathBuf::from("."),
        source,
    })?;
    if is_project(&cwd) {
        Ok(cwd)
    } else {
        Err(Error::NoWorkspace { cwd })
    }
}

/// The workspace among the folders an MCP client offers as its roots, in
/// the client's order: the first that holds a `toolwarden.toml`, else the
/// first that is a project folder. One server governs one folder; the
/// other roots stay out of its tools' reach.
pub fn project_among(roots: &[PathBuf]) -> Result<PathBuf, Error> {
    let projects: Vec<&PathBuf> = roots
        .iter()
        .filter(|root| root.is_dir() && is_project(root))
        .collect();
    projects
        .iter()
        .find(|root| root.join(super::DEFAULT_CONFIG_FILE).is_file())
        .or(projects.first())
        .map(|root| (*root).clone())
        .ok_or_else(|| Error::NoProjectRoot {
            offered: roots.to_vec(),
        })
}

/// Whether `dir` could be a project someone chose: neither `/` nor the
/// home directory (compared as real paths, so a symlink does not pass).
fn is_project(dir: &Path) -> bool {
    let real = |dir: &Path| std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let here = real(dir);
    let home = env_dir("HOME").map(|home| real(&home));
    here.parent().is_some() && home.as_deref() != Some(here.as_path())
}

/// `$XDG_STATE_HOME/toolwarden`, else `~/.local/state/toolwarden`; without
/// either, the caller must name one (no shared fallback).
pub(super) fn state_home() -> Result<PathBuf, Error> {
    env_dir("XDG_STATE_HOME")
        .or_else(|| env_dir("HOME").map(|home| home.join(".local/state")))
        .map(|state| state.join("toolwarden"))
        .ok_or(Error::NoHome {
            what: "state directory",
            flag: "--state",
            env: "TOOLWARDEN_STATE",
        })
}
