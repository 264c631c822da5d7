//! Previews: a call that changes the workspace and needs a person's
//! approval is shown to them as its plugin previews it, run in a sandbox
//! that cannot write; a write is a diff against the file as it is, and the
//! approval is held to that file: changed before the approved call runs,
//! the call is refused.

use crate::harness::{TestHost, run_cli};
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
