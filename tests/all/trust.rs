//! Trust on first use for the config file: a tool that rewrites the policy
//! that governs it does not get a host that obeys the rewrite. Regression
//! tests for issue #17 (`write_file` on `toolwarden.toml` allowed everything
//! at the next start).

use crate::harness::{TestHost, binary, run_cli};
use std::process::Command;
use toolwarden::SandboxMode;
use toolwarden_tests::{CALC, HOSTILE};

const POLICY: &str = r#"
[[rule]]
tools = ["calc", "hostile_write_raw"]
decision = "allow"
reason = "the test's tools"
"#;

const EVERYTHING: &str =
    "[[rule]]\ntools = [\"*\"]\ndecision = \"allow\"\nreason = \"planted by a tool\"\n";

/// The CLI on `t`'s directories, without the harness's own trusting.
fn cli(t: &TestHost) -> Command {
    on(t, Command::new(binary()))
}

/// `program` with `t`'s directories in its environment and no trust flag.
fn on(t: &TestHost, mut program: Command) -> Command {
    program
        .env("TOOLWARDEN_PLUGINS", &t.plugins)
        .env("TOOLWARDEN_WORKSPACE", &t.workspace)
        .env("TOOLWARDEN_STATE", &t.state)
        .env("TOOLWARDEN_SANDBOX", "workspace-write")
        .env_remove("TOOLWARDEN_CONFIG")
        .env_remove("TOOLWARDEN_TRUST_CONFIG")
        .env_remove("TOOLWARDEN_LOG");
    program
}

fn host() -> TestHost {
    let t = TestHost::new(&[CALC, HOSTILE]).sandbox(SandboxMode::WorkspaceWrite);
    std::fs::write(t.workspace.join("toolwarden.toml"), POLICY).unwrap();
    t
}

const ADD: [&str; 3] = ["call", "calc", r#"{"op":"add","a":1,"b":2}"#];

#[test]
fn a_config_never_trusted_runs_nothing_until_trusted_once() {
    let t = host();
    let (code, _, stderr) = run_cli(cli(&t).args(ADD));
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("never trusted") && stderr.contains("policy trust"),
        "{stderr}"
    );
    let (code, stdout, stderr) = run_cli(cli(&t).arg("list"));
    assert_eq!(code, 0, "reading commands still work: {stderr}");
    assert!(
        stdout.contains("calc") && stderr.contains("not trusted"),
        "{stderr}"
    );
    let (code, _, stderr) = run_cli(cli(&t).arg("--trust-config").args(ADD));
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("trusting"), "{stderr}");
    let (code, _, stderr) = run_cli(cli(&t).args(ADD));
    assert_eq!(code, 0, "trusted from now on: {stderr}");
}

#[test]
fn a_policy_a_tool_rewrote_is_refused_until_a_person_trusts_it() {
    let t = host();
    let (code, _, stderr) = run_cli(cli(&t).arg("--trust-config").args(ADD));
    assert_eq!(code, 0, "{stderr}");
    // The tool writes the file directly, whatever its arguments say.
    let args = serde_json::json!({ "path": "/workspace/toolwarden.toml", "content": EVERYTHING });
    let (code, _, stderr) = run_cli(cli(&t).args(["call", "hostile_write_raw", &args.to_string()]));
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        std::fs::read_to_string(t.workspace.join("toolwarden.toml")).unwrap(),
        EVERYTHING
    );
    for flags in [&[][..], &["--trust-config"][..]] {
        let (code, _, stderr) = run_cli(cli(&t).args(flags).args(["call", "hostile_spin"]));
        assert_eq!(code, 2, "{flags:?}: {stderr}");
        assert!(stderr.contains("changed since it was trusted"), "{stderr}");
        assert!(stderr.contains("policy diff"), "{stderr}");
        let (code, _, stderr) = run_cli(cli(&t).args(flags).args(["serve"]));
        assert_eq!(code, 2, "serve refuses too: {stderr}");
    }
    let (code, stdout, _) = run_cli(cli(&t).args(["policy", "diff"]));
    assert_eq!(code, 1, "{stdout}");
    assert!(
        stdout.contains("-tools = [\"calc\", \"hostile_write_raw\"]")
            && stdout.contains("+tools = [\"*\"]"),
        "{stdout}"
    );
    let (code, stdout, stderr) = run_cli(cli(&t).args(["policy", "trust"]));
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("trusted"), "{stdout}");
    let (code, stdout, _) = run_cli(cli(&t).args(["policy", "diff"]));
    assert_eq!(code, 0, "{stdout}");
    let (code, _, stderr) = run_cli(cli(&t).args(ADD));
    assert_eq!(code, 0, "the person trusted it: {stderr}");
}

#[test]
fn a_running_host_loads_no_plugins_once_its_config_changed() {
    let t = host();
    let config = toolwarden::ConfigBuilder::new(&t.workspace)
        .plugins_dir(&t.plugins)
        .state_dir(&t.state)
        .config_file(t.workspace.join("toolwarden.toml"))
        .build()
        .unwrap();
    let host = toolwarden::Controller::new(config).unwrap();
    assert!(host.reload().is_ok());
    std::fs::write(t.workspace.join("toolwarden.toml"), EVERYTHING).unwrap();
    let err = host.reload().unwrap_err();
    assert_eq!(err.code(), "CONFIG_UNTRUSTED", "{err}");
    assert!(
        err.to_string().contains("changed since this host started"),
        "{err}"
    );
    assert!(
        host.registry().get("calc").is_some(),
        "what it serves stays"
    );
}

/// `call` at a terminal, with no trust flag, answering `answer`.
fn on_a_terminal(t: &TestHost, answer: &str) -> (i32, String) {
    let args = format!("call calc '{}'", ADD[2]);
    crate::harness::on_a_terminal(on(t, Command::new("script")), &args, answer)
}

#[test]
fn at_a_terminal_the_first_run_shows_the_config_and_asks_default_no() {
    let t = host();
    let (code, out) = on_a_terminal(&t, "\n");
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains("has not been trusted yet") && out.contains("the test's tools"),
        "the file is shown: {out}"
    );
    assert!(out.contains("[y/N]"), "{out}");
    let (code, out) = on_a_terminal(&t, "y\n");
    assert_eq!(code, 0, "{out}");
    assert!(out.trim_end().ends_with('3'), "{out}");
    let (code, _, stderr) = run_cli(cli(&t).args(ADD));
    assert_eq!(code, 0, "trusted once, trusted after: {stderr}");
}
