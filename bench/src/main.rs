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
//! server's memory. The figures also go to
//! `target/bench/bench-<unix ms>.json`, so two runs can be compared. Timing
//! belongs here, never in test assertions.
//!
//! What is compared is measured interleaved (rows 1 and 2; the parts of
//! row 7), in rounds of [`ROUND`] calls: the machine's speed drifts, and
//! measured one after the other the drift would land in the ratios.
//!
//! `BENCH_SCALE` (default 1) multiplies the iteration counts; `BENCH_ROWS`
//! (e.g. `1,2,7`) runs only those rows.

mod bare;
mod load;
mod mcp;
mod policy_scale;

use bare::{Api, Engine, Floor};
use mcp::{Exchange, Wait};
use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};
use toolwarden::{AuditFilter, CallRequest, ConfigBuilder, Controller, Status, Tracing};
use toolwarden_tests::{CALC, FS, HOSTILE, numbered_plugins, rss_kib};

/// The allocator the `toolwarden` binary uses, so that the figures are the
/// shipped host's (the floor runs under it too).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Every tool allowed, duplicates allowed (the benchmark repeats calls), and
/// room for I/O-bound calls to overlap.
const CONFIG: &str = r#"
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

const CALC_ARGS: &str = r#"{"op":"mul","a":6,"b":7}"#;
const READ_ARGS: &str = r#"{"path":"small.txt"}"#;

struct Summary {
    median_us: f64,
    p99_us: f64,
    n: usize,
}

fn summarize(mut samples: Vec<Duration>) -> Summary {
    samples.sort();
    let at = |q: f64| {
        let i = ((samples.len() as f64 - 1.0) * q).round() as usize;
        samples[i].as_secs_f64() * 1e6
    };
    Summary {
        median_us: at(0.5),
        p99_us: at(0.99),
        n: samples.len(),
    }
}

impl Summary {
    fn json(&self) -> Value {
        json!({ "median_us": round(self.median_us), "p99_us": round(self.p99_us), "n": self.n })
    }

    fn line(&self, what: &str) {
        println!(
            "{what:<58} median {:>9.1} µs   p99 {:>9.1} µs   (n={})",
            self.median_us, self.p99_us, self.n
        );
    }
}

fn round(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

/// A host in a temp dir: workspace, plugins, state.
struct Host {
    _root: tempfile::TempDir,
    workspace: PathBuf,
    plugins: PathBuf,
    state: PathBuf,
}

impl Host {
    fn new(plugins: &[&str]) -> Host {
        let root = tempfile::tempdir().expect("temp dir");
        let host = Host {
            workspace: root.path().join("workspace"),
            plugins: root.path().join("plugins"),
            state: root.path().join("state"),
            _root: root,
        };
        for dir in [&host.workspace, &host.plugins, &host.state] {
            std::fs::create_dir_all(dir).expect("mkdir");
        }
        std::fs::write(host.workspace.join("small.txt"), "hello, governed world\n").expect("write");
        std::fs::write(host.workspace.join("toolwarden.toml"), CONFIG).expect("write");
        for plugin in plugins {
            let path = Path::new(plugin);
            std::fs::copy(
                path,
                host.plugins.join(path.file_name().expect("file name")),
            )
            .expect("copy plugin");
        }
        host
    }

    fn controller(&self) -> std::sync::Arc<Controller> {
        let config = ConfigBuilder::new(&self.workspace)
            .plugins_dir(&self.plugins)
            .state_dir(&self.state)
            .config_text(CONFIG)
            .build()
            .expect("config");
        Controller::new(config).expect("host starts")
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// One governed call, timed like a floor call: the request is made inside
/// the timed span.
async fn governed_call(host: &Controller, tool: &str, args: &str) -> Duration {
    let started = Instant::now();
    let result = host.handle(CallRequest::new(tool, args)).await;
    let elapsed = started.elapsed();
    assert_eq!(result.status, Status::Ok, "{result:?}");
    elapsed
}

/// `n` governed calls from one task awaiting call after call.
fn governed_calls(host: &Controller, tool: &str, args: &str, n: usize) -> Vec<Duration> {
    runtime().block_on(async {
        for _ in 0..n / 10 {
            governed_call(host, tool, args).await;
        }
        let mut samples = Vec::with_capacity(n);
        for _ in 0..n {
            samples.push(governed_call(host, tool, args).await);
        }
        samples
    })
}

/// Calls of one round before the next kind takes its turn.
const ROUND: usize = 100;

/// Rows 1 and 2: `n` calls of each floor and `n` governed `calc` calls,
/// interleaved in rounds of [`ROUND`]. This VM's speed drifts by tens of
/// percent from one minute to the next; measured one after the other, that
/// drift would land in the ratio. Returns the floors' samples in the order
/// of `floors`, then the governed ones.
fn interleaved(host: &Controller, floors: &[Floor], n: usize) -> Vec<Vec<Duration>> {
    runtime().block_on(async {
        let mut samples = vec![Vec::with_capacity(n); floors.len() + 1];
        for round in 0..=n / ROUND {
            // Round 0 warms everything up and is not kept.
            let keep = round > 0;
            for (floor, kept) in floors.iter().zip(&mut samples) {
                for _ in 0..ROUND {
                    let sample = floor.call().await;
                    if keep {
                        kept.push(sample);
                    }
                }
            }
            for _ in 0..ROUND {
                let sample = governed_call(host, "calc", CALC_ARGS).await;
                if keep {
                    samples[floors.len()].push(sample);
                }
            }
        }
        samples
    })
}

/// Where a governed call's time goes: the median of each pipeline step
/// over traced calls (tracing itself adds a little).
fn print_steps(host: &Controller) {
    let rt = runtime();
    let mut steps: Vec<(&'static str, Vec<u64>)> = Vec::new();
    let mut totals = Vec::new();
    for _ in 0..2000 {
        let mut request = CallRequest::new("calc", CALC_ARGS);
        request.tracing = Tracing::Steps;
        let result = rt.block_on(host.handle(request));
        totals.push(result.duration_us);
        for step in result.trace {
            match steps.iter_mut().find(|(name, _)| *name == step.step) {
                Some((_, samples)) => samples.push(step.us),
                None => steps.push((step.step, vec![step.us])),
            }
        }
    }
    let median = |v: &mut Vec<u64>| {
        v.sort_unstable();
        v[v.len() / 2]
    };
    let line: Vec<String> = steps
        .iter_mut()
        .map(|(name, samples)| format!("{name} {}", median(samples)))
        .collect();
    println!(
        "   steps (median µs, traced): {} · whole call {}",
        line.join(", "),
        median(&mut totals)
    );
}

/// Waits until the audit writer has committed every queued record, so its
/// work does not land in the next row's figures.
fn settle(host: &Controller) {
    let last = AuditFilter {
        limit: Some(1),
        ..AuditFilter::default()
    };
    if let Err(e) = host.records().audit(&last) {
        eprintln!("cannot settle the audit log: {e}");
    }
}

/// Calls per second with `tasks` concurrent callers for `for_how_long`.
/// Calls `tool` from 4 tasks per core until `until` says stop; calls/s.
fn throughput(host: Arc<Controller>, tool: &str, args: &str, until: Until) -> f64 {
    let rt = runtime();
    let tasks = 4 * cores();
    let done = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    rt.block_on(async {
        let handles: Vec<_> = (0..tasks)
            .map(|_| {
                let (host, done) = (Arc::clone(&host), Arc::clone(&done));
                let (tool, args) = (tool.to_owned(), args.to_owned());
                tokio::spawn(async move {
                    while until.goes_on(started, &done) {
                        let r = host.handle(CallRequest::new(&tool, &args)).await;
                        assert_eq!(r.status, Status::Ok, "{r:?}");
                        done.fetch_add(1, Ordering::Relaxed);
                    }
                })
            })
            .collect();
        futures::future::join_all(handles).await;
    });
    done.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64()
}

/// When a [`throughput`] run stops.
#[derive(Clone, Copy)]
enum Until {
    Elapsed(Duration),
    /// About this many calls (each task checks before its next).
    Calls(u64),
}

impl Until {
    fn goes_on(self, started: Instant, done: &AtomicU64) -> bool {
        match self {
            Until::Elapsed(limit) => started.elapsed() < limit,
            Until::Calls(n) => done.load(Ordering::Relaxed) < n,
        }
    }
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Start times with `n` distinct plugins made from the `numbered` template.
struct Startup {
    /// Never compiled: until the tools are listed (baseline code).
    cold: Duration,
    /// Never compiled: until every plugin's optimized code is built too.
    cold_optimized: Duration,
    /// Everything in the cache.
    warm: Duration,
}

fn startup(n: usize) -> Startup {
    let host = Host::new(&[]);
    numbered_plugins(&host.plugins, n);
    let started = Instant::now();
    let cold = host.controller();
    let cold_time = started.elapsed();
    assert_eq!(cold.registry().tools().count(), n);
    cold.registry().finish_compiling();
    let cold_optimized = started.elapsed();
    drop(cold);
    let started = Instant::now();
    let warm = host.controller();
    let warm_time = started.elapsed();
    assert_eq!(warm.registry().tools().count(), n);
    Startup {
        cold: cold_time,
        cold_optimized,
        warm: warm_time,
    }
}

fn batch_vs_serial(host: &Controller, tool: &str, args: &[String]) -> (Duration, Duration) {
    let rt = runtime();
    let requests = || {
        args.iter()
            .map(|a| CallRequest::new(tool, a))
            .collect::<Vec<_>>()
    };
    let started = Instant::now();
    for r in requests() {
        let result = rt.block_on(host.handle(r));
        assert_eq!(result.status, Status::Ok, "{result:?}");
    }
    let serial = started.elapsed();
    let started = Instant::now();
    let results = rt.block_on(host.handle_batch(requests()));
    let batch = started.elapsed();
    assert!(results.iter().all(|r| r.status == Status::Ok));
    (batch, serial)
}

/// Peak RSS (sampled every 5 ms) while `n` calls are in flight at once.
fn peak_rss_in_flight(host: Arc<Controller>, n: usize) -> (u64, u64, u64) {
    let rt = runtime();
    let before = rss_kib();
    let running = Arc::new(AtomicBool::new(true));
    let peak = Arc::new(AtomicU64::new(before));
    let sampler = {
        let (running, peak) = (Arc::clone(&running), Arc::clone(&peak));
        std::thread::spawn(move || {
            while running.load(Ordering::Relaxed) {
                peak.fetch_max(rss_kib(), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(5));
            }
        })
    };
    rt.block_on(async {
        let calls = (0..n).map(|i| {
            let host = Arc::clone(&host);
            // Distinct arguments, so each call is its own call.
            let args = format!(r#"{{"ms":{}}}"#, 200 + i % 7);
            async move { host.handle(CallRequest::new("hostile_sleep", args)).await }
        });
        let results = futures::future::join_all(calls).await;
        let failed: Vec<_> = results.iter().filter(|r| r.status != Status::Ok).collect();
        assert!(
            failed.is_empty(),
            "{} calls failed: {:?}",
            failed.len(),
            failed.first()
        );
    });
    running.store(false, Ordering::Relaxed);
    sampler.join().expect("sampler");
    (before, peak.load(Ordering::Relaxed), rss_kib())
}

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
        floor_rows(&controller, scale, &mut out);
    }
    if want(4) {
        throughput_row(&controller, cores, &mut out);
        settle(&controller);
    }
    if want(5) {
        startup_row(&mut out);
    }
    if want(6) {
        batch_row(&controller, &mut out);
    }
    if want(7) {
        mcp_row(scale, &mut out);
    }
    if want(8) {
        rss_row(&controller, &mut out);
    }
    if want(9) {
        http_row(scale, &mut out);
    }
    if want(10) {
        audit_row(scale, &mut out);
    }
    if want(11) {
        load_row(scale, &mut out);
    }
    if want(12) {
        shared_store_row(scale, &mut out);
    }
    if want(14) {
        policy_scale::row(&host, scale, &mut out);
    }
    write_json(out);
}

fn floor_rows(controller: &Controller, scale: usize, out: &mut Map<String, Value>) {
    let calc_wasm = std::fs::read(CALC).expect("calc plugin (build the tests crate first)");
    let floors = [
        Floor::new(&calc_wasm, Engine::Pooling, Api::Sync),
        Floor::new(&calc_wasm, Engine::Pooling, Api::Async),
        Floor::new(&calc_wasm, Engine::Tuned, Api::Sync),
        Floor::new(&calc_wasm, Engine::Tuned, Api::Async),
    ];
    let mut samples = interleaved(controller, &floors, 5000 * scale).into_iter();
    let mut next = || summarize(samples.next().expect("one set of samples per kind"));
    let (bare, bare_async, tuned, tuned_async, governed) = (next(), next(), next(), next(), next());
    bare.line("1. bare wasmtime: instantiate + call + drop (calc)");
    bare_async.line("   the same, wasmtime async API (as the host calls)");
    tuned.line("   the same on the host's tuned engine");
    tuned_async.line("   the same on the host's tuned engine, async");
    governed.line("2. governed pipeline, in-process, audit on (calc)");
    println!("   (rows 1 and 2 interleaved in rounds of {ROUND} calls)");
    print_steps(controller);
    let ratio = governed.median_us / bare.median_us;
    println!("3. governed / bare (medians)                                {ratio:>9.2}x");
    // The tuned engine is the stricter floor: what governance adds on top
    // of the sandbox the host actually runs. The host must call plugins
    // through the async API (the sync one cannot stop a guest blocked in a
    // host call), so the async floor is the like-for-like one.
    let over_tuned = governed.median_us / tuned.median_us;
    let over_tuned_async = governed.median_us / tuned_async.median_us;
    let added = governed.median_us - tuned_async.median_us;
    println!(
        "   governed / the tuned engine, sync API / async API       {over_tuned:>9.2}x / {over_tuned_async:.2}x   governance adds {added:.1} µs"
    );
    let read = summarize(governed_calls(
        controller,
        "read_file",
        READ_ARGS,
        2000 * scale,
    ));
    read.line("   governed read_file of a small file");
    out.insert("bare".into(), bare.json());
    out.insert("bare_async".into(), bare_async.json());
    out.insert("bare_tuned".into(), tuned.json());
    out.insert("bare_tuned_async".into(), tuned_async.json());
    out.insert(
        "governed_over_tuned_ratio".into(),
        json!(round(over_tuned * 100.0) / 100.0),
    );
    out.insert(
        "governed_over_tuned_async_ratio".into(),
        json!(round(over_tuned_async * 100.0) / 100.0),
    );
    out.insert("governance_added_us".into(), json!(round(added)));
    out.insert("governed".into(), governed.json());
    out.insert(
        "governed_over_bare_ratio".into(),
        json!(round(ratio * 100.0) / 100.0),
    );
    out.insert("governed_read_file".into(), read.json());
}

fn throughput_row(controller: &Arc<Controller>, cores: usize, out: &mut Map<String, Value>) {
    let seconds = Until::Elapsed(Duration::from_secs(2));
    let calc_rate = throughput(Arc::clone(controller), "calc", CALC_ARGS, seconds);
    let read_rate = throughput(Arc::clone(controller), "read_file", READ_ARGS, seconds);
    println!(
        "4. governed calls/s on {cores} cores: calc {calc_rate:>9.0}   read_file {read_rate:>9.0}"
    );
    out.insert(
        "calls_per_second".into(),
        json!({ "calc": calc_rate.round(), "read_file": read_rate.round() }),
    );
}

fn startup_row(out: &mut Map<String, Value>) {
    let mut startups = Map::new();
    let ms = |d: Duration| round(d.as_secs_f64() * 1e3);
    for n in [1, 10, 50, 200] {
        let Startup {
            cold,
            cold_optimized,
            warm,
        } = startup(n);
        println!(
            "5. startup to ready, {n:>3} plugins: cold {:>8.1} ms (all optimized {:>8.1} ms)   warm {:>7.2} ms",
            cold.as_secs_f64() * 1e3,
            cold_optimized.as_secs_f64() * 1e3,
            warm.as_secs_f64() * 1e3
        );
        startups.insert(
            format!("{n}_plugins"),
            json!({ "cold_ms": ms(cold), "cold_all_optimized_ms": ms(cold_optimized), "warm_ms": ms(warm) }),
        );
    }
    out.insert("startup".into(), Value::Object(startups));
}

fn batch_row(controller: &Controller, out: &mut Map<String, Value>) {
    let sleeps: Vec<String> = (0..8).map(|i| format!(r#"{{"ms":{}}}"#, 50 + i)).collect();
    let (batch, serial) = batch_vs_serial(controller, "hostile_sleep", &sleeps);
    let speedup = serial.as_secs_f64() / batch.as_secs_f64();
    println!(
        "6. 8 I/O-bound calls (50 ms waits): batch {:>7.1} ms   serial {:>7.1} ms   {speedup:.1}x",
        batch.as_secs_f64() * 1e3,
        serial.as_secs_f64() * 1e3
    );
    let reads: Vec<String> = (0..8).map(|_| READ_ARGS.to_owned()).collect();
    let (read_batch, read_serial) = batch_vs_serial(controller, "read_file", &reads);
    let read_speedup = read_serial.as_secs_f64() / read_batch.as_secs_f64();
    println!(
        "   8 small read_file calls:         batch {:>7.2} ms   serial {:>7.2} ms   {read_speedup:.1}x",
        read_batch.as_secs_f64() * 1e3,
        read_serial.as_secs_f64() * 1e3
    );
    out.insert(
        "batch_of_8".into(),
        json!({
            "io_bound": { "batch_ms": round(batch.as_secs_f64() * 1e3), "serial_ms": round(serial.as_secs_f64() * 1e3), "speedup": round(speedup) },
            "read_file": { "batch_ms": round(read_batch.as_secs_f64() * 1e3), "serial_ms": round(read_serial.as_secs_f64() * 1e3), "speedup": round(read_speedup) },
        }),
    );
}

/// Row 7. The server, its `ping` and `cat` are measured in interleaved
/// rounds, once with client and server scheduled freely and once with both
/// bound to one core. On this VM waking a thread on a halted vCPU costs
/// tens of microseconds, and the kernel usually wakes the client on its own
/// vCPU; on one core the figures are the software's own. (`cat` always
/// shares the client's vCPU, so its floor is a one-vCPU floor.)
fn mcp_row(scale: usize, out: &mut Map<String, Value>) {
    let ([call, ping, echo], polled) = mcp_rounds(scale, true);
    let ([call_1, ping_1, echo_1], _) = mcp::on_one_core(|| mcp_rounds(scale, false));
    call.line("7. MCP stdio tools/call round trip (bare JSON-RPC client)");
    ping.line("   `ping` round trip (the server's JSON-RPC layer alone)");
    echo.line("   the same line echoed by `cat` (the pipes' own floor)");
    if let Some(polled) = &polled {
        polled.line("   tools/call, a client that polls instead of sleeping");
    }
    call_1.line("   tools/call, client and server on one core");
    ping_1.line("   `ping`, on one core");
    echo_1.line("   `cat`, on one core");
    println!(
        "   the server's share of a tools/call: {:.1} µs, on one core {:.1} µs (rounds of {ROUND}, interleaved)",
        call.median_us - echo.median_us,
        call_1.median_us - echo_1.median_us
    );
    out.insert("mcp_stdio_round_trip".into(), call.json());
    out.insert("mcp_stdio_ping".into(), ping.json());
    out.insert("pipe_echo_round_trip".into(), echo.json());
    if let Some(polled) = &polled {
        out.insert("mcp_stdio_round_trip_polling_client".into(), polled.json());
    }
    out.insert(
        "mcp_stdio_one_core".into(),
        json!({ "tools_call": call_1.json(), "ping": ping_1.json(), "pipe_echo": echo_1.json() }),
    );
    paced_cpu(scale, out);
}

/// Row 7, last line: what a served call costs the server in CPU when its
/// client takes a while before the next request (150 µs here, about a bare
/// Python client's pace): the server's own work, or more if it burns CPU
/// while it waits for the client.
fn paced_cpu(scale: usize, out: &mut Map<String, Value>) {
    const PAUSE: Duration = Duration::from_micros(150);
    let binary = std::env::current_exe()
        .expect("own path")
        .with_file_name("toolwarden");
    let host = Host::new(&[CALC]);
    let mut server = mcp::Server::start(&binary, &host.plugins, &host.workspace, &host.state);
    server.cpu_per_paced_call(ROUND, PAUSE);
    let per_call = server.cpu_per_paced_call(5000 * scale, PAUSE);
    println!(
        "   server CPU per tools/call, a client pausing {} µs between calls: {:.0} µs",
        PAUSE.as_micros(),
        per_call.as_secs_f64() * 1e6
    );
    out.insert(
        "mcp_stdio_server_cpu_per_paced_call".into(),
        json!({ "pause_us": PAUSE.as_micros() as u64, "cpu_us": round(per_call.as_secs_f64() * 1e6) }),
    );
}

/// `tools/call`, `ping` and `cat` round trips, `3000 * scale` of each, in
/// interleaved rounds of [`ROUND`], with a client that sleeps in `read`;
/// with `polled`, also `tools/call` with a client that polls (on one core
/// a polling client would only take turns with the server).
fn mcp_rounds(scale: usize, polled: bool) -> ([Summary; 3], Option<Summary>) {
    let binary = std::env::current_exe()
        .expect("own path")
        .with_file_name("toolwarden");
    let mcp_host = Host::new(&[CALC]);
    let mut server = mcp::Server::start(
        &binary,
        &mcp_host.plugins,
        &mcp_host.workspace,
        &mcp_host.state,
    );
    let mut echo = mcp::Server::echo();
    let mut samples: [Vec<Duration>; 3] = Default::default();
    let mut polled_samples = Vec::new();
    let n = 3000 * scale;
    for round in 0..=n / ROUND {
        let call = server.round_trips(Exchange::CallCalc, ROUND);
        let ping = server.round_trips(Exchange::Ping, ROUND);
        let echoed = echo.round_trips(Exchange::Echo, ROUND);
        let polling = if polled {
            server.wait_by(Wait::Poll);
            let polling = server.round_trips(Exchange::CallCalc, ROUND);
            server.wait_by(Wait::Sleep);
            polling
        } else {
            Vec::new()
        };
        // Round 0 warms up and is not kept.
        if round > 0 {
            samples[0].extend(call);
            samples[1].extend(ping);
            samples[2].extend(echoed);
            polled_samples.extend(polling);
        }
    }
    let polled = (!polled_samples.is_empty()).then(|| summarize(polled_samples));
    (samples.map(summarize), polled)
}

fn rss_row(controller: &Arc<Controller>, out: &mut Map<String, Value>) {
    let (before, peak, after) = peak_rss_in_flight(Arc::clone(controller), 1000);
    println!(
        "8. RSS with 1000 calls in flight: before {} MiB, peak {} MiB, after {} MiB",
        before >> 10,
        peak >> 10,
        after >> 10
    );
    out.insert(
        "rss_1000_in_flight".into(),
        json!({ "before_mib": before >> 10, "peak_mib": peak >> 10, "after_mib": after >> 10 }),
    );
}

/// Row 9: sequential `tools/call`s of `calc` over Streamable HTTP against
/// `serve --http` on loopback, with the official SDK clients as agents use
/// them (`bench/clients`, pinned; `make bench` installs them). A client that
/// cannot run here is reported as skipped, with why.
fn http_row(scale: usize, out: &mut Map<String, Value>) {
    let n = (200 * scale).to_string();
    let host = Host::new(&[CALC]);
    let server = mcp::HttpServer::start(&host.plugins, &host.workspace, &host.state);
    let address = &server.address;
    let url = format!("http://{address}/mcp");
    let clients = Path::new(env!("CARGO_MANIFEST_DIR")).join("clients");
    let venv_python = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.venv/bin/python");
    let runs = [
        (
            "typescript_sdk",
            "TypeScript SDK",
            PathBuf::from("node"),
            clients.join("http_round_trip.mjs"),
        ),
        (
            "python_sdk",
            "Python SDK",
            venv_python,
            clients.join("http_round_trip.py"),
        ),
    ];
    let mut row = Map::new();
    for (key, label, program, script) in runs {
        let ran = std::process::Command::new(&program)
            .arg(&script)
            .args([&url, &n])
            .output();
        let samples = ran
            .map_err(|e| format!("cannot run `{}`: {e}", program.display()))
            .and_then(|o| {
                if o.status.success() {
                    serde_json::from_slice::<Value>(&o.stdout).map_err(|e| e.to_string())
                } else {
                    Err(String::from_utf8_lossy(&o.stderr)
                        .lines()
                        .last()
                        .unwrap_or("")
                        .to_owned())
                }
            })
            .and_then(|v| {
                v["ms"]
                    .as_array()
                    .map(|ms| {
                        ms.iter()
                            .filter_map(Value::as_f64)
                            .map(|m| Duration::from_secs_f64(m / 1e3))
                            .collect::<Vec<_>>()
                    })
                    .filter(|ms| !ms.is_empty())
                    .ok_or_else(|| "no samples".to_owned())
            });
        match samples {
            Ok(samples) => {
                let summary = summarize(samples);
                summary.line(&format!(
                    "9. HTTP tools/call round trip, official {label} client"
                ));
                row.insert(key.into(), summary.json());
            }
            Err(why) => {
                println!(
                    "9. HTTP tools/call round trip, official {label} client: skipped ({why}; `make bench` installs the clients)"
                );
                row.insert(key.into(), json!({ "skipped": why }));
            }
        }
    }
    drop(server);
    out.insert("mcp_http_round_trip".into(), Value::Object(row));
}

/// Row 11: `serve --http` under 1, 16, 64 and 256 keep-alive connections
/// of stateless `tools/call`, each level for three seconds (times the
/// scale) after a short warm-up.
fn load_row(scale: usize, out: &mut Map<String, Value>) {
    let host = Host::new(&[CALC]);
    let server = mcp::HttpServer::start(&host.plugins, &host.workspace, &host.state);
    load::level(&[&server.address], 4, Duration::from_secs(1));
    let mut levels = Map::new();
    for connections in [1, 16, 64, 256] {
        let level = load::level(
            &[&server.address],
            connections,
            Duration::from_secs(3 * scale as u64),
        );
        let (rss, peak) = load::rss_mib(server.pid());
        println!(
            "11. HTTP under load, {connections:>3} connections: {}   RSS {rss:.0} MiB (peak {peak:.0})",
            level.shown()
        );
        let mut figures = level.json();
        figures.insert("rss_mib".into(), json!(round(rss)));
        figures.insert("peak_rss_mib".into(), json!(round(peak)));
        levels.insert(connections.to_string(), Value::Object(figures));
    }
    println!("    (the load generator runs on one thread of the same two cores)");
    out.insert("mcp_http_load".into(), Value::Object(levels));
}

/// Row 12: governed calls per second over HTTP (16 keep-alive connections
/// of stateless `calc` calls, each call reserving a budget unit and
/// appending its audit records) with the state in SQLite on one host, in
/// PostgreSQL on one host, and in PostgreSQL shared by three hosts that the
/// connections are spread over. Needs the server `make bench` starts
/// (`tests/mcp/postgres.py`, named by `TOOLWARDEN_TEST_POSTGRES`).
fn shared_store_row(scale: usize, out: &mut Map<String, Value>) {
    let Ok(server) = std::env::var("TOOLWARDEN_TEST_POSTGRES") else {
        println!("12. shared store: skipped (no PostgreSQL; `make bench` starts one)");
        return;
    };
    let password = std::env::var("TOOLWARDEN_TEST_POSTGRES_PASSWORD").unwrap_or_default();
    let host = Host::new(&[CALC]);
    let password_file = host.workspace.join("pg-password");
    std::fs::write(&password_file, format!("{password}\n")).expect("write the password file");
    let budget = CONFIG.replace("[budget]\n", "[budget]\nmax_calls = 1000000000\n");
    let shared = format!(
        "{budget}\n[store]\nurl = \"postgres://toolwarden@{server}/postgres\"\npassword_file = \"{}\"\n",
        password_file.display()
    );
    let mut rows = Map::new();
    for (name, config, replicas) in [
        ("sqlite_1_host", &budget, 1),
        ("postgres_1_host", &shared, 1),
        ("postgres_3_hosts", &shared, 3),
    ] {
        std::fs::write(host.workspace.join("toolwarden.toml"), config).expect("write config");
        let servers: Vec<_> = (0..replicas)
            .map(|i| {
                let state = host.state.join(format!("{name}-{i}"));
                std::fs::create_dir_all(&state).expect("mkdir");
                mcp::HttpServer::start(&host.plugins, &host.workspace, &state)
            })
            .collect();
        let addresses: Vec<&str> = servers.iter().map(|s| s.address.as_str()).collect();
        load::level(&addresses, 4, Duration::from_secs(1));
        let level = load::level(&addresses, 16, Duration::from_secs(3 * scale as u64));
        println!("12. {name:<17} 16 connections: {}", level.shown());
        let mut figures = level.json();
        figures.insert("hosts".into(), json!(replicas));
        rows.insert(name.into(), Value::Object(figures));
    }
    println!("    (the hosts, PostgreSQL 15 and the load generator share the same two cores)");
    out.insert("shared_store".into(), Value::Object(rows));
}

/// The audit log as it grows: database bytes per call, and `audit verify`
/// against the record count, up to a million records (real calls, so real
/// records), then an export of all but the newest thousand and a check of
/// the exported file on its own.
fn audit_row(scale: usize, out: &mut Map<String, Value>) {
    let host = Host::new(&[CALC]);
    let controller = host.controller();
    let db_bytes = || {
        ["toolwarden.db", "toolwarden.db-wal"]
            .iter()
            .filter_map(|f| std::fs::metadata(host.state.join(f)).ok())
            .map(|m| m.len())
            .sum::<u64>()
    };
    let empty = db_bytes();
    let mut levels = Vec::new();
    let mut calls = 0u64;
    for target in [10_000u64, 100_000, 1_000_000].map(|r| r * scale as u64) {
        let more = (target / 3).saturating_sub(calls);
        throughput(
            Arc::clone(&controller),
            "calc",
            CALC_ARGS,
            Until::Calls(more),
        );
        calls += more;
        let started = Instant::now();
        let verified = controller.records().verify().expect("verify");
        let verify = started.elapsed();
        let toolwarden::Verification::Intact { records, .. } = verified else {
            panic!("the chain broke: {verified:?}");
        };
        let bytes = db_bytes();
        let per_call = (bytes - empty) as f64 / calls as f64;
        println!(
            "10. audit at {records:>9} records ({calls} calls): database {:>7.1} MB, {per_call:>6.0} bytes per call, verify {:>7.2} s",
            bytes as f64 / 1e6,
            verify.as_secs_f64()
        );
        levels.push(json!({ "records": records, "calls": calls, "db_bytes": bytes, "bytes_per_call": round(per_call), "verify_s": round(verify.as_secs_f64()) }));
    }
    let file = host.state.join("old.jsonl");
    let mut exported = std::fs::File::create(&file).expect("export file");
    let synced = exported.try_clone().expect("export file");
    let started = Instant::now();
    let segment = controller
        .records()
        .export_audit(
            toolwarden::Cut::Keeping { records: 1000 },
            &mut exported,
            &|| synced.sync_all(),
        )
        .expect("export")
        .expect("records to export");
    let export = started.elapsed();
    let started = Instant::now();
    let checked = toolwarden::verify_segment(std::io::BufReader::new(
        std::fs::File::open(&file).expect("export file"),
    ))
    .expect("read the export");
    let check = started.elapsed();
    assert!(
        matches!(checked, toolwarden::SegmentCheck::Intact { .. }),
        "{checked:?}"
    );
    let started = Instant::now();
    let rest = controller.records().verify().expect("verify");
    let after = started.elapsed();
    assert!(
        matches!(rest, toolwarden::Verification::Intact { .. }),
        "{rest:?}"
    );
    println!(
        "    export of {} records {:.2} s ({:.0} MB file), verify --file {:.2} s, verify of the rest {:.3} s",
        segment.records,
        export.as_secs_f64(),
        std::fs::metadata(&file).map_or(0, |m| m.len()) as f64 / 1e6,
        check.as_secs_f64(),
        after.as_secs_f64()
    );
    out.insert(
        "audit".into(),
        json!({ "levels": levels, "export": { "records": segment.records, "export_s": round(export.as_secs_f64()), "verify_file_s": round(check.as_secs_f64()), "verify_rest_s": round(after.as_secs_f64()) } }),
    );
}

fn write_json(out: Map<String, Value>) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/bench");
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    let file = dir.join(format!("bench-{stamp}.json"));
    let written = std::fs::create_dir_all(&dir).and_then(|()| {
        std::fs::write(
            &file,
            serde_json::to_string_pretty(&Value::Object(out)).unwrap_or_default(),
        )
    });
    match written {
        Ok(()) => println!("figures written to {}", file.display()),
        Err(e) => eprintln!("cannot write {}: {e}", file.display()),
    }
}
