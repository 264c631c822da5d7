//! Rows 1 to 6 and 8, in-process: the governed call against bare
//! wasmtime, throughput on every core, startup, batches and memory with
//! calls in flight.

use crate::bare::{Api, Engine, Floor, Job};
use crate::host::{Host, Rss, Until, governed_call, peak_rss_during, runtime, throughput};
use crate::summary::{Summary, round, summarize};
use crate::{CALC_ARGS, READ_ARGS, ROUND};
use serde_json::{Map, Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant};
use toolwarden::{CallRequest, Controller, Status, Tracing};
use toolwarden_tests::{CALC, FS, numbered_plugins};

pub(crate) fn floor_rows(
    controller: &Controller,
    workspace: &std::path::Path,
    scale: usize,
    out: &mut Map<String, Value>,
) {
    let calc_wasm = std::fs::read(CALC).expect("calc plugin (build the tests crate first)");
    let calc = || Job {
        tool: "calc",
        args: CALC_ARGS,
        answer_contains: "42",
        workspace: None,
    };
    let floors = [
        Floor::new(&calc_wasm, Engine::Pooling, Api::Sync, calc()),
        Floor::new(&calc_wasm, Engine::Pooling, Api::Async, calc()),
        Floor::new(&calc_wasm, Engine::Tuned, Api::Sync, calc()),
        Floor::new(&calc_wasm, Engine::Tuned, Api::Async, calc()),
    ];
    let mut samples = interleaved(controller, &floors, "calc", CALC_ARGS, 5000 * scale).into_iter();
    let mut next = || summarize(samples.next().expect("one set of samples per kind"));
    let (bare, bare_async, tuned, tuned_async, governed) = (next(), next(), next(), next(), next());
    bare.line("1. bare wasmtime: instantiate + call + drop (calc)");
    bare_async.line("   the same, wasmtime async API (as the host calls)");
    tuned.line("   the same on the host's tuned engine");
    tuned_async.line("   the same on the host's tuned engine, async");
    governed.line("2. governed pipeline, in-process, audit on (calc)");
    println!("   (rows 1 and 2 interleaved in rounds of {ROUND} calls)");
    print_steps(controller, "calc", CALC_ARGS);
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
    let (read, bare_read) = read_file_floor(controller, workspace, scale);
    read.line("   governed read_file of a small file");
    bare_read.line("   bare read_file on the tuned engine, async");
    let read_ratio = read.median_us / bare_read.median_us;
    println!(
        "   governed read_file / bare                                {read_ratio:>9.2}x   governance adds {:.1} µs",
        read.median_us - bare_read.median_us
    );
    print_steps(controller, "read_file", READ_ARGS);
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
    out.insert("bare_tuned_async_read_file".into(), bare_read.json());
    out.insert(
        "governed_read_file_over_tuned_async_ratio".into(),
        json!(round(read_ratio * 100.0) / 100.0),
    );
}

/// Governed `read_file` and its floor, interleaved: a small file's read
/// is mostly the kernel's file system calls, whose cost on this VM moved
/// by half between days with no change to the code (the bisect of #49),
/// so only the ratio compares across days.
fn read_file_floor(
    controller: &Controller,
    workspace: &std::path::Path,
    scale: usize,
) -> (Summary, Summary) {
    let fs_wasm = std::fs::read(FS).expect("fs plugin (build the tests crate first)");
    let floor = Floor::new(
        &fs_wasm,
        Engine::Tuned,
        Api::Async,
        Job {
            tool: "read_file",
            args: READ_ARGS,
            answer_contains: "hello, governed world",
            workspace: Some(workspace.to_owned()),
        },
    );
    let mut samples =
        interleaved(controller, &[floor], "read_file", READ_ARGS, 2000 * scale).into_iter();
    let mut next = || summarize(samples.next().expect("floor and governed samples"));
    let bare = next();
    (next(), bare)
}

/// `n` calls of each floor and `n` governed calls of `tool` on `args`,
/// interleaved in rounds of [`ROUND`]. This VM's speed drifts by tens of
/// percent from one minute to the next; measured one after the other, that
/// drift would land in the ratio. Returns the floors' samples in the order
/// of `floors`, then the governed ones.
fn interleaved(
    host: &Controller,
    floors: &[Floor],
    tool: &str,
    args: &str,
    n: usize,
) -> Vec<Vec<Duration>> {
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
                let sample = governed_call(host, tool, args).await;
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
fn print_steps(host: &Controller, tool: &str, args: &str) {
    let rt = runtime();
    let mut steps: Vec<(&'static str, Vec<u64>)> = Vec::new();
    let mut totals = Vec::new();
    for _ in 0..2000 {
        let mut request = CallRequest::new(tool, args);
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

pub(crate) fn throughput_row(
    controller: &Arc<Controller>,
    cores: usize,
    out: &mut Map<String, Value>,
) {
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

pub(crate) fn startup_row(out: &mut Map<String, Value>) {
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

pub(crate) fn batch_row(controller: &Controller, out: &mut Map<String, Value>) {
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

/// Peak RSS (sampled every 5 ms) while `n` calls are in flight at once.
fn peak_rss_in_flight(host: Arc<Controller>, n: usize) -> Rss {
    let rt = runtime();
    let ((), rss) = peak_rss_during(|| {
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
        })
    });
    rss
}

pub(crate) fn rss_row(controller: &Arc<Controller>, out: &mut Map<String, Value>) {
    let Rss {
        before,
        peak,
        after,
    } = peak_rss_in_flight(Arc::clone(controller), 1000);
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
