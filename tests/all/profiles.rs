//! Tool sets per intent: a session that declares a profile sees and calls
//! only the tools the profile names; an unknown profile sees nothing; the
//! profile is recorded with every call and bound into approvals.

use crate::harness::{TestHost, run_cli, run_cli_with_stdin};
use serde_json::Value;
use toolwarden::{CallRequest, ErrorCode, Status};
use toolwarden_tests::{CALC, FS};

const PROFILES: &str = r#"
[profile.review]
tools = ["read_*", "list_dir", "search_*"]

[profile.maths]
tools = ["calc"]

[[rule]]
tools = ["*"]
decision = "allow"
reason = "tests allow everything"
"#;

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

fn listed(t: &TestHost, extra: &[&str]) -> Vec<String> {
    let (code, stdout, stderr) = run_cli(t.cli().args(["list", "--json"]).args(extra));
    assert_eq!(code, 0, "{stderr}");
    json(&stdout)
        .as_array()
        .expect("a JSON array")
        .iter()
        .map(|tool| tool["name"].as_str().expect("a name").to_owned())
        .collect()
}

/// `calc` adds 1 and 2 through the CLI in `profile`: (exit code, result).
fn add_in_profile(t: &TestHost, profile: &str) -> (i32, Value) {
    let (code, stdout, _) = run_cli(t.cli().args([
        "call",
        "calc",
        r#"{"op":"add","a":1,"b":2}"#,
        "--profile",
        profile,
        "--json",
    ]));
    (code, json(&stdout))
}

fn run(host: &toolwarden::Controller, request: CallRequest) -> toolwarden::CallResult {
    crate::harness::runtime().block_on(host.handle(request))
}

#[test]
fn a_profile_hides_the_tools_it_does_not_name_and_refuses_calls_to_them() {
    let t = TestHost::new(&[CALC, FS]).config(PROFILES);
    t.file("notes.txt", "reviewed");
    assert_eq!(
        listed(&t, &[]),
        ["calc", "list_dir", "read_file", "search_text", "write_file"]
    );
    assert_eq!(
        listed(&t, &["--profile", "review"]),
        ["list_dir", "read_file", "search_text"]
    );
    assert_eq!(listed(&t, &["--profile", "maths"]), ["calc"]);

    let host = t.controller();
    let outside = run(
        &host,
        CallRequest::new("write_file", r#"{"path":"notes.txt","content":"x"}"#)
            .with_profile("review"),
    );
    assert_eq!(outside.code(), Some(ErrorCode::UnknownTool), "{outside:#?}");
    let message = &outside.error.as_ref().expect("an error").message;
    assert!(message.contains("profile `review`"), "{message}");
    assert!(
        !message.contains("write_file,") && !message.contains("calc"),
        "the refusal names only the profile's tools: {message}"
    );
    assert_eq!(
        std::fs::read_to_string(t.workspace.join("notes.txt")).unwrap(),
        "reviewed",
        "nothing ran"
    );
    let inside = run(
        &host,
        CallRequest::new("read_file", r#"{"path":"notes.txt"}"#).with_profile("review"),
    );
    assert_eq!(inside.status, Status::Ok, "{inside:#?}");

    let (code, refused) = add_in_profile(&t, "review");
    assert_eq!(code, 1);
    assert_eq!(refused["error"]["code"], "UNKNOWN_TOOL");
}

#[test]
fn an_unknown_profile_fails_closed() {
    let t = TestHost::new(&[CALC, FS]).config(PROFILES);
    let host = t.controller();
    let result = run(
        &host,
        CallRequest::new("calc", r#"{"op":"add","a":1,"b":2}"#).with_profile("reveiw"),
    );
    assert_eq!(result.code(), Some(ErrorCode::UnknownTool), "{result:#?}");
    let offered = host.offered_tools(Some("reveiw"), |tool| tool.spec().name.clone());
    assert!(offered.is_empty(), "{offered:?}");
    assert_eq!(host.offered_tools(None, |_| ()).len(), 5);

    // At the command line a typo is pointed out, with the profiles there are.
    let (code, _, stderr) = run_cli(t.cli().args(["list", "--profile", "reveiw"]));
    assert_eq!(code, 2, "a usage error");
    assert!(stderr.contains("no profile `reveiw`"), "{stderr}");
    assert!(stderr.contains("`maths`, `review`"), "{stderr}");
    let (code, _, stderr) = run_cli(t.cli().args(["schemas", "--profile", "reveiw"]));
    assert_eq!(code, 2, "{stderr}");
}

#[test]
fn schemas_and_turns_follow_the_profile() {
    let t = TestHost::new(&[CALC, FS]).config(PROFILES);
    let (code, stdout, stderr) =
        run_cli(
            t.cli()
                .args(["schemas", "--format", "anthropic", "--profile", "maths"]),
        );
    assert_eq!(code, 0, "{stderr}");
    let names: Vec<_> = json(&stdout)
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(names, ["calc"]);

    let turn = r#"[
        {"type":"tool_use","id":"t1","name":"calc","input":{"op":"add","a":1,"b":2}},
        {"type":"tool_use","id":"t2","name":"list_dir","input":{"path":"."}}
    ]"#;
    let (code, stdout, stderr) = run_cli_with_stdin(
        t.cli().args(["turn", "-", "--profile", "maths"]),
        turn.as_bytes(),
    );
    assert_eq!(code, 1, "a call in the turn failed: {stderr}");
    let results = json(&stdout);
    assert_eq!(results[0]["content"], "3", "{results}");
    assert_eq!(results[1]["is_error"], true, "{results}");
    let refusal = results[1]["content"].to_string();
    assert!(refusal.contains("UNKNOWN_TOOL"), "{refusal}");
}

#[test]
fn every_call_records_its_profile() {
    let t = TestHost::new(&[CALC]).config(PROFILES);
    let (_, ran) = add_in_profile(&t, "maths");
    let id = ran["call_id"].as_str().unwrap().to_owned();
    let (_, stdout, _) = run_cli(t.cli().args(["audit", "--json", "--call", &id]));
    let records = json(&stdout);
    let call = records
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["kind"] == "call")
        .expect("a call record");
    assert_eq!(call["data"]["profile"], "maths", "{records}");

    let plain = call_id_of(&t, &[]);
    let (_, stdout, _) = run_cli(t.cli().args(["audit", "--json", "--call", &plain]));
    assert!(
        json(&stdout)
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["data"].get("profile").is_none()),
        "{stdout}"
    );
}

fn call_id_of(t: &TestHost, extra: &[&str]) -> String {
    let (_, stdout, _) = run_cli(
        t.cli()
            .args(["call", "calc", r#"{"op":"mul","a":2,"b":3}"#, "--json"])
            .args(extra),
    );
    json(&stdout)["call_id"].as_str().unwrap().to_owned()
}

#[test]
fn an_approval_is_bound_to_the_profile_that_asked() {
    let config = PROFILES.replace(
        "[[rule]]",
        "[[rule]]\ntools = [\"calc\"]\ndecision = \"ask\"\nreason = \"check the sums\"\n\n[[rule]]",
    );
    let t = TestHost::new(&[CALC]).config(&config);
    let add = r#"{"op":"add","a":20,"b":22}"#;
    let cli_call = |extra: &[&str]| {
        let (code, stdout, _) = run_cli(
            t.cli()
                .args(["call", "calc", add, "--session", "s1", "--json"])
                .args(extra),
        );
        (code, json(&stdout))
    };
    let (code, asked) = cli_call(&["--profile", "maths"]);
    assert_eq!(code, 3, "{asked}");
    let id = asked["approval_id"].as_str().unwrap().to_owned();
    let (_, shown, _) = run_cli(t.cli().args(["approvals", "show", &id, "--json"]));
    assert_eq!(json(&shown)["profile"], "maths");
    let (_, shown, _) = run_cli(t.cli().args(["approvals", "show", &id]));
    assert!(shown.contains("profile    maths"), "{shown}");
    let (code, _, stderr) = run_cli(t.cli().args(["approvals", "approve", &id]));
    assert_eq!(code, 0, "{stderr}");

    let (code, other) = cli_call(&["--approval", &id]);
    assert_eq!(
        (code, &other["error"]["code"]),
        (1, &Value::from("APPROVAL_INVALID"))
    );
    let message = other["error"]["message"].as_str().unwrap();
    assert!(message.contains("another profile"), "{message}");
    let (code, ran) = cli_call(&["--approval", &id, "--profile", "maths"]);
    assert_eq!(code, 0, "the refusal left the approval usable: {ran}");
    assert_eq!(ran["value"]["result"], 42);
}

#[test]
fn a_profile_that_offers_nothing_or_is_misnamed_is_a_config_error() {
    for (toml, expected) in [
        (
            "[profile.empty]\ntools = []\n",
            "`profile.empty`: `tools` is empty",
        ),
        (
            "[profile.\"two words\"]\ntools = [\"calc\"]\n",
            "a profile name is",
        ),
        ("[profile.x]\ntools = [\"[\"]\n", "is not a glob"),
        ("[profile.x]\ntool = [\"calc\"]\n", "tool"),
    ] {
        let t = TestHost::new(&[CALC]).config(toml);
        let error = t.build_config().expect_err(toml).to_string();
        assert!(error.contains(expected), "{toml}: {error}");
    }
}
