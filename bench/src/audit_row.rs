//! Row 10: the audit log as it grows to a million records.

use crate::CALC_ARGS;
use crate::host::{Host, Until, throughput};
use crate::summary::round;
use serde_json::{Map, Value, json};
use std::io::Read;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};
use toolwarden_tests::CALC;

/// The audit log as it grows: database bytes per call, and `audit verify`
/// against the record count, up to a million records (real calls, so real
/// records), then an export of all but the newest thousand and a check of
/// the exported file on its own.
pub(crate) fn audit_row(scale: usize, out: &mut Map<String, Value>) {
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
        let (stats, stats_time, stats_mib) = audit_stats(&host);
        assert_eq!(
            3 * stats["tools"]["calc"]["calls"].as_i64().unwrap_or_default(),
            records,
            "every call counted (three records each)"
        );
        println!(
            "10. audit at {records:>9} records ({calls} calls): database {:>7.1} MB, {per_call:>6.0} bytes per call, verify {:>7.2} s, `audit stats` {:>6.2} s ({stats_mib:.0} MiB peak)",
            bytes as f64 / 1e6,
            verify.as_secs_f64(),
            stats_time.as_secs_f64()
        );
        levels.push(json!({ "records": records, "calls": calls, "db_bytes": bytes, "bytes_per_call": round(per_call), "verify_s": round(verify.as_secs_f64()), "audit_stats_s": round(stats_time.as_secs_f64()), "audit_stats_peak_rss_mib": round(stats_mib) }));
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

/// `toolwarden audit stats --json` on the host's state, as a person runs
/// it while the host serves: its report, how long it took and its peak
/// resident memory in MiB (its own `VmHWM`, read until it exits; the
/// kernel's `ru_maxrss` would count the bench's memory from before `exec`).
fn audit_stats(host: &Host) -> (Value, Duration, f64) {
    let binary = std::env::current_exe()
        .expect("own path")
        .with_file_name("toolwarden");
    let started = Instant::now();
    let mut child = crate::mcp::host_command(&binary, &host.plugins, &host.workspace, &host.state)
        .args(["audit", "stats", "--json"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("run audit stats");
    // Read on a thread: a report larger than the pipe holds would stop the
    // command before it exits.
    let mut stdout = child.stdout.take().expect("piped stdout");
    let reader = std::thread::spawn(move || {
        let mut report = String::new();
        stdout.read_to_string(&mut report).map(|_| report)
    });
    let status = format!("/proc/{}/status", child.id());
    let mut peak_kib = 0u64;
    while child.try_wait().expect("wait for audit stats").is_none() {
        let high_water = std::fs::read_to_string(&status).ok().and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
            line.split_whitespace().nth(1)?.parse().ok()
        });
        peak_kib = peak_kib.max(high_water.unwrap_or_default());
        std::thread::sleep(Duration::from_millis(2));
    }
    let elapsed = started.elapsed();
    let report = reader.join().expect("the reader").expect("read the report");
    let report = serde_json::from_str(&report).expect("a JSON report");
    (report, elapsed, peak_kib as f64 / 1024.0)
}
