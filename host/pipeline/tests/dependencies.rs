//! The library people embed builds without what only the front ends need:
//! no MCP, web server, HTML, OCI client, CLI parser or PostgreSQL driver in
//! its dependency tree unless a feature asks for one (`postgres`).

use std::process::Command;

/// Crates that belong to a front end (or to the `postgres` feature).
const FRONT_END_ONLY: &[&str] = &[
    "rmcp",
    "axum",
    "maud",
    "oci-client",
    "clap",
    "tokio-postgres",
];

fn tree(features: &[&str]) -> Vec<String> {
    let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut command = Command::new(cargo);
    command.args([
        "tree",
        "--offline",
        "--locked",
        "--manifest-path",
        manifest,
        "-p",
        "toolwarden",
        "-e",
        "normal",
        "--prefix",
        "none",
    ]);
    if !features.is_empty() {
        command.args(["--features", &features.join(",")]);
    }
    let out = command.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .collect()
}

#[test]
fn the_library_pulls_in_no_front_end() {
    let crates = tree(&[]);
    assert!(crates.iter().any(|c| c == "wasmtime"), "{crates:?}");
    let found: Vec<&&str> = FRONT_END_ONLY
        .iter()
        .filter(|name| crates.iter().any(|c| c == **name))
        .collect();
    assert!(found.is_empty(), "the library depends on {found:?}");
}

#[test]
fn postgresql_comes_with_its_feature() {
    assert!(tree(&["postgres"]).iter().any(|c| c == "tokio-postgres"));
}
