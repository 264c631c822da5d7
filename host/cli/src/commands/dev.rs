//! `toolwarden dev [DIR]`: rebuild a plugin project on save and install
//! each build into the plugins directory, where a running `toolwarden
//! serve` picks it up (it watches that directory and tells its MCP clients
//! the tool list changed).
//!
//! Polls the project's files (names, sizes, modification times), as the
//! server polls its plugins: no platform notification API. A build that
//! fails is reported and the installed plugin stays as it was; the loop
//! goes on until interrupted. Never writes outside the project and the
//! plugins directory.

use super::build;
use crate::ExitStatus;
use crate::config::Config;
use crate::error::Error;
use crate::printer::Printer;
use std::path::Path;
use std::time::{Duration, SystemTime};

/// How often the project's files are looked at.
const POLL: Duration = Duration::from_millis(300);

/// Folders that hold what builds make or tools install, not sources
/// (`.toolwarden` is where `build` bundles a JavaScript plugin: watching it
/// would rebuild after every build).
const SKIPPED: &[&str] = &[
    "target",
    "node_modules",
    "__pycache__",
    ".venv",
    ".git",
    ".toolwarden",
];

type Snapshot = Vec<(std::path::PathBuf, u64, Option<SystemTime>)>;

fn snapshot(dir: &Path, into: &mut Snapshot) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let Ok(meta) = entry.metadata() else { continue };
        if meta.is_dir() {
            if !SKIPPED.contains(&name.as_ref()) {
                snapshot(&path, into);
            }
        } else if !name.ends_with(".wasm") && !name.ends_with(".building") {
            into.push((path, meta.len(), meta.modified().ok()));
        }
    }
}

fn sources(dir: &Path) -> Snapshot {
    let mut files = Vec::new();
    snapshot(dir, &mut files);
    files.sort();
    files
}

fn build_and_install(dir: &Path, data_dir: &Path, config: &Config, printer: Printer) {
    match build::build(dir, data_dir) {
        Ok((_, wasm)) => {
            if let Err(e) = super::install::install_built(config, &wasm, printer) {
                printer.error(e.to_string(), Some(&e.hint()));
            }
        }
        Err(e) => printer.error(e.to_string(), Some(&e.hint())),
    }
}

pub fn run(
    dir: &Path,
    data_dir: &Path,
    config: &Config,
    printer: Printer,
) -> Result<ExitStatus, Error> {
    build::Project::find(dir)?;
    printer.note(format!(
        "watching {} for changes; each build is installed into {} (Ctrl-C stops)",
        dir.display(),
        config.plugins_dir().display()
    ));
    let mut seen = sources(dir);
    build_and_install(dir, data_dir, config, printer);
    loop {
        std::thread::sleep(POLL);
        let now = sources(dir);
        if now != seen {
            seen = now;
            build_and_install(dir, data_dir, config, printer);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::sources;

    #[test]
    fn what_builds_write_is_not_a_change_and_a_source_is() {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path();
        std::fs::write(root.join("app.js"), "one").unwrap();
        for made in [".toolwarden", "node_modules", "__pycache__", "target"] {
            std::fs::create_dir(root.join(made)).unwrap();
            std::fs::write(root.join(made).join("out.js"), "built").unwrap();
        }
        let before = sources(root);
        assert_eq!(before.len(), 1, "{before:?}");
        for made in [".toolwarden", "node_modules", "__pycache__", "target"] {
            std::fs::write(root.join(made).join("out.js"), "built again").unwrap();
        }
        std::fs::write(root.join("word_count.wasm"), "a build").unwrap();
        assert_eq!(sources(root), before);
        std::fs::write(root.join("app.js"), "two, longer").unwrap();
        assert_ne!(sources(root), before);
    }
}
