//! Every way a call can run away ends with its own code, and the host keeps
//! serving.

use crate::harness::{TestHost, assert_code, call};
use std::time::Duration;
use toolwarden::ErrorCode;
use toolwarden_tests::{CALC, HOSTILE};

fn host_with(limits: &str) -> (TestHost, std::sync::Arc<toolwarden::Controller>) {
    let t =
        TestHost::new(&[CALC, HOSTILE]).config(&format!("{limits}\n{}", crate::harness::ALLOW_ALL));
    let host = t.controller();
    // A plugin's first call waits for its optimized code, seconds on a
    // loaded machine: built here, so the calls below time only themselves.
    host.registry().finish_compiling();
    (t, host)
}

#[test]
fn an_infinite_loop_ends_with_timeout_close_to_its_deadline() {
    let (_t, host) = host_with("[limits]\ntimeout_ms = 300\nfuel = 1000000000000");
    let r = call(&host, "hostile_spin", "{}");
    let took = Duration::from_micros(r.duration_us);
    assert!(
        took >= Duration::from_millis(300),
        "stopped before its deadline: {took:?}"
    );
    // Generous bound: this checks that the deadline is enforced at all, not speed.
    assert!(
        took < Duration::from_millis(2300),
        "stopped long after its deadline: {took:?}"
    );
    assert!(r.error.as_ref().unwrap().message.contains("300 ms"));
    assert_eq!(
        r.fuel_used, None,
        "a stopped call does not report a made-up fuel count"
    );
    assert_code(&host, &r, ErrorCode::Timeout);
}

#[test]
fn an_infinite_loop_after_the_host_sat_idle_still_ends_with_timeout() {
    // The epoch ticker sleeps once no guest has run for a while; a call must
    // wake it, or a computing guest never yields to its deadline and runs
    // until its fuel is gone (about ten seconds of it here).
    let (_t, host) = host_with("[limits]\ntimeout_ms = 300\nfuel = 20000000000");
    std::thread::sleep(Duration::from_millis(500));
    let r = call(&host, "hostile_spin", "{}");
    assert_code(&host, &r, ErrorCode::Timeout);
    assert!(
        Duration::from_micros(r.duration_us) < Duration::from_millis(2300),
        "{r:#?}"
    );
}

#[test]
fn a_blocking_sleep_is_stopped_at_the_deadline() {
    let (_t, host) = host_with("[limits]\ntimeout_ms = 200");
    let r = call(&host, "hostile_sleep", r#"{"ms": 60000}"#);
    assert!(
        Duration::from_micros(r.duration_us) < Duration::from_secs(5),
        "{r:#?}"
    );
    assert_code(&host, &r, ErrorCode::Timeout);
}

#[test]
fn a_cpu_burn_with_little_fuel_ends_with_out_of_fuel() {
    let (_t, host) = host_with("[limits]\nfuel = 5000000\ntimeout_ms = 60000");
    let r = call(&host, "hostile_spin", "{}");
    assert!(r.fuel_used.unwrap() >= 5_000_000, "{r:#?}");
    assert_code(&host, &r, ErrorCode::OutOfFuel);
}

#[test]
fn a_memory_bomb_ends_with_memory_limit() {
    let (_t, host) = host_with("[limits]\nmemory_mb = 32");
    let r = call(&host, "hostile_grow", "{}");
    assert!(r.error.as_ref().unwrap().message.contains("32 MiB"));
    assert_code(&host, &r, ErrorCode::MemoryLimit);
}

#[test]
fn a_panic_is_a_crash_not_a_tool_error() {
    let (_t, host) = host_with("");
    let r = call(&host, "hostile_panic", "{}");
    let message = r.error.as_ref().unwrap().message.clone();
    assert!(
        message.contains("panics on purpose"),
        "the plugin's panic message is quoted: {message}"
    );
    assert_code(&host, &r, ErrorCode::ToolCrashed);
}

#[test]
fn runaway_recursion_is_a_crash() {
    let (_t, host) = host_with("");
    let r = call(&host, "hostile_recurse", "{}");
    assert_code(&host, &r, ErrorCode::ToolCrashed);
}

#[test]
fn output_that_breaks_its_schema_is_invalid_tool_output() {
    let (_t, host) = host_with("");
    let r = call(&host, "hostile_bad_output", "{}");
    assert!(
        r.error.as_ref().unwrap().message.contains("/result"),
        "{r:#?}"
    );
    assert_code(&host, &r, ErrorCode::InvalidToolOutput);
}

#[test]
fn output_over_the_cap_is_output_too_large() {
    let (_t, host) = host_with("[limits]\nmax_output_kb = 16");
    let r = call(&host, "hostile_big_output", r#"{"kb": 64}"#);
    assert_code(&host, &r, ErrorCode::OutputTooLarge);
    let small = call(&host, "hostile_big_output", r#"{"kb": 4}"#);
    assert_eq!(small.content.map(|c| c.len()), Some(4096));
}

#[test]
fn a_cancelled_call_stops_and_reports_cancelled() {
    let (_t, host) = host_with("[limits]\ntimeout_ms = 60000\nfuel = 1000000000000");
    let rt = crate::harness::runtime();
    let request = toolwarden::CallRequest::new("hostile_spin", "{}");
    let cancel = request.cancel.clone();
    let r = rt.block_on(async {
        let canceller = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            cancel.cancel();
        });
        let r = host.handle(request).await;
        canceller.await.unwrap();
        r
    });
    assert!(
        Duration::from_micros(r.duration_us) < Duration::from_secs(5),
        "{r:#?}"
    );
    assert_code(&host, &r, ErrorCode::Cancelled);
}

#[test]
fn every_sandbox_instance_can_run_at_once() {
    // The pool keeps as many fiber stacks as component instances: a store
    // only runs holding one of each. All `max_instances` calls in flight at
    // once, each asleep in its guest, must find a stack.
    const INSTANCES: u64 = 6;
    const SLEEP_MS: u64 = 400;
    let (_t, host) = host_with(&format!(
        "[limits]\nmax_instances = {INSTANCES}\ntimeout_ms = 30000"
    ));
    let began = std::time::Instant::now();
    let results = crate::harness::runtime().block_on(async {
        let calls: Vec<_> = (0..INSTANCES)
            .map(|i| {
                let host = std::sync::Arc::clone(&host);
                // Arguments of their own: the same call twice is a duplicate.
                let args = format!(r#"{{"ms": {}}}"#, SLEEP_MS + i);
                tokio::spawn(async move {
                    host.handle(toolwarden::CallRequest::new("hostile_sleep", args))
                        .await
                })
            })
            .collect();
        let mut results = Vec::new();
        for call in calls {
            results.push(call.await.expect("call task"));
        }
        results
    });
    for r in &results {
        assert_eq!(r.status, toolwarden::Status::Ok, "{r:#?}");
    }
    let took = began.elapsed();
    assert!(
        took < Duration::from_millis(SLEEP_MS * INSTANCES / 2),
        "the calls did not run at once: {took:?} for {INSTANCES} sleeps of {SLEEP_MS} ms"
    );
    assert_eq!(host.free_instances(), INSTANCES as usize);
}
