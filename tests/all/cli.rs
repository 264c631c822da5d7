//! The `toolwarden` binary: output shapes and exit codes.

use crate::harness::{TestHost, run_cli};
use serde_json::Value;
use toolwarden::SandboxMode;
use toolwarden_tests::{BROKEN_TOOLS, CALC, FS, HOSTILE};

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

#[test]
fn list_json_spells_enums_as_the_wit_does() {
    let t = TestHost::new(&[CALC, FS]);
    let (code, stdout, stderr) = run_cli(t.cli().args(["list", "--json"]));
    assert_eq!(code, 0, "{stderr}");
    let list = json(&stdout);
    let rows = list.as_array().unwrap();
    assert_eq!(rows.len(), 5);
    let calc = &rows[0];
    assert_eq!(calc["name"], "calc");
    assert_eq!(calc["plugin"], "calc.wasm");
    assert_eq!(calc["risk"], "safe");
    assert_eq!(calc["filesystem"], "none");
    assert_eq!(
        calc["effects"],
        serde_json::json!(["read-only", "idempotent"])
    );
    assert_eq!(calc["decision"], "allow");
    let write = rows.iter().find(|r| r["name"] == "write_file").unwrap();
    assert_eq!(write["filesystem"], "workspace-write");
    assert_eq!(
        write["effects"],
        serde_json::json!(["mutates-workspace", "idempotent"])
    );
}

#[test]
fn list_names_a_broken_plugin_on_stderr_and_still_succeeds() {
    let t = TestHost::new(&[CALC, BROKEN_TOOLS]);
    let (code, stdout, stderr) = run_cli(t.cli().arg("list"));
    assert_eq!(code, 0);
    assert!(stderr.contains("broken_tools.wasm"), "{stderr}");
    assert!(
        stdout.contains("calc") && stdout.contains("POLICY"),
        "{stdout}"
    );
}

#[test]
fn inspect_shows_specs_hash_and_imports() {
    let t = TestHost::new(&[]);
    let (code, stdout, stderr) =
        run_cli(
            t.cli()
                .args(["inspect", crate::harness::wasm(FS), "--json"]),
        );
    assert_eq!(code, 0, "{stderr}");
    let doc = json(&stdout);
    assert_eq!(doc["sha256"].as_str().unwrap().len(), 64);
    let imports: Vec<&str> = doc["imports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i.as_str().unwrap())
        .collect();
    assert!(
        imports.iter().any(|i| i.starts_with("wasi:filesystem/")),
        "{imports:?}"
    );
    let tools: Vec<&str> = doc["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        tools,
        ["read_file", "list_dir", "search_text", "write_file"]
    );
    let (code, _, stderr) = run_cli(t.cli().args(["inspect", "/nonexistent.wasm"]));
    assert_eq!(code, 2);
    assert!(stderr.contains("/nonexistent.wasm"), "{stderr}");
}

#[test]
fn call_json_has_every_field_and_exit_codes_follow_the_status() {
    let t = TestHost::new(&[CALC, HOSTILE]).config(
        "[[rule]]\ntools = [\"calc\", \"hostile_panic\"]\ndecision = \"allow\"\nreason = \"ok\"\n\n\
         [[rule]]\ntools = [\"hostile_sleep\"]\ndecision = \"ask\"\nreason = \"slow\"\n",
    );
    let (code, stdout, _) =
        run_cli(
            t.cli()
                .args(["call", "calc", r#"{"op":"add","a":2,"b":3}"#, "--json"]),
        );
    assert_eq!(code, 0);
    let r = json(&stdout);
    for key in [
        "call_id",
        "tool",
        "status",
        "value",
        "content",
        "error",
        "approval_id",
        "duration_us",
        "fuel_used",
    ] {
        assert!(r.get(key).is_some(), "missing `{key}` in {r}");
    }
    assert_eq!(r["status"], "ok");
    assert_eq!(r["value"]["result"], 5);
    assert!(r["fuel_used"].as_u64().unwrap() > 0);

    let (code, stdout, _) = run_cli(t.cli().args(["call", "hostile_panic", "--json"]));
    assert_eq!(code, 1);
    let r = json(&stdout);
    assert_eq!(r["status"], "error");
    assert_eq!(r["error"]["code"], "TOOL_CRASHED");

    let (code, stdout, _) = run_cli(t.cli().args(["call", "hostile_spin", "--json"]));
    assert_eq!(code, 1);
    assert_eq!(json(&stdout)["status"], "denied");

    let (code, stdout, _) =
        run_cli(
            t.cli()
                .args(["call", "hostile_sleep", r#"{"ms":1}"#, "--json"]),
        );
    assert_eq!(code, 3);
    assert_eq!(json(&stdout)["status"], "pending_approval");

    let (code, _, stderr) = run_cli(t.cli().args(["call", "calc", "--sandbox", "everything"]));
    assert_eq!(code, 2, "{stderr}");
}

#[test]
fn call_reads_arguments_from_stdin_and_prints_short_human_output() {
    let t = TestHost::new(&[CALC]);
    let (_, stdout, _) = crate::harness::run_cli_with_stdin(
        t.cli().args(["call", "calc", "-"]),
        br#"{"op":"sub","a":10,"b":4}"#,
    );
    assert_eq!(stdout.trim(), "6");
    let (code, stdout, _) = run_cli(t.cli().args(["call", "calc", r#"{"op":"add"}"#]));
    assert_eq!(code, 1);
    assert!(stdout.starts_with("error [INVALID_ARGS]"), "{stdout}");
}

#[test]
fn a_bad_config_file_exits_2_with_file_line_and_hint() {
    let t = TestHost::new(&[CALC]).config("[limits]\ntimeout_ms = 100\nfuel_typo = 3\n");
    let (code, _, stderr) = run_cli(t.cli().arg("list"));
    assert_eq!(code, 2);
    assert!(
        stderr.contains("toolwarden.toml` line 3")
            && stderr.contains("fuel_typo")
            && stderr.contains("hint:"),
        "{stderr}"
    );
}

#[test]
fn sandbox_mode_comes_from_the_flag() {
    let t = TestHost::new(&[FS]).sandbox(SandboxMode::WorkspaceWrite);
    let (code, _, stderr) =
        run_cli(
            t.cli()
                .args(["call", "write_file", r#"{"path":"w.txt","content":"w"}"#]),
        );
    assert_eq!(code, 0, "{stderr}");
    let (code, stdout, _) = run_cli(t.cli().args([
        "call",
        "write_file",
        r#"{"path":"w2.txt","content":"w"}"#,
        "--sandbox",
        "read-only",
    ]));
    assert_eq!(code, 1, "{stdout}");
    assert!(!t.workspace.join("w2.txt").exists());
}

#[test]
fn check_lists_every_problem_with_a_fix_and_runs_nothing() {
    use toolwarden_tests::{BAD_SCHEMA, SHADOW};
    let policy = "[[rule]]\ntools = [\"calc\", \"read_file\", \"list_dir\", \"search_text\"]\ndecision = \"allow\"\nreason = \"ok\"\n\n\
                  [[rule]]\ntools = [\"wirte_file\"]\ndecision = \"ask\"\nreason = \"typo\"\n";
    let t = TestHost::new(&[CALC, FS, SHADOW, BAD_SCHEMA, BROKEN_TOOLS]).config(policy);
    let (code, stdout, _) = run_cli(t.cli().arg("check"));
    assert_eq!(code, 1, "{stdout}");
    let problems: Vec<&str> = stdout
        .lines()
        .filter(|l| !l.starts_with("  ") && !l.contains("problems ("))
        .collect();
    assert_eq!(problems.len(), 5, "{stdout}");
    // The rule it suggests parses when pasted, indentation and all.
    let suggested: String = stdout
        .lines()
        .skip_while(|l| !l.contains("tool `write_file`: no policy rule covers it"))
        .skip(2)
        .take_while(|l| l.starts_with("    "))
        .map(|l| format!("{l}\n"))
        .collect();
    let pasted: toml::Table = toml::from_str(&suggested).expect("a pasteable rule");
    assert_eq!(
        pasted["rule"][0]["tools"][0].as_str(),
        Some("write_file"),
        "{suggested}"
    );
    for expected in [
        "bad_schema.wasm: tool `loose`: input schema at `/properties/n/unevaluatedProperties`",
        "broken_tools.wasm: `tools()` failed: TOOL_CRASHED",
        "shadow.wasm: tool `read_file` is already served by",
        "tool `write_file`: no policy rule covers it",
        "rule 2 (line 6): matches none of the loaded tools",
    ] {
        assert!(
            problems.iter().any(|p| p.contains(expected)),
            "missing {expected:?} in:\n{stdout}"
        );
    }
    assert_eq!(stdout.matches("  fix: ").count(), 5);
    assert!(
        stdout.contains("5 problems (2 plugins, 5 tools, 2 rules)"),
        "{stdout}"
    );

    let (code, stdout, _) = run_cli(
        t.cli()
            .args(["check", crate::harness::wasm(CALC), "--json"]),
    );
    assert_eq!(code, 0, "{stdout}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        (
            report["tools"].as_u64(),
            report["problems"].as_array().map(Vec::len)
        ),
        (Some(1), Some(0))
    );
}

#[test]
fn call_trace_shows_each_step_and_where_a_call_stopped() {
    let t = TestHost::new(&[FS]);
    t.file("hello.txt", "hi");
    let steps = |args: &str| -> Vec<(String, String)> {
        let (_, stdout, _) =
            run_cli(
                t.cli()
                    .args(["call", "read_file", args, "--trace", "--json"]),
            );
        json(&stdout)["trace"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                (
                    s["step"].as_str().unwrap().to_owned(),
                    s["outcome"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    };
    let ok = steps(r#"{"path":"hello.txt"}"#);
    let names: Vec<&str> = ok.iter().map(|(s, _)| s.as_str()).collect();
    assert_eq!(
        names,
        [
            "materialize",
            "resolve",
            "validate",
            "paths",
            "policy",
            "guards",
            "approval",
            "audit",
            "sandbox",
            "output"
        ]
    );
    assert!(ok[6].1.contains("filesystem read-only"), "{ok:?}");
    let stopped = steps(r#"{"path":"../x"}"#);
    let last = stopped.last().unwrap();
    assert_eq!(last.0, "guards");
    assert!(last.1.starts_with("stopped: GUARD_DENIED"), "{stopped:?}");
    let (_, stdout, stderr) =
        run_cli(
            t.cli()
                .args(["call", "read_file", r#"{"path":"hello.txt"}"#, "--trace"]),
        );
    let printed: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(
        printed,
        serde_json::json!({"bytes": 2, "content": "hi", "path": "hello.txt", "truncated": false})
    );
    assert!(
        stderr.contains("sandbox") && stderr.contains(" ms "),
        "the trace goes to stderr: {stderr}"
    );
    let (_, stdout, _) =
        run_cli(
            t.cli()
                .args(["call", "read_file", r#"{"path":"hello.txt"}"#, "--json"]),
        );
    assert!(
        json(&stdout).get("trace").is_none(),
        "no trace unless asked"
    );
}

#[test]
fn check_counts_a_rule_that_depends_on_arguments_as_used() {
    let policy = "[[rule]]\ntools = [\"read_file\", \"list_dir\", \"search_text\", \"write_file\"]\ndecision = \"allow\"\nreason = \"ok\"\n\n\
                  [[rule]]\ntools = [\"write_file\"]\nwhen = { \"/path\" = \".git/**\" }\ndecision = \"deny\"\nreason = \"not git\"\n";
    let t = TestHost::new(&[FS]).config(policy);
    let (code, stdout, _) = run_cli(t.cli().arg("check"));
    assert_eq!(code, 0, "{stdout}");
    assert!(
        stdout.contains("ok: 1 plugins, 4 tools, 2 rules, no problems"),
        "{stdout}"
    );
}
