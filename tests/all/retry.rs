//! Automatic retries (`[retry]`): only a read-only tool's own failure or
//! crash, or a host failure before the plugin started, is tried again;
//! never a tool that may write, an argument or business error, or a limit
//! stop. Every attempt is in the audit trail, and all of them share the
//! call's deadline.

use crate::harness::{ALLOW_ALL, TestHost, call};
use serde_json::Value;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use toolwarden::{AuditFilter, CallResult, Controller, ErrorCode, SandboxMode, Status};
use toolwarden_tests::HOSTILE;

fn host(retry: &str) -> TestHost {
    TestHost::new(&[HOSTILE]).config(&format!(
        "{retry}\n[limits]\ntimeout_ms = 5000\n\n{ALLOW_ALL}"
    ))
}

/// The `retried` records of a call, in order.
fn retried(host: &Controller, result: &CallResult) -> Vec<Value> {
    host.records()
        .audit(&AuditFilter {
            call_id: Some(result.call_id.clone()),
            ..AuditFilter::default()
        })
        .expect("the audit log reads")
        .into_iter()
        .filter(|r| r.kind == "retried")
        .map(|r| r.data)
        .collect()
}

fn epoch_ms_in(delay: Duration) -> u128 {
    (SystemTime::now() + delay)
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis()
}

#[test]
fn a_read_that_failed_is_tried_again_until_it_works() {
    let t = host("[retry]\nattempts = 5\nbackoff_ms = 50");
    let host = t.controller();
    // The window below is wall-clock time: spent compiling, it would be over
    // before the first attempt.
    host.registry().finish_compiling();
    // Fails for 120 ms: the attempts at about 0 and 50 ms fail, the one
    // at about 150 ms (after waiting 50, then 100) succeeds.
    let until = epoch_ms_in(Duration::from_millis(120));
    let result = call(
        &host,
        "hostile_flaky",
        &format!(r#"{{"until_ms":{until}}}"#),
    );
    assert_eq!(result.status, Status::Ok, "{result:#?}");
    let retried = retried(&host, &result);
    assert!(
        (1..=3).contains(&retried.len()),
        "tried again until it worked: {retried:?}"
    );
    for (n, record) in retried.iter().enumerate() {
        assert_eq!(record["attempt"], n as u64 + 1);
        assert_eq!(record["code"], "TOOL_FAILED");
        assert!(record["message"].as_str().unwrap().starts_with("not yet"));
        assert_eq!(record["backoff_ms"], 50 << n);
    }
}

#[test]
fn without_a_retry_table_a_call_runs_once() {
    let t = host("");
    let host = t.controller();
    let until = epoch_ms_in(Duration::from_secs(600));
    let result = call(
        &host,
        "hostile_flaky",
        &format!(r#"{{"until_ms":{until}}}"#),
    );
    assert_eq!(result.code(), Some(ErrorCode::ToolFailed));
    assert!(retried(&host, &result).is_empty());
}

#[test]
fn a_crashed_read_is_tried_again_as_often_as_configured() {
    let t = host("[retry]\nattempts = 3\nbackoff_ms = 10");
    let host = t.controller();
    let result = call(&host, "hostile_panic", "{}");
    assert_eq!(result.code(), Some(ErrorCode::ToolCrashed), "{result:#?}");
    let codes: Vec<_> = retried(&host, &result)
        .iter()
        .map(|r| {
            (
                r["attempt"].as_u64().unwrap(),
                r["code"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        codes,
        [
            (1, "TOOL_CRASHED".to_owned()),
            (2, "TOOL_CRASHED".to_owned())
        ]
    );
}

#[test]
fn writes_argument_errors_and_limit_stops_are_never_tried_again() {
    let t = TestHost::new(&[HOSTILE]).sandbox(SandboxMode::WorkspaceWrite).config(&format!(
        "[retry]\nattempts = 5\nbackoff_ms = 10\n\n[limits]\ntimeout_ms = 5000\nfuel = 50000000\n\n{ALLOW_ALL}"
    ));
    let host = t.controller();
    let cases = [
        // A write that failed: its outcome is not known, so it is not redone.
        (
            "hostile_write_raw",
            r#"{"path":"/no/such/dir/file","content":"x"}"#,
            ErrorCode::ToolFailed,
        ),
        (
            "hostile_flaky",
            r#"{"until_ms":"soon"}"#,
            ErrorCode::InvalidArgs,
        ),
        ("hostile_spin", "{}", ErrorCode::OutOfFuel),
    ];
    for (tool, args, code) in cases {
        let result = call(&host, tool, args);
        assert_eq!(result.code(), Some(code), "{tool}: {result:#?}");
        assert!(retried(&host, &result).is_empty(), "{tool} was tried again");
    }
}

#[test]
fn retries_stay_within_the_calls_deadline() {
    let t = TestHost::new(&[HOSTILE]).config(&format!(
        "[retry]\nattempts = 5\nbackoff_ms = 60000\n\n[limits]\ntimeout_ms = 2000\n\n{ALLOW_ALL}"
    ));
    let host = t.controller();
    let until = epoch_ms_in(Duration::from_secs(600));
    let started = Instant::now();
    let result = call(
        &host,
        "hostile_flaky",
        &format!(r#"{{"until_ms":{until}}}"#),
    );
    assert_eq!(result.code(), Some(ErrorCode::ToolFailed));
    assert!(
        retried(&host, &result).is_empty(),
        "a wait past the deadline is not started"
    );
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "it did not wait a minute"
    );
}

#[test]
fn a_retry_table_out_of_bounds_is_a_config_error() {
    for (toml, key) in [
        ("[retry]\nattempts = 0\n", "attempts"),
        ("[retry]\nattempts = 6\n", "attempts"),
        ("[retry]\nbackoff_ms = 600000\n", "backoff_ms"),
        ("[retry]\ntries = 2\n", "tries"),
    ] {
        let error = TestHost::new(&[])
            .config(toml)
            .build_config()
            .expect_err(toml)
            .to_string();
        assert!(error.contains(key), "{toml}: {error}");
    }
}
