//! Deny-only guards after policy: per-session budgets and duplicate calls.
//! (The sandbox-mode and path guards are exercised in `sandbox.rs`.)

use crate::harness::{ALLOW_ALL, TestHost, run_cli, runtime};
use toolwarden::{
    CallRequest, CallResult, Controller, ErrorCode, MAX_RESIDENT_SESSIONS, SandboxMode, SessionId,
    Status,
};
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

/// A session the host minted has no history in the database to read back,
/// so its totals must outlive any number of other sessions while someone
/// (an MCP connection) still holds it.
#[test]
fn a_held_session_keeps_its_totals_while_many_others_come_and_go() {
    let t = TestHost::new(&[CALC, FS])
        .sandbox(SandboxMode::WorkspaceWrite)
        .config(&format!("[budget]\nmax_calls = 2\n\n{ALLOW_ALL}"));
    let host = t.controller();
    let held = SessionId::new();
    let call = |session: &SessionId, tool: &str, args: &str| {
        let request = CallRequest::new(tool, args).in_session(session.clone());
        runtime().block_on(host.handle(request))
    };
    let write = r#"{"path":"w.txt","content":"w"}"#;
    assert_eq!(call(&held, "write_file", write).status, Status::Ok);
    for n in 0..MAX_RESIDENT_SESSIONS as i64 + 100 {
        let passing = call(&SessionId::new(), "calc", &add(n));
        assert_eq!(passing.status, Status::Ok, "{passing:#?}");
    }
    let again = call(&held, "write_file", write);
    assert_eq!(again.code(), Some(ErrorCode::DuplicateCall), "{again:#?}");
    assert_eq!(call(&held, "calc", &add(0)).status, Status::Ok);
    let over = call(&held, "calc", &add(1));
    assert_eq!(over.code(), Some(ErrorCode::BudgetExceeded), "{over:#?}");
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

#[test]
fn concurrent_calls_of_one_session_never_overrun_max_calls() {
    let policy = format!(
        "[budget]\nmax_calls = 3\nallow_duplicate_calls = true\n\n[scheduler]\nmax_parallel = 8\n\n{ALLOW_ALL}"
    );
    let t = TestHost::new(&[HOSTILE]).config(&policy);
    let host = t.controller();
    let session = SessionId::from("racing".to_owned());
    let calls = (0..8)
        .map(|i| {
            CallRequest::new("hostile_sleep", format!(r#"{{"ms":{}}}"#, 100 + i))
                .in_session(session.clone())
        })
        .collect();
    let results = runtime().block_on(host.handle_batch(calls));
    let ran = results.iter().filter(|r| r.status == Status::Ok).count();
    let refused = results
        .iter()
        .filter(|r| r.code() == Some(ErrorCode::BudgetExceeded))
        .count();
    assert_eq!((ran, refused), (3, 5), "{results:#?}");
    // The units of refused calls were never taken: a new host reading the
    // executions back sees exactly the three that ran.
    drop(host);
    let again = t.controller();
    let next = call_in(&again, "racing", "hostile_sleep", r#"{"ms":1}"#);
    assert_eq!(next.code(), Some(ErrorCode::BudgetExceeded), "{next:#?}");
    let fresh = call_in(&again, "other", "hostile_sleep", r#"{"ms":1}"#);
    assert_eq!(fresh.status, Status::Ok);
}

#[test]
fn a_call_that_waits_for_approval_gives_its_unit_back() {
    let policy = "[budget]\nmax_calls = 1\n\n[[rule]]\ntools = [\"calc\"]\ndecision = \"ask\"\nreason = \"a person checks\"\n";
    let t = TestHost::new(&[CALC]).config(policy);
    let host = t.controller();
    for n in 0..3 {
        let pending = call_in(&host, "s", "calc", &add(n));
        assert_eq!(
            pending.code(),
            Some(ErrorCode::ApprovalRequired),
            "{pending:#?}"
        );
    }
}

/// A caller with an identity, as the HTTP server's gate makes one.
fn caller(issuer: &str, subject: &str) -> std::sync::Arc<toolwarden::caller::Caller> {
    std::sync::Arc::new(toolwarden::caller::Caller {
        subject: subject.into(),
        proof: toolwarden::caller::Proof::AccessToken {
            issuer: issuer.into(),
        },
        scopes: vec![],
        claims: Default::default(),
    })
}

fn call_as(
    host: &Controller,
    who: Option<std::sync::Arc<toolwarden::caller::Caller>>,
    session: SessionId,
    args: &str,
) -> CallResult {
    let mut request = CallRequest::new("calc", args).in_session(session);
    request.caller = who;
    runtime().block_on(host.handle(request))
}

#[test]
fn a_named_session_belongs_to_the_first_caller_that_names_it() {
    let policy = "[budget]\nmax_calls = 2\n\n[[rule]]\ntools = [\"calc\"]\ndecision = \"allow\"\nreason = \"ok\"\n";
    let t = TestHost::new(&[CALC]).config(policy);
    let host = t.controller();
    let alice = caller("https://login.example.org", "alice");
    let mallory = caller("https://login.example.org", "mallory");
    let alice_elsewhere = caller("https://other.example.org", "alice");
    let named = || SessionId::from("work".to_owned());

    assert_eq!(
        call_as(&host, Some(alice.clone()), named(), &add(1)).status,
        Status::Ok
    );
    for intruder in [mallory.clone(), alice_elsewhere] {
        let refused = call_as(&host, Some(intruder), named(), &add(2));
        assert_eq!(
            refused.code(),
            Some(ErrorCode::SessionNotYours),
            "{refused:#?}"
        );
        assert_eq!(refused.status, Status::Denied);
    }
    // The intruders spent nothing of alice's budget (two calls): her
    // second call runs, her third is over it.
    assert_eq!(
        call_as(&host, Some(alice.clone()), named(), &add(3)).status,
        Status::Ok
    );
    assert_eq!(
        call_as(&host, Some(alice), named(), &add(4)).code(),
        Some(ErrorCode::BudgetExceeded)
    );
    // The refusal is audited with who tried.
    let records = host
        .records()
        .audit(&toolwarden::AuditFilter::default())
        .unwrap();
    let refusal = records
        .iter()
        .find(|r| r.kind == "refused" && r.data["code"] == "SESSION_NOT_YOURS")
        .expect("the refusal's record");
    let call = records
        .iter()
        .find(|r| r.kind == "call" && r.call_id == refusal.call_id)
        .expect("the refused call's record");
    assert_eq!(call.data["caller"]["subject"], "mallory");
    // A session this process made, and calls without a proven caller, are
    // not claimed: whoever makes those runs the host.
    let own = SessionId::new();
    assert_eq!(
        call_as(&host, Some(mallory), own.clone(), &add(5)).status,
        Status::Ok
    );
    assert_eq!(
        call_as(&host, None, named(), &add(6)).code(),
        Some(ErrorCode::BudgetExceeded)
    );
}

#[test]
fn a_session_idle_past_forget_sessions_after_starts_over_and_a_live_one_keeps_its_history() {
    use std::sync::Arc;
    use toolwarden::store::{ExecutionRow, now_ms};
    // The host's own pass forgets after a year; the test forgets after 30
    // days itself, so it knows which rows go.
    let t = TestHost::new(&[CALC]).config(&format!(
        "[budget]\nmax_calls = 3\nforget_sessions_after = \"365d\"\n\n{ALLOW_ALL}"
    ));
    let host = t.controller();
    let store = host.records().store();
    let day = 86_400_000;
    let now = now_ms();
    let row = |session: &str, ts_ms: i64| ExecutionRow {
        session: Arc::from(session),
        tool: Arc::from("calc"),
        args_digest: Arc::from(format!("d{ts_ms}")),
        duration_us: 10,
        ts_ms,
        reservation: None,
    };
    let filled = [
        row("idle", now - 40 * day),
        row("idle", now - 39 * day),
        row("idle", now - 31 * day),
        row("live", now - 40 * day),
        row("live", now - 35 * day),
        row("live", now - day),
    ];
    store
        .append(&[], &|_, _, _| String::new(), &filled)
        .unwrap();
    let calls = |session: &str| -> i64 {
        store
            .session_executions(session)
            .unwrap()
            .iter()
            .map(|g| g.calls)
            .sum()
    };
    assert_eq!((calls("idle"), calls("live")), (3, 3));
    let forgotten = store.forget_idle_sessions(now - 30 * day).unwrap();
    assert_eq!(forgotten, 3, "only the idle session's rows go");
    assert_eq!((calls("idle"), calls("live")), (0, 3));
    assert_eq!(store.forget_idle_sessions(now - 30 * day).unwrap(), 0);
    // The budget agrees: the live session has used its three calls, the
    // forgotten one starts over.
    assert_eq!(
        call_in(&host, "live", "calc", &add(1)).code(),
        Some(ErrorCode::BudgetExceeded)
    );
    assert_eq!(call_in(&host, "idle", "calc", &add(1)).status, Status::Ok);
}

#[test]
fn forget_sessions_after_is_a_day_or_more() {
    for bad in ["1h", "23h", "0d", "soon", "-5d"] {
        let t = TestHost::new(&[CALC]).config(&format!(
            "[budget]\nforget_sessions_after = \"{bad}\"\n\n{ALLOW_ALL}"
        ));
        let err = t
            .build_config()
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            err.contains("forget_sessions_after") && err.contains("a day or more"),
            "{bad}: {err}"
        );
    }
    let t = TestHost::new(&[CALC]).config(&format!(
        "[budget]\nforget_sessions_after = \"1d\"\n\n{ALLOW_ALL}"
    ));
    assert!(t.build_config().is_ok());
}
