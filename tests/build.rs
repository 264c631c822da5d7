//! Compiles every example plugin (`plugins/*`) and hostile fixture
//! (`tests/fixtures/*`) to `wasm32-wasip2`, and writes their paths as
//! constants plus a `for_each_plugin!` macro for the tests.
//!
//! If the build fails (most often: the target is not installed), this script
//! still succeeds and the tests fail with a message saying what to run, in
//! the manner of wasmtime's test-programs artifacts.

use std::path::{Path, PathBuf};
use std::process::Command;

include!("outer_build.rs");

fn package_name(manifest: &Path) -> Option<String> {
    let text = std::fs::read_to_string(manifest).ok()?;
    text.lines().find_map(|l| {
        l.trim()
            .strip_prefix("name = \"")?
            .strip_suffix('"')
            .map(str::to_owned)
    })
}

fn crates_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter_map(|e| package_name(&e.path().join("Cargo.toml")))
        .collect();
    names.sort();
    names
}

fn main() {
    let manifest_dir =
        PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let root = manifest_dir
        .parent()
        .expect("tests/ sits in the workspace root")
        .to_owned();
    println!("cargo:rerun-if-changed=outer_build.rs");
    for watched in ["wit", "sdk/toolwarden-plugin", "plugins", "tests/fixtures"] {
        println!("cargo:rerun-if-changed={}", root.join(watched).display());
    }
    let examples = crates_in(&root.join("plugins"));
    let fixtures = crates_in(&root.join("tests/fixtures"));
    let target_dir = root.join("target/wasm");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut build = Command::new(cargo);
    build
        .current_dir(&root)
        .args([
            "build",
            "--profile",
            "guest",
            "--target",
            "wasm32-wasip2",
            "--target-dir",
        ])
        .arg(&target_dir);
    for name in examples.iter().chain(&fixtures) {
        build.args(["-p", name]);
    }
    for var in OUTER_BUILD_VARS {
        build.env_remove(var);
    }
    let error = match build.output() {
        Ok(out) if out.status.success() => None,
        Ok(out) => Some(String::from_utf8_lossy(&out.stderr).into_owned()),
        Err(e) => Some(e.to_string()),
    };
    if let Some(e) = &error {
        println!(
            "cargo:warning=could not build the test plugins for wasm32-wasip2; run `make setup` (installs or repairs the target)"
        );
        for line in e.lines().rev().take(5) {
            println!("cargo:warning={line}");
        }
        // A failed build is tried again once the target appears (`make
        // setup`), not kept until some watched source changes. A path
        // that does not exist yet counts as changed on every build.
        let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
        if let Ok(out) = Command::new(rustc).args(["--print", "sysroot"]).output() {
            let sysroot = String::from_utf8_lossy(&out.stdout).trim().to_owned();
            println!("cargo:rerun-if-changed={sysroot}/lib/rustlib/wasm32-wasip2/lib");
        }
    }
    let wasm_dir = target_dir.join("wasm32-wasip2/guest");
    let mut code = String::new();
    code.push_str(&format!(
        "pub const BUILD_ERROR: Option<&str> = {:?};\n",
        error.map(|e| e.chars().take(4000).collect::<String>())
    ));
    for name in examples.iter().chain(&fixtures) {
        let path = wasm_dir.join(format!("{}.wasm", name.replace('-', "_")));
        code.push_str(&format!(
            "pub const {}: &str = {:?};\n",
            name.to_uppercase().replace('-', "_"),
            path.display().to_string()
        ));
    }
    code.push_str("/// Calls `$m!(name)` for every example plugin, so each must have a test.\n");
    code.push_str("#[macro_export]\nmacro_rules! for_each_plugin { ($m:ident) => {\n");
    for name in &examples {
        code.push_str(&format!("    $m!({});\n", name.replace('-', "_")));
    }
    code.push_str("} }\n");
    let out =
        PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("plugins.rs");
    std::fs::write(out, code).expect("OUT_DIR is writable");
}
