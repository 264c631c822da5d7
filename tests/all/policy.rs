//! Argument-aware policy on real plugins, and `policy explain`.

use crate::harness::{TestHost, call, run_cli};
use toolwarden::{ErrorCode, SandboxMode, Status};
use toolwarden_tests::{CALC, FS};

const WRITES_UNDER_SRC: &str = r#"
[[rule]]
tools = ["read_file", "list_dir"]
decision = "allow"
reason = "reading is harmless"

[[rule]]
tools = ["write_file"]
when = { "/path" = "src/**" }
decision = "allow"
reason = "the agent may edit sources"

[[rule]]
effects = ["mutates-workspace"]
when = { "/path" = { not = "src/**" } }
decision = "deny"
reason = "changes stay under src/"
"#;

#[test]
fn a_rule_on_an_argument_value_decides_each_call() {
    let t = TestHost::new(&[FS])
        .config(WRITES_UNDER_SRC)
        .sandbox(SandboxMode::WorkspaceWrite);
    std::fs::create_dir_all(t.workspace.join("src")).unwrap();
    let host = t.controller();
    let ok = call(
        &host,
        "write_file",
        r#"{"path":"src/lib.rs","content":"// ok"}"#,
    );
    assert_eq!(ok.status, Status::Ok, "{ok:#?}");
    for path in ["README.md", "src/../README.md", "./docs/x.md"] {
        let args = serde_json::json!({"path": path, "content": "x"}).to_string();
        let denied = call(&host, "write_file", &args);
        assert_eq!(
            denied.code(),
            Some(ErrorCode::PolicyDenied),
            "{path}: {denied:#?}"
        );
        assert!(
            denied
                .error
                .unwrap()
                .message
                .contains("changes stay under src/")
        );
    }
    assert!(!t.workspace.join("README.md").exists());
}

#[test]
fn explain_shows_each_rule_and_the_decision_without_running() {
    let t = TestHost::new(&[FS, CALC])
        .config(WRITES_UNDER_SRC)
        .sandbox(SandboxMode::WorkspaceWrite);
    let (code, stdout, stderr) = run_cli(t.cli().args([
        "policy",
        "explain",
        "write_file",
        r#"{"path":"notes.md","content":"x"}"#,
    ]));
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains("rule 1 (line 2) [allow] no match: `tools` does not match `write_file`"),
        "{stdout}"
    );
    assert!(
        stdout.contains("rule 2 (line 7) [allow] no match: `when.\"/path\"` does not match"),
        "{stdout}"
    );
    assert!(
        stdout.contains("rule 3 (line 13) [deny] matches"),
        "{stdout}"
    );
    assert!(stdout.contains("decision: deny"), "{stdout}");
    assert!(
        !t.workspace.join("notes.md").exists(),
        "explain runs nothing"
    );

    let (code, stdout, _) = run_cli(t.cli().args([
        "policy",
        "explain",
        "write_file",
        r#"{"path":"src/a.rs","content":"x"}"#,
        "--json",
    ]));
    assert_eq!(code, 0);
    let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(doc["decision"]["verdict"], "allow");
    assert_eq!(doc["decision"]["matched"], serde_json::json!([2]));

    let (code, _, stderr) = run_cli(t.cli().args(["policy", "explain", "nope"]));
    assert_eq!(code, 2);
    assert!(stderr.contains("UNKNOWN_TOOL"), "{stderr}");
}

#[test]
fn list_marks_decisions_that_depend_on_arguments() {
    let t = TestHost::new(&[FS]).config(WRITES_UNDER_SRC);
    let (code, stdout, _) = run_cli(t.cli().args(["list", "--json"]));
    assert_eq!(code, 0);
    let rows: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let write = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "write_file")
        .unwrap();
    assert_eq!(write["depends_on_args"], true);
    let read = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "read_file")
        .unwrap();
    assert_eq!(
        (read["decision"].as_str(), read["depends_on_args"].as_bool()),
        (Some("allow"), Some(false))
    );
}

#[test]
fn a_dangerous_tool_runs_only_when_a_rule_names_it() {
    let by_glob = "[[rule]]\ntools = [\"*\"]\ndecision = \"allow\"\nreason = \"anything goes\"\n";
    let t = TestHost::new(&[toolwarden_tests::DANGEROUS]).config(by_glob);
    let host = t.controller();
    let r = call(&host, "purge_everything", "{}");
    assert_eq!(r.code(), Some(ErrorCode::PolicyDenied), "{r:#?}");
    assert!(r.error.unwrap().message.contains("dangerous"));
    let named = format!(
        "{by_glob}\n[[rule]]\ntools = [\"purge_everything\"]\ndecision = \"allow\"\nreason = \"reviewed\"\n"
    );
    let t = t.config(&named);
    let host = t.controller();
    assert_eq!(call(&host, "purge_everything", "{}").status, Status::Ok);
}
