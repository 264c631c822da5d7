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
//! `install` (or `dev`).

use super::sdks;
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
        Project::Rust { name } => rust(dir, name, &staged)?,
        Project::Python { module, .. } => python(dir, module, &staged, data_dir)?,
        Project::Js { main, .. } => js(dir, main, &staged, data_dir)?,
    }
    std::fs::rename(&staged, &out).map_err(|e| {
        build_error(
            format!("cannot write `{}`: {e}", out.display()),
            "check that the folder is writable",
        )
    })?;
    Ok((project, out))
}

fn rust(dir: &Path, name: &str, out: &Path) -> Result<(), Error> {
    let install = "install Rust from https://rustup.rs, then `rustup target add wasm32-wasip2`";
    let cargo = on_path("cargo").ok_or_else(|| build_error("cargo is not installed", install))?;
    let sysroot = Command::new("rustc")
        .args(["--print", "sysroot"])
        .output()
        .map_err(|e| build_error(format!("cannot run rustc: {e}"), install))?;
    let std = PathBuf::from(String::from_utf8_lossy(&sysroot.stdout).trim())
        .join("lib/rustlib/wasm32-wasip2");
    if !std.is_dir() {
        return Err(build_error(
            "the wasm32-wasip2 target is not installed",
            "run `rustup target add wasm32-wasip2`",
        ));
    }
    let mut command = Command::new(cargo);
    command.current_dir(dir).args([
        "build",
        "--release",
        "--target",
        "wasm32-wasip2",
        "--message-format=json-render-diagnostics",
    ]);
    let said = run(
        command,
        "cargo build",
        "fix what the compiler reports, then build again",
        Said::Live,
    )?;
    let built = String::from_utf8_lossy(&said)
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|message| message["reason"] == "compiler-artifact")
        .flat_map(|message| {
            let files = message["filenames"].as_array().cloned().unwrap_or_default();
            files.into_iter().filter_map(|f| f.as_str().map(PathBuf::from))
        })
        .find(|file| file.file_name().is_some_and(|f| f == format!("{name}.wasm").as_str()))
        .ok_or_else(|| {
            build_error(
                format!("cargo built no `{name}.wasm`"),
                "the crate must be a `cdylib` (`[lib] crate-type = [\"cdylib\"]`), as `toolwarden new` makes it",
            )
        })?;
    std::fs::copy(&built, out).map(drop).map_err(|e| {
        build_error(
            format!("cannot copy `{}`: {e}", built.display()),
            "check that the folder is writable",
        )
    })
}

fn python(dir: &Path, module: &str, out: &Path, data_dir: &Path) -> Result<(), Error> {
    let install = format!(
        "install it into the project: `python3 -m venv .venv && .venv/bin/pip install {COMPONENTIZE_PY}` (or put componentize-py on PATH)"
    );
    let componentize = [dir.join(".venv/bin/componentize-py")]
        .into_iter()
        .find(|p| p.is_file())
        .or_else(|| on_path("componentize-py"))
        .ok_or_else(|| build_error("componentize-py is not installed", install.clone()))?;
    let python = componentize
        .parent()
        .map(|bin| bin.join("python3"))
        .filter(|p| p.is_file())
        .or_else(|| on_path("python3"))
        .ok_or_else(|| build_error("python3 is not installed", "install Python 3.11 or newer"))?;
    let sdk = sdks::write(&sdks::PYTHON, data_dir)?;
    let wit = sdks::write(&sdks::WIT, data_dir)?;
    let mut python_path = std::ffi::OsString::from(sdk.as_os_str());
    if let Some(more) = std::env::var_os("PYTHONPATH") {
        python_path.push(":");
        python_path.push(more);
    }
    let mut describe = Command::new(&python);
    describe
        .current_dir(dir)
        .env("PYTHONPATH", &python_path)
        .args(["-m", "toolwarden_plugin.describe", module]);
    let said = run(
        describe,
        &format!("reading the tools of `{module}` in CPython"),
        &format!(
            "the module must import in plain Python: `python3 -m toolwarden_plugin.describe {module}` with the SDK on PYTHONPATH shows why it does not"
        ),
        Said::InTheError,
    )?;
    let tools: Vec<serde_json::Value> = serde_json::from_slice(&said).map_err(|e| {
        build_error(
            format!("the SDK described the tools badly: {e}"),
            "report this with the module",
        )
    })?;
    if tools.is_empty() {
        return Err(build_error(
            format!("`{module}` defines no tool"),
            "decorate a function with `@tool` (from toolwarden_plugin)",
        ));
    }
    let world = match (declares_network(&tools), calls_tools(&tools)) {
        (false, false) => "sdk-plugin",
        (false, true) => "sdk-composite",
        (true, false) => "sdk-http-plugin",
        (true, true) => "sdk-http-composite",
    };
    let mut componentize_py = Command::new(&componentize);
    componentize_py
        .current_dir(dir)
        .arg("-d")
        .arg(&wit)
        .args(["-w", world, "componentize", module, "-p", "."])
        .arg("-p")
        .arg(&sdk)
        .arg("-o")
        .arg(out);
    run(
        componentize_py,
        "componentize-py",
        "fix what it reports, then build again",
        Said::Live,
    )
    .map(drop)
}

/// The project's own copy of a JavaScript tool (`node_modules/.bin`), else
/// one on PATH.
fn node_tool(dir: &Path, program: &str) -> Option<PathBuf> {
    let local = dir.join("node_modules/.bin").join(program);
    if local.is_file() {
        return Some(local);
    }
    on_path(program)
}

/// The tools a module of JavaScript tools defines, read by running it in
/// Node, bundled with the SDK this binary carries.
fn js_tools(
    dir: &Path,
    esbuild: &Path,
    sdk: &Path,
    main: &str,
) -> Result<Vec<serde_json::Value>, Error> {
    let node = on_path("node")
        .ok_or_else(|| build_error("node is not installed", "install Node.js 20 or newer"))?;
    let work = dir.join(".toolwarden");
    let script = format!(
        "import {};\nimport {{ tools }} from \"toolwarden-plugin\";\n\
         console.log(JSON.stringify(tools().map((t) => t.describe())));\n",
        module_specifier(main)
    );
    write_file(&work.join("describe.js"), &script)?;
    bundle(
        dir,
        esbuild,
        sdk,
        "describe",
        &["--platform=node", "--outfile=.toolwarden/describe.mjs"],
    )?;
    let mut describe = Command::new(node);
    describe.current_dir(dir).arg(".toolwarden/describe.mjs");
    let said = run(
        describe,
        &format!("reading the tools of `{main}` in Node"),
        &format!("the module must load in Node: `node {main}` shows why it does not"),
        Said::InTheError,
    )?;
    serde_json::from_slice(&said).map_err(|e| {
        build_error(
            format!("the SDK described the tools badly: {e}"),
            "report this with the module",
        )
    })
}

/// The project's module as `.toolwarden/*.js` imports it: a quoted JS
/// string, whatever the manifest's `main` holds.
fn module_specifier(main: &str) -> String {
    serde_json::Value::String(format!("../{main}")).to_string()
}

/// Bundles `.toolwarden/{entry}.js` with the SDK this binary carries (the
/// project's own `toolwarden-plugin`, if any, is for its tests in Node).
fn bundle(dir: &Path, esbuild: &Path, sdk: &Path, entry: &str, how: &[&str]) -> Result<(), Error> {
    let mut esbuild = Command::new(esbuild);
    esbuild
        .current_dir(dir)
        .arg(format!(".toolwarden/{entry}.js"))
        .args(["--bundle", "--format=esm", "--log-level=warning"])
        .arg(format!("--alias:toolwarden-plugin={}", sdk.display()))
        .args(how);
    run(
        esbuild,
        "esbuild",
        "fix what it reports, then build again",
        Said::InTheError,
    )
    .map(drop)
}

fn write_file(path: &Path, text: &str) -> Result<(), Error> {
    path.parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| std::fs::write(path, text))
        .map_err(|e| {
            build_error(
                format!("cannot write `{}`: {e}", path.display()),
                "check that the folder is writable",
            )
        })
}

fn js(dir: &Path, main: &str, out: &Path, data_dir: &Path) -> Result<(), Error> {
    let install = "install them into the project: `npm install` (its package.json, as `toolwarden new --lang js` writes it, lists @bytecodealliance/componentize-js and esbuild)";
    let esbuild = node_tool(dir, "esbuild")
        .ok_or_else(|| build_error("esbuild is not installed", install))?;
    let componentize = node_tool(dir, "componentize-js")
        .ok_or_else(|| build_error("componentize-js is not installed", install))?;
    let sdk = sdks::write(&sdks::JS, data_dir)?;
    let wit = sdks::write(&sdks::WIT, data_dir)?;
    let tools = js_tools(dir, &esbuild, &sdk, main)?;
    if tools.is_empty() {
        return Err(build_error(
            format!("`{main}` defines no tool"),
            "define one with `defineTool({...})` (from toolwarden-plugin)",
        ));
    }
    let compose = if calls_tools(&tools) {
        "import { callTool } from \"toolwarden:tool/compose@0.2.0\";\n\
         import { attachHost } from \"toolwarden-plugin\";\n\
         attachHost({ callTool });\n"
    } else {
        ""
    };
    write_file(
        &dir.join(".toolwarden/entry.js"),
        &format!(
            "import {};\n{compose}\
             export {{ tool, keyed, present, show }} from \"toolwarden-plugin/component\";\n",
            module_specifier(main)
        ),
    )?;
    bundle(
        dir,
        &esbuild,
        &sdk,
        "entry",
        &[
            "--platform=neutral",
            "--main-fields=module,main",
            "--external:toolwarden:*",
            "--external:wasi:*",
            "--outfile=.toolwarden/bundle.js",
        ],
    )?;
    // The engine's `fetch` imports `wasi:http`, which the host refuses in a
    // plugin none of whose tools declares network.
    let mut disabled = vec!["fetch-event"];
    if !declares_network(&tools) {
        disabled.push("http");
    }
    let world = if calls_tools(&tools) {
        "js-composite"
    } else {
        "js-plugin"
    };
    let mut componentize_js = Command::new(componentize);
    componentize_js
        .current_dir(dir)
        .arg("--wit")
        .arg(&wit)
        .args(["-n", world, "--disable"])
        .args(&disabled)
        .arg("-o")
        .arg(out)
        .arg(".toolwarden/bundle.js");
    run(
        componentize_js,
        "componentize-js",
        "fix what it reports, then build again",
        Said::Live,
    )
    .map(drop)
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
