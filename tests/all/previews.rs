//! Previews: a call that changes the workspace and needs a person's
//! approval is shown to them as its plugin previews it, run in a sandbox
//! that cannot write; a write is a diff against the file as it is, and the
//! approval is held to that file: changed before the approved call runs,
//! the call is refused. A finished call is shown again, later, as its tool
//! shows its result: from the arguments and value the audit log kept, in a
//! sandbox with nothing to reach.

use crate::harness::{TestHost, outcome_of, run_cli};
use serde_json::Value;
use toolwarden::{CallRequest, CallResult, Controller, ErrorCode, SandboxMode, SessionId, Status};
use toolwarden_tests::{FS, LEDGER};

const ASK: &str = r#"
[[rule]]
tools = ["write_file", "ledger_append"]
decision = "ask"
reason = "a person sees every change"
"#;

fn host() -> TestHost {
    TestHost::new(&[FS, LEDGER])
        .sandbox(SandboxMode::WorkspaceWrite)
        .config(ASK)
}

fn call(host: &Controller, tool: &str, args: &str, approval: Option<&str>) -> CallResult {
    let mut request =
        CallRequest::new(tool, args).in_session(SessionId::from("previewed".to_owned()));
    if let Some(id) = approval {
        request = request.with_approval(id);
    }
    crate::harness::runtime().block_on(host.handle(request))
}

fn show(t: &TestHost, id: &str) -> (String, Value) {
    let (code, text, stderr) = run_cli(t.cli().args(["approvals", "show", id]));
    assert_eq!(code, 0, "{stderr}");
    let (code, json, stderr) = run_cli(t.cli().args(["approvals", "show", id, "--json"]));
    assert_eq!(code, 0, "{stderr}");
    (text, serde_json::from_str(&json).unwrap())
}

fn approve(t: &TestHost, id: &str) {
    let (code, _, stderr) = run_cli(t.cli().args(["approvals", "approve", id]));
    assert_eq!(code, 0, "{stderr}");
}

#[test]
fn a_write_is_previewed_as_a_diff_and_refused_once_the_file_changed() {
    let t = host();
    t.file("notes.md", "one\ntwo\nthree\n");
    let host = t.controller();
    let args = r#"{"path":"notes.md","content":"one\nTWO\nthree\n"}"#;
    let asked = call(&host, "write_file", args, None);
    assert_eq!(
        asked.code(),
        Some(ErrorCode::ApprovalRequired),
        "{asked:#?}"
    );
    let id = asked.approval_id.unwrap();
    let (text, json) = show(&t, &id);
    assert!(text.contains("--- a/notes.md"), "{text}");
    assert!(text.contains("-two") && text.contains("+TWO"), "{text}");
    assert!(
        text.contains("held to    the current content of notes.md"),
        "{text}"
    );
    assert_eq!(json["preview"]["state"], "shown", "{json:#}");
    assert_eq!(json["preview"]["view"], "diff");
    assert_eq!(json["bound_files"], serde_json::json!(["notes.md"]));
    approve(&t, &id);

    // Someone edits the file after the person looked.
    std::fs::write(t.workspace.join("notes.md"), "one\ntwo\nthree\nfour\n").unwrap();
    let refused = call(&host, "write_file", args, Some(&id));
    assert_eq!(
        refused.code(),
        Some(ErrorCode::ApprovalInvalid),
        "{refused:#?}"
    );
    let message = &refused.error.as_ref().unwrap().message;
    assert!(message.contains("`notes.md` changed"), "{message}");
    assert_eq!(
        std::fs::read_to_string(t.workspace.join("notes.md")).unwrap(),
        "one\ntwo\nthree\nfour\n",
        "nothing ran"
    );

    // Asked again, the diff is against the file as it is now; approved
    // and unchanged, the call runs once.
    let again = call(&host, "write_file", args, None);
    let id = again.approval_id.unwrap();
    let (text, _) = show(&t, &id);
    assert!(text.contains("-four"), "{text}");
    approve(&t, &id);
    let ran = call(&host, "write_file", args, Some(&id));
    assert_eq!(ran.status, Status::Ok, "{ran:#?}");
    assert_eq!(
        std::fs::read_to_string(t.workspace.join("notes.md")).unwrap(),
        "one\nTWO\nthree\n"
    );
}

#[test]
fn a_new_file_is_held_to_not_existing() {
    let t = host();
    let host = t.controller();
    let args = r#"{"path":"fresh.md","content":"hello\n"}"#;
    let id = call(&host, "write_file", args, None).approval_id.unwrap();
    let (text, _) = show(&t, &id);
    assert!(
        text.contains("--- /dev/null") && text.contains("+hello"),
        "{text}"
    );
    approve(&t, &id);
    t.file("fresh.md", "someone was first\n");
    let refused = call(&host, "write_file", args, Some(&id));
    assert_eq!(
        refused.code(),
        Some(ErrorCode::ApprovalInvalid),
        "{refused:#?}"
    );
}

#[test]
fn a_preview_cannot_write_and_one_that_fails_does_not_stop_the_approval() {
    let t = host();
    let host = t.controller();
    let asked = call(&host, "ledger_append", r#"{"entry":"invoice 9"}"#, None);
    let id = asked.approval_id.unwrap();
    let (text, json) = show(&t, &id);
    assert!(
        text.contains("would      append `invoice 9` to the ledger"),
        "{text}"
    );
    assert_eq!(json["preview"]["view"], "generic");
    assert!(
        !t.workspace.join("preview-was-here.txt").exists(),
        "the preview's sandbox cannot write"
    );

    let broken = call(
        &host,
        "ledger_append",
        r#"{"entry":"break the preview"}"#,
        None,
    );
    assert_eq!(
        broken.code(),
        Some(ErrorCode::ApprovalRequired),
        "{broken:#?}"
    );
    let id = broken.approval_id.unwrap();
    let (text, json) = show(&t, &id);
    assert_eq!(json["preview"]["state"], "failed", "{json:#}");
    assert!(
        text.contains("the plugin's preview failed: TOOL_CRASHED"),
        "{text}"
    );
    approve(&t, &id);
    let ran = call(
        &host,
        "ledger_append",
        r#"{"entry":"break the preview"}"#,
        Some(&id),
    );
    assert_eq!(ran.status, Status::Ok, "{ran:#?}");
}

fn shown(t: &TestHost, host: &Controller, call_id: &str) -> (String, Value) {
    outcome_of(host, call_id);
    let (code, text, stderr) = run_cli(t.cli().args(["audit", "show", call_id]));
    assert_eq!(code, 0, "{stderr}");
    let (code, json, stderr) = run_cli(t.cli().args(["audit", "show", call_id, "--json"]));
    assert_eq!(code, 0, "{stderr}");
    (text, serde_json::from_str(&json).unwrap())
}

const READS: &str = r#"
[[rule]]
tools = ["read_file", "search_text", "calc"]
decision = "allow"
reason = "reads are fine"
"#;

#[test]
fn a_finished_read_is_shown_again_from_what_the_audit_log_kept() {
    let t = TestHost::new(&[FS]).config(READS);
    t.file("notes.md", "alpha\nbeta\n");
    t.file("src/lib.rs", "fn beta() {}\n");
    let host = t.controller();
    let read = call(&host, "read_file", r#"{"path":"notes.md"}"#, None);
    assert_eq!(read.status, Status::Ok, "{read:#?}");
    let found = call(
        &host,
        "search_text",
        r#"{"pattern":"beta","path":"."}"#,
        None,
    );
    assert_eq!(found.status, Status::Ok, "{found:#?}");
    // The view is of the call as it was, not of the file as it is now.
    std::fs::write(t.workspace.join("notes.md"), "changed since\n").unwrap();

    let (text, json) = shown(&t, &host, read.call_id.as_str());
    assert!(text.contains("tool       read_file"), "{text}");
    assert!(text.contains("outcome    ok"), "{text}");
    assert!(
        text.contains("shows      read notes.md (11 bytes)"),
        "{text}"
    );
    assert!(
        text.contains("alpha") && !text.contains("changed since"),
        "{text}"
    );
    assert_eq!(json["result"]["state"], "shown", "{json:#}");
    assert_eq!(json["result"]["view"], "read");
    assert_eq!(json["result"]["text"], "alpha\nbeta\n");
    assert_eq!(json["other_build"], false);

    let (_, json) = shown(&t, &host, found.call_id.as_str());
    assert_eq!(json["result"]["view"], "search", "{json:#}");
    let title = json["result"]["title"].as_str().unwrap();
    assert!(title.contains("2 matches"), "{title}");
    let body = json["result"]["text"].as_str().unwrap();
    assert!(body.contains("notes.md:2: beta"), "{body}");
    assert!(body.contains("src/lib.rs:1: fn beta() {}"), "{body}");
}

#[test]
fn a_result_view_sees_no_workspace_runs_nothing_and_a_spinning_one_times_out() {
    let t = host();
    let host = t.controller();
    let entry = r#"{"entry":"invoice 12"}"#;
    let id = call(&host, "ledger_append", entry, None)
        .approval_id
        .unwrap();
    approve(&t, &id);
    let ran = call(&host, "ledger_append", entry, Some(&id));
    assert_eq!(ran.status, Status::Ok, "{ran:#?}");

    let (text, json) = shown(&t, &host, ran.call_id.as_str());
    assert!(
        text.contains("asked      append `invoice 12` to the ledger"),
        "the approver's preview comes with the call: {text}"
    );
    assert!(
        text.contains("shows      appended `invoice 12`: 1 lines"),
        "{text}"
    );
    assert_eq!(
        json["result"]["text"], "the view could see the ledger file: false",
        "a result view gets no filesystem: {json:#}"
    );
    assert_eq!(
        std::fs::read_to_string(t.workspace.join("ledger.txt")).unwrap(),
        "invoice 12\n",
        "showing the call did not run the tool"
    );

    let spin = r#"{"entry":"spin the view"}"#;
    let id = call(&host, "ledger_append", spin, None)
        .approval_id
        .unwrap();
    approve(&t, &id);
    let ran = call(&host, "ledger_append", spin, Some(&id));
    assert_eq!(ran.status, Status::Ok, "{ran:#?}");
    let started = std::time::Instant::now();
    let (text, json) = shown(&t, &host, ran.call_id.as_str());
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    assert_eq!(json["result"]["state"], "failed", "{json:#}");
    assert!(
        text.contains("view       none: the plugin's view failed: TIMEOUT"),
        "{text}"
    );
    // The host that ran the view's plugin goes on.
    let after = call(&host, "ledger_append", entry, None);
    assert_eq!(
        after.code(),
        Some(ErrorCode::ApprovalRequired),
        "{after:#?}"
    );
}

#[test]
fn calls_without_a_view_say_why_and_an_unknown_call_is_an_error() {
    let t = TestHost::new(&[FS, toolwarden_tests::CALC]).config(READS);
    let host = t.controller();
    let sum = call(&host, "calc", r#"{"op":"add","a":2,"b":3}"#, None);
    assert_eq!(sum.status, Status::Ok, "{sum:#?}");
    let (text, json) = shown(&t, &host, sum.call_id.as_str());
    assert!(
        text.contains("view       none: the tool has no view of this result"),
        "{text}"
    );
    assert!(json.get("result").is_none(), "{json:#}");

    let missing = call(&host, "read_file", r#"{"path":"nowhere.md"}"#, None);
    assert_eq!(missing.code(), Some(ErrorCode::ToolFailed), "{missing:#?}");
    let (text, _) = shown(&t, &host, missing.call_id.as_str());
    assert!(text.contains("outcome    TOOL_FAILED"), "{text}");
    assert!(
        text.contains("view       none: the call returned no value to show"),
        "{text}"
    );

    let denied = call(&host, "write_file", r#"{"path":"a","content":"b"}"#, None);
    assert_eq!(denied.code(), Some(ErrorCode::PolicyDenied), "{denied:#?}");
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !crate::harness::audit(&host, denied.call_id.as_str())
        .iter()
        .any(|r| r.kind == "refused")
    {
        assert!(
            std::time::Instant::now() < until,
            "the refusal was never recorded"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let (code, text, stderr) = run_cli(t.cli().args(["audit", "show", denied.call_id.as_str()]));
    assert_eq!(code, 0, "{stderr}");
    assert!(text.contains("outcome    POLICY_DENIED"), "{text}");

    let (code, _, stderr) = run_cli(t.cli().args(["audit", "show", "no-such-call"]));
    assert_ne!(code, 0);
    assert!(
        stderr.contains("the audit log has no call `no-such-call`"),
        "{stderr}"
    );
}
