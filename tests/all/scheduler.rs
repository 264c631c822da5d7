//! Batches of calls from one model turn: parallel-safe neighbours overlap,
//! everything else runs alone, results keep call order, and cancellation
//! stops running calls and keeps waiting ones from starting.

use crate::harness::{ALLOW_ALL, TestHost, runtime};
use std::time::{Duration, Instant};
use toolwarden::{
    AuditFilter, CallRequest, CallResult, CancelToken, Controller, ErrorCode, SandboxMode,
    SessionId, Status,
};
use toolwarden_tests::{CALC, FS, HOSTILE};

fn host(extra: &str) -> (TestHost, std::sync::Arc<Controller>) {
    let t = TestHost::new(&[CALC, FS, HOSTILE])
        .config(&format!("{extra}\n{ALLOW_ALL}"))
        .sandbox(SandboxMode::WorkspaceWrite);
    let host = t.controller();
    (t, host)
}

fn turn(calls: &[(&str, String)]) -> Vec<CallRequest> {
    let session = SessionId::new();
    calls
        .iter()
        .map(|(tool, args)| CallRequest::new(*tool, args.clone()).in_session(session.clone()))
        .collect()
}

fn sleep(ms: u64) -> (&'static str, String) {
    ("hostile_sleep", format!(r#"{{"ms":{ms}}}"#))
}

fn write(path: &str) -> (&'static str, String) {
    (
        "write_file",
        format!(r#"{{"path":"{path}","content":"x"}}"#),
    )
}

/// When each call's plugin started and ended, from the audit log: the
/// trail before execution is committed just before the plugin starts.
fn interval(host: &Controller, result: &CallResult) -> (i64, i64) {
    let filter = AuditFilter {
        call_id: Some(result.call_id.clone()),
        ..AuditFilter::default()
    };
    let records = host.records().audit(&filter).unwrap();
    let at = |kind: &str| {
        records
            .iter()
            .find(|r| r.kind == kind)
            .unwrap_or_else(|| panic!("no {kind} for {result:#?}"))
            .ts_ms
    };
    (at("policy"), at("outcome"))
}

fn overlap(a: (i64, i64), b: (i64, i64)) -> bool {
    a.0 < b.1 && b.0 < a.1
}

#[test]
fn parallel_safe_calls_overlap_and_a_write_between_them_does_not() {
    let (t, host) = host("[scheduler]\nmax_parallel = 8");
    let calls = turn(&[
        sleep(300),
        sleep(301),
        write("w.txt"),
        sleep(302),
        sleep(303),
    ]);
    let results = runtime().block_on(host.handle_batch(calls));
    assert!(
        results.iter().all(|r| r.status == Status::Ok),
        "{results:#?}"
    );
    let spans: Vec<_> = results.iter().map(|r| interval(&host, r)).collect();
    assert!(
        overlap(spans[0], spans[1]),
        "read-only neighbours run together: {spans:?}"
    );
    assert!(overlap(spans[3], spans[4]), "{spans:?}");
    for (i, span) in spans.iter().enumerate().filter(|(i, _)| *i != 2) {
        assert!(
            !overlap(spans[2], *span),
            "the write overlapped call {i}: {spans:?}"
        );
    }
    assert!(t.workspace.join("w.txt").exists());
}

#[test]
fn results_come_back_in_call_order_whatever_the_completion_order() {
    let (_t, host) = host("[scheduler]\nmax_parallel = 8");
    let calls = turn(&[sleep(400), sleep(300), sleep(200), sleep(100)]);
    let ids: Vec<String> = calls.iter().map(|c| c.call_id.to_string()).collect();
    let results = runtime().block_on(host.handle_batch(calls));
    assert_eq!(
        results
            .iter()
            .map(|r| r.call_id.clone())
            .collect::<Vec<_>>(),
        ids
    );
    let ends: Vec<i64> = results.iter().map(|r| interval(&host, r).1).collect();
    assert!(ends[0] > ends[3], "the first call finished last: {ends:?}");
}

#[test]
fn cancelling_a_batch_stops_running_calls_and_starts_no_others() {
    let (t, host) = host("[scheduler]\nmax_parallel = 8\n[limits]\ntimeout_ms = 60000");
    let cancel = CancelToken::default();
    let mut calls = turn(&[
        sleep(30_000),
        sleep(30_001),
        write("never.txt"),
        sleep(30_002),
    ]);
    for call in &mut calls {
        call.cancel = cancel.clone();
    }
    let started = Instant::now();
    let results = runtime().block_on(async {
        let canceller = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            cancel.cancel();
        });
        let results = host.handle_batch(calls).await;
        canceller.await.unwrap();
        results
    });
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "took {:?}",
        started.elapsed()
    );
    for r in &results {
        assert_eq!(r.code(), Some(ErrorCode::Cancelled), "{r:#?}");
    }
    assert!(
        !t.workspace.join("never.txt").exists(),
        "a call not yet started never runs"
    );
    assert_eq!(results[2].fuel_used, None);
}

#[test]
fn calls_beyond_the_turn_budget_do_not_run() {
    let (_t, host) = host("[budget]\nmax_calls_per_turn = 2");
    let add = |n: i64| ("calc", format!(r#"{{"op":"add","a":{n},"b":1}}"#));
    let results = runtime().block_on(host.handle_batch(turn(&[add(1), add(2), add(3)])));
    assert_eq!(
        results.iter().map(|r| r.status).collect::<Vec<_>>(),
        [Status::Ok, Status::Ok, Status::Denied]
    );
    assert_eq!(results[2].code(), Some(ErrorCode::BudgetExceeded));
}

#[test]
fn turn_round_trips_openai_tool_calls() {
    let (t, _host) = host("");
    let turn = serde_json::json!([
        {"id": "call_a", "type": "function", "function": {"name": "calc", "arguments": "{\"op\":\"mul\",\"a\":6,\"b\":7}"}},
        {"id": "call_b", "type": "function", "function": {"name": "calc", "arguments": "{\"op\":\"mul\"}"}},
    ]);
    let file = t.root.path().join("turn.json");
    std::fs::write(&file, turn.to_string()).unwrap();
    let (code, stdout, stderr) = crate::harness::run_cli(t.cli().arg("turn").arg(&file));
    assert_eq!(code, 1, "one call failed: {stderr}");
    let messages: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        messages[0],
        serde_json::json!({"role": "tool", "tool_call_id": "call_a", "content": "42"})
    );
    assert_eq!(messages[1]["tool_call_id"], "call_b");
    assert!(
        messages[1]["content"]
            .as_str()
            .unwrap()
            .starts_with("INVALID_ARGS: ")
    );
}

#[test]
fn turn_round_trips_anthropic_tool_use_blocks_from_stdin() {
    let (t, _host) = host("");
    let turn = serde_json::json!([
        {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "missing.txt"}},
        {"type": "tool_use", "id": "toolu_2", "name": "calc", "input": {"op": "add", "a": 1, "b": 2}},
    ]);
    let (_, stdout, _) = crate::harness::run_cli_with_stdin(
        t.cli().args(["turn", "-"]),
        turn.to_string().as_bytes(),
    );
    let blocks: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(blocks[0]["type"], "tool_result");
    assert_eq!(blocks[0]["tool_use_id"], "toolu_1");
    assert_eq!(blocks[0]["is_error"], true);
    assert!(
        blocks[0]["content"]
            .as_str()
            .unwrap()
            .starts_with("TOOL_FAILED: ")
    );
    assert_eq!(
        blocks[1],
        serde_json::json!({"type": "tool_result", "tool_use_id": "toolu_2", "content": "3", "is_error": false})
    );
    let (code, _, stderr) = crate::harness::run_cli(t.cli().args(["turn", "/nonexistent.json"]));
    assert_eq!(code, 2, "{stderr}");
}
