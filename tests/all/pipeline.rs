//! The controller's steps, in order: resolve, validate, policy, approval.

use crate::harness::{TestHost, call};
use toolwarden::{CallRequest, ErrorCode, Status};
use toolwarden_tests::{CALC, FS};

#[test]
fn unknown_tool_keeps_the_call_id() {
    let t = TestHost::new(&[CALC]);
    let host = t.controller();
    let request = CallRequest::new("no_such_tool", "{}");
    let id = request.call_id.to_string();
    let r = crate::harness::runtime().block_on(host.handle(request));
    assert_eq!(r.call_id, id);
    assert_eq!(r.code(), Some(ErrorCode::UnknownTool));
    assert!(r.error.unwrap().message.contains("available tools: calc"));
}

#[test]
fn invalid_args_name_the_failing_path_and_reason() {
    let t = TestHost::new(&[CALC]);
    let host = t.controller();
    let r = call(&host, "calc", r#"{"op":"root","a":"1","extra":true}"#);
    assert_eq!(r.code(), Some(ErrorCode::InvalidArgs));
    let message = r.error.unwrap().message;
    for expected in [
        "`/` has an unexpected property `extra`",
        "`/a` must be integer, got string",
        "`/op` must be one of",
        "missing the required property `b`",
    ] {
        assert!(
            message.contains(expected),
            "missing {expected:?} in {message}"
        );
    }
    for bad in ["not json", "[1,2]", "{\"a\":", "null"] {
        assert_eq!(
            call(&host, "calc", bad).code(),
            Some(ErrorCode::InvalidArgs),
            "{bad}"
        );
    }
}

#[test]
fn no_matching_rule_is_denied_with_the_rule_to_add() {
    let t = TestHost::new(&[CALC]).config("");
    let host = t.controller();
    let r = call(&host, "calc", r#"{"op":"add","a":1,"b":2}"#);
    assert_eq!(r.status, Status::Denied);
    assert_eq!(r.code(), Some(ErrorCode::PolicyDenied));
    assert!(r.error.unwrap().message.contains("tools = [\"calc\"]"));
    assert_eq!(r.fuel_used, None, "nothing ran");
}

#[test]
fn the_most_restrictive_matching_rule_wins() {
    let policy = r#"
[[rule]]
tools = ["read_file"]
decision = "deny"
reason = "reads go through review"

[[rule]]
tools = ["*"]
decision = "allow"
reason = "everything else is fine"
"#;
    let t = TestHost::new(&[CALC, FS]).config(policy);
    t.file("a.txt", "a");
    let host = t.controller();
    let denied = call(&host, "read_file", r#"{"path":"a.txt"}"#);
    assert_eq!(denied.code(), Some(ErrorCode::PolicyDenied));
    assert!(
        denied
            .error
            .unwrap()
            .message
            .contains("reads go through review")
    );
    assert_eq!(
        call(&host, "list_dir", r#"{"path":"."}"#).status,
        Status::Ok
    );
}

#[test]
fn ask_without_an_approval_records_one_and_runs_nothing() {
    let policy = "[[rule]]\ntools = [\"calc\"]\ndecision = \"ask\"\nreason = \"a person must check the numbers\"\n";
    let t = TestHost::new(&[CALC]).config(policy);
    let host = t.controller();
    let r = call(&host, "calc", r#"{"op":"add","a":1,"b":2}"#);
    assert_eq!(r.status, Status::PendingApproval);
    assert_eq!(r.code(), Some(ErrorCode::ApprovalRequired));
    assert_eq!(r.fuel_used, None, "nothing ran");
    let id = r.approval_id.expect("the pending approval's id");
    let pending = host.records().approval(&id).unwrap().expect("persisted");
    assert_eq!((pending.tool.as_str(), pending.state), ("calc", "pending"));
    assert_eq!(
        pending.args,
        serde_json::json!({"op": "add", "a": 1, "b": 2})
    );
}

#[test]
fn a_config_with_conflicting_rules_does_not_start() {
    let policy = "[[rule]]\ntools = [\"calc\"]\ndecision = \"allow\"\nreason = \"a\"\n\n[[rule]]\ntools = [\"calc\"]\ndecision = \"deny\"\nreason = \"b\"\n";
    let err = TestHost::new(&[CALC])
        .config(policy)
        .build_config()
        .expect_err("conflict");
    assert_eq!(err.code(), "CONFIG_INVALID");
    assert!(err.to_string().contains("line 6"), "{err}");
}
