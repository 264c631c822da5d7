//! `make bench`: what governance costs, measured against the floor.
//!
//! Prints, in one run, medians and p99s of: (1) bare wasmtime, a pooled
//! instantiate + call + drop of `calc`, on wasmtime's pooling defaults and
//! on the host's tuned engine, through the sync and the async API; (2) the
//! same call through the whole governed pipeline in-process, audit on; (3)
//! its ratio to the floors; (4) governed calls per second on all cores; (5)
//! startup with 1, 10, 50 and 200 plugins, cold (listed, then all optimized) and warm; (6) a batch of 8
//! read-only calls against the same 8 run serially; (7) `tools/call` round
//! trips over MCP stdio with a bare JSON-RPC client, beside `ping` and `cat`,
//! scheduled freely and on one core, with the client asleep in `read` while
//! it waits (as SDK clients wait) and, freely scheduled, also polling; (8)
//! peak RSS during 1,000 concurrent in-flight calls; (9) sequential
//! `tools/call` round trips over Streamable HTTP with the official
//! TypeScript and Python SDK clients; (10) the audit log as it grows to a
//! million records of real calls: database bytes per call and `audit
//! verify` time at each tenfold, then an export of all but the newest
//! thousand, the export checked on its own, and the rest verified; (11)
//! `serve --http` under 1, 16, 64 and 256 keep-alive connections of
//! stateless `tools/call`: calls per second, p50, p99, errors and the
//! server's memory; (15) `tools/call` over stdio from the official
//! TypeScript and Python SDK clients, against `toolwarden serve` and a bare
//! rmcp server in turns. The figures also go to
//! `target/bench/bench-<unix ms>.json`, so two runs can be compared. Timing
//! belongs here, never in test assertions.
//!
//! What is compared is measured interleaved (rows 1 and 2; the parts of
//! row 7), in rounds of [`ROUND`] calls: the machine's speed drifts, and
//! measured one after the other the drift would land in the ratios.
//!
//! `BENCH_SCALE` (default 1) multiplies the iteration counts; `BENCH_ROWS`
//! (e.g. `1,2,7`) runs only those rows.

mod audit_row;
mod bare;
mod figures;
mod host;
mod http_rows;
mod in_process;
mod load;
mod mcp;
mod policy_scale;
mod stdio_row;
mod summary;

use host::{Host, cores};
use serde_json::{Map, json};
use std::sync::Arc;
use toolwarden_tests::{CALC, FS, HOSTILE};

/// The allocator the `toolwarden` binary uses, so that the figures are the
/// shipped host's (the floor runs under it too).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Every tool allowed, duplicates allowed (the benchmark repeats calls), and
/// room for I/O-bound calls to overlap.
pub(crate) const CONFIG: &str = r#"
[limits]
timeout_ms = 60000

[budget]
allow_duplicate_calls = true

[scheduler]
max_parallel = 8

[[rule]]
tools = ["*"]
decision = "allow"
reason = "the benchmark allows everything"
"#;

pub(crate) const CALC_ARGS: &str = r#"{"op":"mul","a":6,"b":7}"#;

pub(crate) const READ_ARGS: &str = r#"{"path":"small.txt"}"#;

/// Calls of one round before the next kind takes its turn.
pub(crate) const ROUND: usize = 100;

fn rustc_version() -> String {
    std::process::Command::new("rustc")
        .arg("--version")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_else(|| "unknown".into())
}

fn main() {
    let scale: usize = std::env::var("BENCH_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    let rows: Option<Vec<u32>> = std::env::var("BENCH_ROWS")
        .ok()
        .map(|s| s.split(',').filter_map(|r| r.trim().parse().ok()).collect());
    let want = |row: u32| rows.as_ref().is_none_or(|r| r.contains(&row));
    let mut out = Map::new();
    let cores = cores();
    println!(
        "toolwarden {} · wasmtime 48.0.8 · {} · {cores} cores",
        env!("CARGO_PKG_VERSION"),
        rustc_version()
    );
    out.insert("scale".into(), json!(scale));
    out.insert(
        "machine".into(),
        json!({ "cores": cores, "toolwarden": env!("CARGO_PKG_VERSION"), "wasmtime": "48.0.8", "rustc": rustc_version() }),
    );

    let host = Host::new(&[CALC, FS, HOSTILE]);
    // The first start compiles and fills the cache; the host measured is a
    // second one, which maps its code from the cache as a restarted host does.
    drop(host.controller());
    let controller = Arc::new(host.controller());
    if want(1) || want(2) || want(3) {
        in_process::floor_rows(&controller, &host.workspace, scale, &mut out);
    }
    if want(4) {
        in_process::throughput_row(&controller, cores, &mut out);
        host::settle(&controller);
    }
    if want(5) {
        in_process::startup_row(&mut out);
        stdio_row::start_to_list(&mut out);
    }
    if want(6) {
        in_process::batch_row(&controller, &mut out);
    }
    if want(7) {
        stdio_row::mcp_row(scale, &mut out);
    }
    if want(8) {
        in_process::rss_row(&controller, &mut out);
    }
    if want(9) {
        http_rows::http_row(scale, &mut out);
    }
    if want(10) {
        audit_row::audit_row(scale, &mut out);
    }
    if want(11) {
        http_rows::load_row(scale, &mut out);
    }
    if want(12) {
        http_rows::shared_store_row(scale, &mut out);
    }
    if want(14) {
        policy_scale::row(&host, scale, &mut out);
    }
    if want(15) {
        stdio_row::sdk_clients_row(scale, &mut out);
    }
    figures::write(out);
}
