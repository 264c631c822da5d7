//! A Rust plugin: cargo for `wasm32-wasip2`, the `.wasm` it reports.

use super::{Said, build_error, on_path, run};
use crate::error::Error;
use std::path::{Path, PathBuf};
use std::process::Command;

pub(super) fn build(dir: &Path, name: &str, out: &Path) -> Result<(), Error> {
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
