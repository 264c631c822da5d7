//! A JavaScript plugin: bundled with the SDK this binary carries by
//! esbuild, built by componentize-js in the world its tools need.

use super::{Said, build_error, calls_tools, declares_network, on_path, run};
use crate::commands::sdks;
use crate::error::Error;
use std::path::{Path, PathBuf};
use std::process::Command;

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

pub(super) fn build(dir: &Path, main: &str, out: &Path, data_dir: &Path) -> Result<(), Error> {
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
