//! Idempotency by key: a tool its plugin declares keyed takes effect once
//! per (session, tool, arguments, approval); a repeat is answered with the
//! recorded output and runs nothing, which the ledger file in the
//! workspace proves by counting real runs.

use crate::harness::{ALLOW_ALL, TestHost, run_cli};
use serde_json::Value;
use toolwarden::{
    AuditFilter, CallRequest, CallResult, Controller, ErrorCode, SandboxMode, Status,
};
use toolwarden_tests::{HOSTILE, LEDGER};

fn ledger_host(extra: &str) -> TestHost {
    TestHost::new(&[LEDGER, HOSTILE])
        .sandbox(SandboxMode::WorkspaceWrite)
        .config(&format!("{extra}\n{ALLOW_ALL}"))
}

fn append(host: &Controller, session: &str, entry: &str) -> CallResult {
    let request = CallRequest::new("ledger_append", format!(r#"{{"entry":"{entry}"}}"#))
        .in_session(session.to_owned().into());
    crate::harness::runtime().block_on(host.handle(request))
}

fn ledger(t: &TestHost) -> Vec<String> {
    std::fs::read_to_string(t.workspace.join("ledger.txt"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn kinds(host: &Controller, call_id: &str) -> Vec<String> {
    host.records()
        .audit(&AuditFilter {
            call_id: Some(call_id.to_owned()),
            ..AuditFilter::default()
        })
        .unwrap()
        .into_iter()
        .map(|r| r.kind)
        .collect()
}

#[test]
fn a_repeat_of_a_keyed_call_is_answered_from_its_record_and_runs_nothing() {
    let t = ledger_host("");
    let host = t.controller();
    let first = append(&host, "s1", "paid invoice 7");
    assert_eq!(first.status, Status::Ok, "{first:#?}");
    assert_eq!(first.replayed_from, None);
    let again = append(&host, "s1", "paid invoice 7");
    assert_eq!(again.status, Status::Ok, "{again:#?}");
    assert_eq!(again.replayed_from.as_deref(), Some(first.call_id.as_str()));
    assert_eq!(again.value, first.value, "the recorded output, unchanged");
    assert_eq!(again.content, first.content);
    assert_eq!(ledger(&t), ["paid invoice 7"], "the tool ran once");
    assert_eq!(again.fuel_used, None, "nothing ran");

    let audit = kinds(&host, &again.call_id);
    assert_eq!(
        audit,
        ["call", "policy", "replayed", "outcome"],
        "{audit:?}"
    );
    let replayed = host
        .records()
        .audit(&AuditFilter {
            call_id: Some(again.call_id.clone()),
            ..AuditFilter::default()
        })
        .unwrap()
        .into_iter()
        .find(|r| r.kind == "replayed")
        .unwrap();
    assert_eq!(replayed.data["original_call_id"], first.call_id.as_str());
    assert_eq!(replayed.data["key"].as_str().unwrap().len(), 64);
}

#[test]
fn different_arguments_or_sessions_never_share_a_key() {
    let t = ledger_host("");
    let host = t.controller();
    for (session, entry) in [("s1", "a"), ("s1", "b"), ("s2", "a"), ("s1", "a")] {
        let r = append(&host, session, entry);
        assert_eq!(r.status, Status::Ok, "{r:#?}");
    }
    assert_eq!(
        ledger(&t),
        ["a", "b", "a"],
        "s1/a ran once, s2/a ran on its own"
    );
}

#[test]
fn a_keyed_call_that_failed_leaves_its_key_free_to_run_again() {
    let t = ledger_host("");
    // A directory where the ledger file goes: the append fails.
    std::fs::create_dir(t.workspace.join("ledger.txt")).unwrap();
    let host = t.controller();
    let failed = append(&host, "s1", "x");
    assert_eq!(failed.code(), Some(ErrorCode::ToolFailed), "{failed:#?}");
    std::fs::remove_dir(t.workspace.join("ledger.txt")).unwrap();
    let retried = append(&host, "s1", "x");
    assert_eq!(retried.status, Status::Ok, "not a duplicate: {retried:#?}");
    assert_eq!(retried.replayed_from, None);
    assert_eq!(ledger(&t), ["x"]);
}

#[test]
fn the_record_answers_repeats_only_within_its_window_and_across_restarts() {
    let t = ledger_host("[idempotency]\nwindow_seconds = 1\n");
    // The window is wall-clock time: compiled first, so that the second
    // call below, on a host started from the cache, comes well within it.
    let host = t.controller();
    host.registry().finish_compiling();
    let first = append(&host, "s1", "once a second");
    drop(host);
    assert_eq!(first.status, Status::Ok);
    // A new host on the same state directory knows the key.
    let again = append(&t.controller(), "s1", "once a second");
    assert_eq!(again.replayed_from.as_deref(), Some(first.call_id.as_str()));
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let later = append(&t.controller(), "s1", "once a second");
    assert_eq!(later.replayed_from, None, "{later:#?}");
    assert_eq!(ledger(&t), ["once a second", "once a second"]);
}

#[test]
fn a_keyed_call_that_needs_approval_is_asked_and_its_approved_run_recorded() {
    let t = TestHost::new(&[LEDGER])
        .sandbox(SandboxMode::WorkspaceWrite)
        .config(
            "[[rule]]\ntools = [\"ledger_append\"]\ndecision = \"ask\"\nreason = \"money moves\"\n",
        );
    let args = r#"{"entry":"wire 100"}"#;
    let cli = |extra: &[&str]| {
        let (code, stdout, stderr) = run_cli(
            t.cli()
                .args(["call", "ledger_append", args, "--session", "s1", "--json"])
                .args(extra),
        );
        let result: Value = serde_json::from_str(&stdout).unwrap_or_else(|_| panic!("{stderr}"));
        (code, result)
    };
    let (code, asked) = cli(&[]);
    assert_eq!(code, 3, "{asked}");
    let id = asked["approval_id"].as_str().unwrap().to_owned();
    let (code, _, stderr) = run_cli(t.cli().args(["approvals", "approve", &id]));
    assert_eq!(code, 0, "{stderr}");
    let (code, ran) = cli(&["--approval", &id]);
    assert_eq!(code, 0, "{ran}");
    // The client retries with the same approval (its answer was lost):
    // the approval is used up, but the key answers.
    let (code, repeat) = cli(&["--approval", &id]);
    assert_eq!(code, 0, "{repeat}");
    assert_eq!(repeat["replayed_from"], ran["call_id"]);
    assert_eq!(repeat["value"], ran["value"]);
    // Without the approval the policy asks again: nothing is answered
    // from the record of an approved run.
    let (code, unasked) = cli(&[]);
    assert_eq!(code, 3, "{unasked}");
    assert_eq!(ledger(&t), ["wire 100"]);
}

#[test]
fn list_and_inspect_show_which_tools_are_keyed() {
    let t = ledger_host("");
    let (code, stdout, stderr) = run_cli(t.cli().args([
        "inspect",
        t.plugins.join("ledger.wasm").to_str().unwrap(),
        "--json",
    ]));
    assert_eq!(code, 0, "{stderr}");
    let inspected: Value = serde_json::from_str(&stdout).unwrap();
    let text = inspected.to_string();
    assert!(text.contains(r#""keyed":true"#), "{text}");
    let (_, stdout, _) = run_cli(t.cli().args(["list", "--json"]));
    let listed: Value = serde_json::from_str(&stdout).unwrap();
    let keyed: Vec<_> = listed
        .as_array()
        .unwrap()
        .iter()
        .filter(|tool| tool["keyed"] == true)
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    assert_eq!(keyed, ["ledger_append"]);
    // A 0.2.0 plugin without the `keyed` export loads with no tool keyed.
    let (code, stdout, _) = run_cli(t.cli().args([
        "inspect",
        t.plugins.join("hostile.wasm").to_str().unwrap(),
        "--json",
    ]));
    assert_eq!(code, 0);
    assert!(!stdout.contains(r#""keyed""#), "{stdout}");
}
