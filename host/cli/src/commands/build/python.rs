//! A Python plugin: componentize-py against the SDK and WIT this binary
//! carries, in the world its tools need.

use super::{COMPONENTIZE_PY, Said, build_error, calls_tools, declares_network, on_path, run};
use crate::commands::sdks;
use crate::error::Error;
use std::path::Path;
use std::process::Command;

pub(super) fn build(dir: &Path, module: &str, out: &Path, data_dir: &Path) -> Result<(), Error> {
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
