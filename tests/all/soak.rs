//! Soak: mixed good and hostile calls from several concurrent tasks. Good
//! calls never fail (their deadline is generous: a loaded machine must not
//! turn them into timeouts), hostile ones end with their code (CPU burners
//! on fuel, which does not depend on the machine's load), no sandbox
//! instance leaks, and memory settles. `TOOLWARDEN_SOAK_CALLS` sets the size
//! (default 2000); the RSS figures are printed for the record.

use crate::harness::{ALLOW_ALL, TestHost, runtime};
use std::sync::Arc;
use toolwarden::{CallRequest, Controller, ErrorCode, SandboxMode, Status};
use toolwarden_tests::{CALC, FS, HOSTILE, rss_kib};

const TASKS: usize = 4;

/// The i-th call of the mix, and the codes it may end with (none: success).
fn mixed(i: usize) -> (&'static str, String, &'static [ErrorCode]) {
    match i % 40 {
        0..=15 => ("calc", format!(r#"{{"op":"add","a":{i},"b":1}}"#), &[]),
        16..=27 => ("read_file", r#"{"path":"hello.txt"}"#.into(), &[]),
        28..=31 => ("calc", r#"{"op":"add"}"#.into(), &[ErrorCode::InvalidArgs]),
        32 => ("no_such_tool", "{}".into(), &[ErrorCode::UnknownTool]),
        33 => (
            "read_file",
            r#"{"path":"../outside"}"#.into(),
            &[ErrorCode::GuardDenied],
        ),
        34 | 35 => ("hostile_panic", "{}".into(), &[ErrorCode::ToolCrashed]),
        36 => (
            "hostile_bad_output",
            "{}".into(),
            &[ErrorCode::InvalidToolOutput],
        ),
        37 => (
            "hostile_grow",
            "{}".into(),
            &[ErrorCode::MemoryLimit, ErrorCode::OutOfFuel],
        ),
        38 => (
            "hostile_spin",
            "{}".into(),
            &[ErrorCode::OutOfFuel, ErrorCode::Timeout],
        ),
        _ => ("hostile_recurse", "{}".into(), &[ErrorCode::ToolCrashed]),
    }
}

#[test]
fn mixed_good_and_hostile_calls_leak_nothing() {
    let calls: usize = std::env::var("TOOLWARDEN_SOAK_CALLS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(2000);
    let t = TestHost::new(&[CALC, FS, HOSTILE])
        .config(&format!(
            "[limits]\ntimeout_ms = 5000\nfuel = 300000000\nmax_instances = 8\n\n[budget]\nallow_duplicate_calls = true\n\n{ALLOW_ALL}"
        ))
        .sandbox(SandboxMode::ReadOnly);
    t.file("hello.txt", "hello");
    let host = Arc::new(t.controller());
    let rt = runtime();
    let run = |range: std::ops::Range<usize>| {
        let host: Arc<Controller> = Arc::clone(&host);
        rt.block_on(async move {
            let tasks: Vec<_> = (0..TASKS)
                .map(|task| {
                    let host = Arc::clone(&host);
                    let range = range.clone();
                    tokio::spawn(async move {
                        let mut wrong = Vec::new();
                        for i in range.filter(|i| i % TASKS == task) {
                            let (tool, args, expected) = mixed(i);
                            let r = host.handle(CallRequest::new(tool, args)).await;
                            let fine = match r.code() {
                                None => expected.is_empty() && r.status == Status::Ok,
                                Some(code) => expected.contains(&code),
                            };
                            if !fine {
                                wrong
                                    .push(format!("#{i} {tool}: expected {expected:?}, got {r:?}"));
                            }
                        }
                        wrong
                    })
                })
                .collect();
            let mut wrong = Vec::new();
            for task in tasks {
                wrong.extend(task.await.expect("soak task"));
            }
            wrong
        })
    };
    // Warm up (pool slots, caches, allocator) before the baseline.
    let wrong = run(0..200);
    assert!(wrong.is_empty(), "{wrong:#?}");
    let before = rss_kib();
    let wrong = run(200..200 + calls);
    let after = rss_kib();
    assert!(
        wrong.is_empty(),
        "{} calls went wrong: {:#?}",
        wrong.len(),
        &wrong[..wrong.len().min(5)]
    );
    assert_eq!(host.free_instances(), 8, "every sandbox instance came back");
    eprintln!(
        "soak: {calls} calls from {TASKS} tasks; RSS {} MiB before, {} MiB after",
        before >> 10,
        after >> 10
    );
    assert!(
        after < before + (96 << 10),
        "RSS grew from {} to {} MiB over {calls} calls",
        before >> 10,
        after >> 10
    );
}
