//! From zero to a governed tool: `toolwarden new` makes a crate that builds
//! for wasm32-wasip2 as it is, outside this repository, and whose tool runs
//! through the whole pipeline.

use crate::harness::{TestHost, binary, run_cli};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Shared by every run so the SDK's dependencies compile once, not per test.
fn scaffold_target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    exe.ancestors()
        .nth(3)
        .expect("target/<profile>/deps/<exe>")
        .join("scaffold")
}

/// `cargo` for a crate of its own: the outer build's settings are not its.
fn cargo(dir: &Path, args: &[&str]) -> (i32, String) {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(dir).args(args);
    for var in toolwarden_tests::OUTER_BUILD_VARS {
        cmd.env_remove(var);
    }
    cmd.env("CARGO_TARGET_DIR", scaffold_target_dir());
    let out = cmd.output().expect("run cargo");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

#[test]
fn new_plugin_builds_as_it_is_and_runs_through_the_pipeline() {
    // A person's data directory, far from this checkout: the scaffold must
    // build from what the binary carries, not from the source tree.
    let outside = tempfile::tempdir().expect("temp dir");
    let data = outside.path().join("data");
    let dir = outside.path().join("word_count");
    let (code, stdout, stderr) = run_cli(
        Command::new(binary())
            .env("XDG_DATA_HOME", &data)
            .env_remove("TOOLWARDEN_SDK")
            .args(["new", "word_count", "--dir", dir.to_str().unwrap()]),
    );
    assert_eq!(code, 0, "{stderr}");
    let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
    let checkout = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    assert!(
        !manifest.contains(checkout.to_str().unwrap()) && manifest.contains(data.to_str().unwrap()),
        "the scaffold depends on the SDK the binary wrote out, not on the checkout: {manifest}"
    );
    let next: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("  ") && !l.trim().is_empty())
        .take(4)
        .collect();
    assert!(
        next[0].contains("rustup target add wasm32-wasip2")
            && next[1].contains("toolwarden build")
            && next[2].contains("toolwarden check word_count.wasm")
            && next[3].starts_with("  toolwarden install word_count.wasm"),
        "the next four commands: {stdout}"
    );

    // `toolwarden build`, with cargo's target directory kept warm.
    let mut build = Command::new(binary());
    build.current_dir(&dir).args(["build", "--json"]);
    for var in toolwarden_tests::OUTER_BUILD_VARS {
        build.env_remove(var);
    }
    build.env("CARGO_TARGET_DIR", scaffold_target_dir());
    let (code, stdout, stderr) = run_cli(&mut build);
    assert_eq!(code, 0, "the scaffold builds as it is:\n{stdout}{stderr}");
    let built: serde_json::Value = serde_json::from_str(&stdout).expect("build --json");
    let wasm = dir.join("word_count.wasm");
    assert_eq!(built["file"], wasm.to_str().unwrap(), "{stdout}");
    let (code, log) = cargo(&dir, &["test"]);
    assert_eq!(code, 0, "the scaffold's own tests pass:\n{log}");
    assert!(log.contains("2 passed"), "{log}");

    let host = TestHost::new(&[]);
    std::fs::copy(&wasm, host.plugins.join("word_count.wasm")).expect("copy plugin");
    let (code, stdout, stderr) = run_cli(host.cli().arg("check"));
    assert_eq!(code, 0, "check finds nothing to fix: {stdout}{stderr}");
    let (code, stdout, stderr) = run_cli(host.cli().args([
        "call",
        "word_count",
        r#"{"text":"governed tools are pleasant"}"#,
    ]));
    assert_eq!((code, stdout.trim()), (0, r#"{"words":4}"#), "{stderr}");
    let (code, stdout, stderr) = run_cli(host.cli().args(["call", "word_count", "{}"]));
    assert_eq!(
        (code, stdout.trim()),
        (0, r#"{"words":0}"#),
        "its one argument is optional: {stderr}"
    );
}

#[test]
fn new_refuses_a_bad_name_and_never_overwrites() {
    let outside = tempfile::tempdir().expect("temp dir");
    let taken = outside.path().join("taken");
    std::fs::create_dir_all(&taken).unwrap();
    std::fs::write(taken.join("keep.txt"), "mine").unwrap();
    let (code, _, stderr) = run_cli(Command::new(binary()).args([
        "new",
        "fine_name",
        "--dir",
        taken.to_str().unwrap(),
    ]));
    assert_eq!(code, 2);
    assert!(
        stderr.contains("already exists and is not empty"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(taken.join("keep.txt")).unwrap(),
        "mine"
    );
    assert!(!taken.join("Cargo.toml").exists());

    let (code, _, stderr) = run_cli(
        Command::new(binary())
            .current_dir(outside.path())
            .args(["new", "Not-Valid"]),
    );
    assert_eq!(code, 2);
    assert!(stderr.contains("not a valid plugin name"), "{stderr}");
    assert!(!outside.path().join("Not-Valid").exists());

    let (code, _, stderr) = run_cli(Command::new(binary()).args([
        "new",
        "lost",
        "--dir",
        outside.path().join("lost").to_str().unwrap(),
        "--sdk",
        outside.path().to_str().unwrap(),
    ]));
    assert_eq!(code, 2);
    assert!(
        stderr.contains("--sdk"),
        "the hint names the flag: {stderr}"
    );
}

#[test]
fn the_sdk_crate_packages_on_its_own_with_its_contract() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let (code, listed) = cargo(
        root,
        &[
            "package",
            "-p",
            "toolwarden-plugin",
            "--list",
            "--allow-dirty",
        ],
    );
    assert_eq!(code, 0, "{listed}");
    for file in ["Cargo.toml", "README.md", "src/lib.rs", "wit/tool.wit"] {
        assert!(
            listed.lines().any(|l| l.trim() == file),
            "{file} is in the package:\n{listed}"
        );
    }
    let manifest = std::fs::read_to_string(root.join("sdk/toolwarden-plugin/Cargo.toml")).unwrap();
    let contract = std::fs::read_to_string(root.join("wit/tool.wit")).unwrap();
    let version = manifest
        .lines()
        .find_map(|l| l.strip_prefix("version = \"")?.strip_suffix('"'))
        .unwrap();
    assert!(
        contract.contains(&format!("package toolwarden:tool@{version};")),
        "the SDK's version {version} is the contract's"
    );
}
