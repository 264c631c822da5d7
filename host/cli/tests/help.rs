//! The binary as built: every command's `--help` ends with an example a
//! person can copy. (Being an integration test of this crate, it also makes
//! `cargo test --no-run` build the `toolwarden` binary the other tests
//! drive.)

use std::process::Command;

fn help(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_toolwarden"))
        .args(args)
        .arg("--help")
        .output()
        .expect("run toolwarden");
    assert!(out.status.success(), "{args:?} --help failed");
    String::from_utf8(out.stdout).expect("help is UTF-8")
}

/// The subcommands `toolwarden --help` lists (without `help` itself).
fn commands() -> Vec<String> {
    let top = help(&[]);
    top.lines()
        .skip_while(|line| *line != "Commands:")
        .skip(1)
        .take_while(|line| line.starts_with("  "))
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect()
}

#[test]
fn every_command_shows_an_example() {
    let commands = commands();
    assert!(commands.len() >= 20, "read the command list: {commands:?}");
    let missing: Vec<&String> = commands
        .iter()
        .filter(|name| {
            let text = help(&[name.as_str()]);
            let example = text.split_once("Example").map(|(_, rest)| rest);
            !example.is_some_and(|rest| rest.contains(&format!("toolwarden {name}")))
        })
        .collect();
    assert!(missing.is_empty(), "no example in --help: {missing:?}");
}
