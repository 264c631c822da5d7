//! Deny-only guards after policy: per-session budgets and duplicate calls.
//! (The sandbox-mode and path guards are exercised in `sandbox.rs`.)

use crate::harness::{ALLOW_ALL, TestHost, run_cli, runtime};
use toolwarden::{CallRequest, CallResult, Controller, ErrorCode, SandboxMode, SessionId, Status};
use toolwarden_tests::{CALC, FS, HOSTILE};

fn call_in(host: &Controller, session: &str, tool: &str, args: &str) -> CallResult {
    let request = CallRequest::new(tool, args).in_session(SessionId::from(session.to_owned()));
    runtime().block_on(host.handle(request))
}

fn add(n: i64) -> String {
    format!(r#"{{"op":"add","a":{n},"b":1}}"#)
}

#[test]
fn max_calls_counts_only_executed_calls_of_the_session() {
    let policy = "[budget]\nmax_calls = 2\n\n[[rule]]\ntools = [\"calc\"]\ndecision = \"allow\"\nreason = \"ok\"\n";
    let t = TestHost::new(&[CALC, HOSTILE]).config(policy);
    let host = t.controller();
    for _ in 0..3 {
        assert_eq!(
            call_in(&host, "s1", "hostile_spin", "{}").code(),
            Some(ErrorCode::PolicyDenied)
        );
        assert_eq!(
            call_in(&host, "s1", "calc", r#"{"op":"add"}"#).code(),
            Some(ErrorCode::InvalidArgs)
        );
    }
    assert_eq!(call_in(&host, "s1", "calc", &add(1)).status, Status::Ok);
    assert_eq!(call_in(&host, "s1", "calc", &add(2)).status, Status::Ok);
    let over = call_in(&host, "s1", "calc", &add(3));
    assert_eq!(over.code(), Some(ErrorCode::BudgetExceeded), "{over:#?}");
    assert_eq!(over.status, Status::Denied);
    assert!(over.error.unwrap().message.contains("budget.max_calls"));
    assert_eq!(
        call_in(&host, "s2", "calc", &add(3)).status,
        Status::Ok,
        "budgets are per session"
    );
}

#[test]
fn max_calls_per_tool_and_max_run_time() {
    let t = TestHost::new(&[CALC, HOSTILE]).config(&format!(
        "[budget]\nmax_calls_per_tool = 1\nmax_run_ms = 150\n\n{ALLOW_ALL}"
    ));
    let host = t.controller();
    assert_eq!(call_in(&host, "s", "calc", &add(1)).status, Status::Ok);
    assert_eq!(
        call_in(&host, "s", "calc", &add(2)).code(),
        Some(ErrorCode::BudgetExceeded)
    );
    let t = TestHost::new(&[HOSTILE]).config(&format!(
        "[budget]\nmax_run_ms = 150\nallow_duplicate_calls = true\n\n{ALLOW_ALL}"
    ));
    let host = t.controller();
    assert_eq!(
        call_in(&host, "s", "hostile_sleep", r#"{"ms":100}"#).status,
        Status::Ok
    );
    assert_eq!(
        call_in(&host, "s", "hostile_sleep", r#"{"ms":100}"#).status,
        Status::Ok,
        "100 ms spent < 150"
    );
    let over = call_in(&host, "s", "hostile_sleep", r#"{"ms":1}"#);
    assert_eq!(over.code(), Some(ErrorCode::BudgetExceeded), "{over:#?}");
    assert!(over.error.unwrap().message.contains("max_run_ms"));
}

#[test]
fn a_repeated_call_with_effects_is_a_duplicate_unless_harmless_or_allowed() {
    let t = TestHost::new(&[FS]).sandbox(SandboxMode::WorkspaceWrite);
    t.file("r.txt", "r");
    let host = t.controller();
    let write = r#"{"path":"w.txt","content":"w"}"#;
    assert_eq!(call_in(&host, "s", "write_file", write).status, Status::Ok);
    let again = call_in(&host, "s", "write_file", write);
    assert_eq!(again.code(), Some(ErrorCode::DuplicateCall), "{again:#?}");
    let reordered = r#"{ "content": "w", "path": "w.txt" }"#;
    assert_eq!(
        call_in(&host, "s", "write_file", reordered).code(),
        Some(ErrorCode::DuplicateCall),
        "same canonical arguments"
    );
    assert_eq!(
        call_in(
            &host,
            "s",
            "write_file",
            r#"{"path":"w.txt","content":"v"}"#
        )
        .status,
        Status::Ok
    );
    assert_eq!(
        call_in(&host, "other", "write_file", write).status,
        Status::Ok
    );
    for _ in 0..2 {
        assert_eq!(
            call_in(&host, "s", "read_file", r#"{"path":"r.txt"}"#).status,
            Status::Ok,
            "read-only and idempotent"
        );
    }
    let t = t.config(&format!(
        "[budget]\nallow_duplicate_calls = true\n\n{ALLOW_ALL}"
    ));
    let host = t.controller();
    assert_eq!(
        call_in(&host, "s", "write_file", write).status,
        Status::Ok,
        "the config can turn the guard off"
    );
}

#[test]
fn each_cli_invocation_without_session_is_a_fresh_session() {
    let t = TestHost::new(&[FS]).sandbox(SandboxMode::WorkspaceWrite);
    let write = r#"{"path":"w.txt","content":"w"}"#;
    for _ in 0..2 {
        let (code, _, stderr) = run_cli(t.cli().args(["call", "write_file", write]));
        assert_eq!(code, 0, "{stderr}");
    }
    let (code, stdout, _) =
        run_cli(
            t.cli()
                .args(["call", "write_file", write, "--session", "fixed"]),
        );
    assert_eq!(code, 0, "{stdout}");
    let (code, stdout, _) =
        run_cli(
            t.cli()
                .args(["call", "write_file", write, "--session", "fixed"]),
        );
    assert_eq!(code, 1);
    assert!(stdout.contains("DUPLICATE_CALL"), "{stdout}");
}

#[test]
fn a_zero_budget_is_a_config_error() {
    let err = TestHost::new(&[])
        .config("[budget]\nmax_calls = 0\n")
        .build_config()
        .expect_err("zero");
    assert_eq!(err.code(), "CONFIG_INVALID");
    assert!(err.to_string().contains("line 1"), "{err}");
}
