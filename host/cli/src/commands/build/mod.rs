//! `toolwarden build [DIR]`: a plugin project into `NAME.wasm`, with the
//! toolchain its language uses.
//!
//! The project's kind comes from its manifest: `Cargo.toml` (Rust, built by
//! cargo for `wasm32-wasip2`), `pyproject.toml` with a `[tool.toolwarden]`
//! table (Python, built by componentize-py) or `package.json` with a
//! `toolwarden` key (JavaScript, bundled by esbuild and built by
//! componentize-js), the last two against the SDK and WIT this binary
//! carries. A missing toolchain is an error that says what to
//! install, before anything runs. What a build prints goes to stderr as it
//! happens; stdout gets only the result. Never installs anything: that is
//! `install` (or `dev`). One file per language; this one finds the
//! project, runs toolchains and reports.

mod js;
mod python;
mod rust;

use crate::ExitStatus;
use crate::error::Error;
use crate::printer::Printer;
use crate::spec::is_valid_name;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

/// The componentize-py the Python SDK is tested with.
pub(super) const COMPONENTIZE_PY: &str = "componentize-py==0.25.1";

fn build_error(message: impl Into<String>, hint: impl Into<String>) -> Error {
    Error::Build {
        message: message.into(),
        hint: hint.into(),
    }
}

/// A plugin project, as its manifest describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Project {
    Rust { name: String },
    Python { name: String, module: String },
    Js { name: String, main: String },
}

impl Project {
    pub fn name(&self) -> &str {
        match self {
            Project::Rust { name } | Project::Python { name, .. } | Project::Js { name, .. } => {
                name
            }
        }
    }

    /// Reads the manifest in `dir`.
    pub fn find(dir: &Path) -> Result<Project, Error> {
        let read = |file: &str| -> Result<Option<toml::Table>, Error> {
            let path = dir.join(file);
            let Ok(text) = std::fs::read_to_string(&path) else {
                return Ok(None);
            };
            text.parse::<toml::Table>().map(Some).map_err(|e| {
                build_error(
                    format!("`{}` is not valid TOML: {e}", path.display()),
                    "fix the file, or run `toolwarden new` for a fresh project",
                )
            })
        };
        let string = |table: &toml::Table, section: &str, key: &str| {
            table
                .get(section)
                .and_then(|s| s.get(key))
                .and_then(toml::Value::as_str)
                .map(str::to_owned)
        };
        if let Some(pyproject) = read("pyproject.toml")?
            && let Some(settings) = pyproject.get("tool").and_then(|t| t.get("toolwarden"))
        {
            let name = string(&pyproject, "project", "name").ok_or_else(|| {
                build_error(
                    "pyproject.toml has no `[project] name`",
                    "add `name = \"NAME\"` under `[project]`: the plugin is built as NAME.wasm",
                )
            })?;
            let module = settings
                .get("module")
                .and_then(toml::Value::as_str)
                .unwrap_or("app")
                .to_owned();
            return Project::named(Project::Python { name, module });
        }
        if let Ok(text) = std::fs::read_to_string(dir.join("package.json"))
            && let Ok(package) = serde_json::from_str::<serde_json::Value>(&text)
            && let Some(settings) = package.get("toolwarden")
        {
            let name = package["name"].as_str().ok_or_else(|| {
                build_error(
                    "package.json has no `name`",
                    "add `\"name\": \"NAME\"`: the plugin is built as NAME.wasm",
                )
            })?;
            let main = settings["main"].as_str().unwrap_or("app.js").to_owned();
            return Project::named(Project::Js {
                name: name.to_owned(),
                main,
            });
        }
        if let Some(cargo) = read("Cargo.toml")? {
            let name = string(&cargo, "package", "name").ok_or_else(|| {
                build_error(
                    "Cargo.toml has no `[package] name`",
                    "run `toolwarden build` in the plugin crate's own folder",
                )
            })?;
            return Project::named(Project::Rust {
                name: name.replace('-', "_"),
            });
        }
        Err(build_error(
            format!(
                "`{}` is not a plugin project: it has no Cargo.toml, no pyproject.toml \
                 with a [tool.toolwarden] table and no package.json with a \"toolwarden\" key",
                dir.display()
            ),
            "run it in a folder `toolwarden new NAME --lang rust|python|js` made, or pass that folder",
        ))
    }

    fn named(project: Project) -> Result<Project, Error> {
        if is_valid_name(project.name()) {
            return Ok(project);
        }
        Err(build_error(
            format!("`{}` cannot name a plugin file", project.name()),
            "use lowercase letters, digits and `_`, starting with a letter, in the manifest's name",
        ))
    }
}

/// `program` on PATH, or None.
fn on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}

/// How a toolchain's messages reach the person.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Said {
    /// As they are printed, on stderr: a compiler's progress and errors.
    Live,
    /// Kept, and the last lines put into the error if it fails.
    InTheError,
}

/// Whether a tool, as an SDK describes it, declares network.
fn declares_network(tools: &[serde_json::Value]) -> bool {
    tools.iter().any(|t| !t["network"].is_null())
}

/// Whether a tool, as an SDK describes it, calls other tools: only then is
/// the plugin built with the `compose` import, which keeps the host from
/// rehearsing the writes of every tool of the plugin.
fn calls_tools(tools: &[serde_json::Value]) -> bool {
    tools.iter().any(|t| t["calls_tools"] == true)
}

/// Runs `command` and returns its stdout, or an error when it fails.
fn run(mut command: Command, what: &str, hint: &str, said: Said) -> Result<Vec<u8>, Error> {
    let stderr = match said {
        Said::Live => Stdio::inherit(),
        Said::InTheError => Stdio::piped(),
    };
    let output = command
        .stdin(Stdio::null())
        .stderr(stderr)
        .stdout(Stdio::piped())
        .output()
        .map_err(|e| build_error(format!("cannot run {what}: {e}"), hint))?;
    if output.status.success() {
        return Ok(output.stdout);
    }
    let message = match said {
        Said::Live => format!("{what} failed ({}); its messages are above", output.status),
        Said::InTheError => {
            let text = String::from_utf8_lossy(&output.stderr);
            let lines: Vec<&str> = text.lines().collect();
            let tail = &lines[lines.len().saturating_sub(20)..];
            format!("{what} failed ({}):\n{}", output.status, tail.join("\n"))
        }
    };
    Err(build_error(message, hint))
}

/// Builds the project in `dir` into `dir/NAME.wasm` and returns that path.
pub fn build(dir: &Path, data_dir: &Path) -> Result<(Project, PathBuf), Error> {
    let project = Project::find(dir)?;
    let out = dir.join(format!("{}.wasm", project.name()));
    let staged = dir.join(format!(".{}.wasm.building", project.name()));
    match &project {
        Project::Rust { name } => rust::build(dir, name, &staged)?,
        Project::Python { module, .. } => python::build(dir, module, &staged, data_dir)?,
        Project::Js { main, .. } => js::build(dir, main, &staged, data_dir)?,
    }
    std::fs::rename(&staged, &out).map_err(|e| {
        build_error(
            format!("cannot write `{}`: {e}", out.display()),
            "check that the folder is writable",
        )
    })?;
    Ok((project, out))
}

pub fn run_command(
    dir: &Path,
    data_dir: &Path,
    json: bool,
    printer: Printer,
) -> Result<ExitStatus, Error> {
    let started = Instant::now();
    let dir = dir.canonicalize().map_err(|e| {
        build_error(
            format!("cannot open `{}`: {e}", dir.display()),
            "pass the plugin project's folder",
        )
    })?;
    let (project, wasm) = build(&dir, data_dir)?;
    let bytes = std::fs::metadata(&wasm).map_or(0, |m| m.len());
    let seconds = started.elapsed().as_secs_f64();
    if json {
        printer.json(&serde_json::json!({
            "plugin": project.name(),
            "file": wasm,
            "bytes": bytes,
            "seconds": seconds,
        }));
    } else {
        printer.out(format!(
            "built {} ({:.1} MB) in {seconds:.1} s\n  toolwarden check {0}\n  toolwarden install {0}",
            wasm.display(),
            bytes as f64 / 1e6,
        ));
    }
    Ok(ExitStatus::Success)
}
