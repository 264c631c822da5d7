//! Row 7: `tools/call` round trips over MCP stdio with a bare JSON-RPC
//! client, beside `ping` and `cat`, and the server's CPU per call against
//! a bare rmcp server's.

use crate::ROUND;
use crate::host::Host;
use crate::mcp::{self, Exchange, Wait};
use crate::summary::{Summary, round, summarize};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::process::Command;
use std::time::{Duration, Instant};
use toolwarden_tests::CALC;

/// Row 7. The server, its `ping` and `cat` are measured in interleaved
/// rounds, once with client and server scheduled freely and once with both
/// bound to one core. On this VM waking a thread on a halted vCPU costs
/// tens of microseconds, and the kernel usually wakes the client on its own
/// vCPU; on one core the figures are the software's own. (`cat` always
/// shares the client's vCPU, so its floor is a one-vCPU floor.)
pub(crate) fn mcp_row(scale: usize, out: &mut Map<String, Value>) {
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

/// Row 7, last lines: what a served call costs the server in CPU when its
/// client takes a while before the next request (150 µs here, about a bare
/// Python client's pace): the server's own work, or more if it burns CPU
/// while it waits for the client. Against the floor of an MCP server on the
/// same rmcp that does nothing but answer (`bare-rmcp`), in interleaved
/// rounds, thread by thread.
fn paced_cpu(scale: usize, out: &mut Map<String, Value>) {
    const PAUSE: Duration = Duration::from_micros(150);
    let own = std::env::current_exe().expect("own path");
    let host = Host::new(&[CALC]);
    let governed = mcp::Server::start(
        &own.with_file_name("toolwarden"),
        &host.plugins,
        &host.workspace,
        &host.state,
    );
    let bare_binary = own.with_file_name("bare-rmcp");
    let bare = bare_binary
        .exists()
        .then(|| mcp::Server::start_command(Command::new(&bare_binary)));
    let mut servers: Vec<(&str, mcp::Server, BTreeMap<String, Duration>)> =
        std::iter::once(("toolwarden", governed))
            .chain(bare.map(|b| ("bare rmcp", b)))
            .map(|(name, server)| (name, server, BTreeMap::new()))
            .collect();
    let n = 5000 * scale;
    for round in 0..=n / ROUND {
        for (_, server, total) in &mut servers {
            let before = server.cpu_by_thread();
            server.paced_calls(ROUND, PAUSE);
            // Round 0 warms up and is not kept.
            if round > 0 {
                mcp::add_cpu_between(&before, &server.cpu_by_thread(), total);
            }
        }
    }
    let per_call_us = |d: &Duration| round(d.as_secs_f64() * 1e6 / n as f64);
    let mut figures = Vec::new();
    for (name, _, threads) in &servers {
        let total: Duration = threads.values().sum();
        let shown: Vec<String> = threads
            .iter()
            .filter(|(_, used)| per_call_us(used) >= 0.5)
            .map(|(thread, used)| format!("{thread} {:.0}", per_call_us(used)))
            .collect();
        println!(
            "   {name} server CPU per tools/call, a client pausing {} µs between calls: {:.0} µs ({})",
            PAUSE.as_micros(),
            per_call_us(&total),
            shown.join(", ")
        );
        let by_thread: Map<String, Value> = threads
            .iter()
            .map(|(thread, used)| (thread.clone(), json!(per_call_us(used))))
            .collect();
        figures.push(json!({ "pause_us": PAUSE.as_micros() as u64, "cpu_us": per_call_us(&total), "threads": by_thread }));
    }
    let mut figures = figures.into_iter();
    if let Some(governed) = figures.next() {
        out.insert("mcp_stdio_server_cpu_per_paced_call".into(), governed);
    }
    match figures.next() {
        Some(bare) => {
            let ratio = out["mcp_stdio_server_cpu_per_paced_call"]["cpu_us"]
                .as_f64()
                .unwrap_or_default()
                / bare["cpu_us"].as_f64().unwrap_or(f64::NAN);
            println!("   toolwarden / bare rmcp, CPU per call: {ratio:.2}x");
            out.insert("bare_rmcp_cpu_per_paced_call".into(), bare);
            out.insert(
                "mcp_stdio_server_cpu_ratio_to_bare_rmcp".into(),
                json!(round(ratio * 100.0) / 100.0),
            );
        }
        None => println!(
            "   bare rmcp floor: skipped ({} is missing: `cargo build --release -p toolwarden-bench --bins`)",
            bare_binary.display()
        ),
    }
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

/// Row 5, last lines: `toolwarden serve` from its start to the answer to
/// `tools/list` (one plugin, its code in the cache), as an MCP client meets
/// it: back to back, and after a few seconds idle, when a VM's host may
/// have taken back free memory and parked the idle vCPUs; beside the bare
/// rmcp server, whose start is the floor.
pub fn start_to_list(out: &mut Map<String, Value>) {
    const ROUNDS: usize = 5;
    const IDLE: Duration = Duration::from_secs(3);
    let own = std::env::current_exe().expect("own path");
    let host = Host::new(&[CALC]);
    let toolwarden = || {
        mcp::serve_command(
            &own.with_file_name("toolwarden"),
            &host.plugins,
            &host.workspace,
            &host.state,
        )
    };
    let bare_binary = own.with_file_name("bare-rmcp");
    let bare = || bare_binary.exists().then(|| Command::new(&bare_binary));
    let timed = |command: Command| {
        let started = Instant::now();
        let mut server = mcp::Server::start_command(command);
        let listed = server.request("tools/list", json!({}));
        assert!(listed["result"]["tools"].is_array(), "{listed}");
        started.elapsed()
    };
    timed(toolwarden());
    let mut figures = Map::new();
    let mut samples: [[Vec<Duration>; 2]; 2] = Default::default();
    for _ in 0..ROUNDS {
        for _ in 0..ROUNDS {
            samples[0][0].push(timed(toolwarden()));
            samples[1][0].extend(bare().map(timed));
        }
        std::thread::sleep(IDLE);
        samples[0][1].push(timed(toolwarden()));
        std::thread::sleep(IDLE);
        samples[1][1].extend(bare().map(timed));
    }
    for (name, [back_to_back, after_idle]) in ["toolwarden", "bare_rmcp"].into_iter().zip(samples) {
        if back_to_back.is_empty() {
            continue;
        }
        let (b2b, idle) = (summarize(back_to_back), summarize(after_idle));
        println!(
            "   {name} serve, start to its tools/list answer: back to back median {:.1} ms, after {} s idle {:.1} ms",
            b2b.median_us / 1e3,
            IDLE.as_secs(),
            idle.median_us / 1e3
        );
        figures.insert(
            name.into(),
            json!({ "back_to_back_ms": round(b2b.median_us / 1e3), "after_idle_ms": round(idle.median_us / 1e3) }),
        );
    }
    out.insert("serve_start_to_tools_list".into(), Value::Object(figures));
}

/// Row 15, row 7 as people meet it: `tools/call` of `calc` over stdio from the
/// official TypeScript and Python SDK clients (`bench/clients`), against
/// `toolwarden serve` and the bare rmcp server in interleaved rounds, from
/// one client process. The bare server validates, runs and records nothing,
/// so it is an ungoverned host's floor: the ratio is what governance costs
/// a person waiting on an agent's call, and each server's p99 over its
/// median is its tail.
pub(crate) fn sdk_clients_row(scale: usize, out: &mut Map<String, Value>) {
    let own = std::env::current_exe().expect("own path");
    let toolwarden = own.with_file_name("toolwarden");
    let host = Host::new(&[CALC]);
    let governed = mcp::serve_command(&toolwarden, &host.plugins, &host.workspace, &host.state);
    let bare = own.with_file_name("bare-rmcp");
    let mut servers = vec![spawn_spec("toolwarden", &governed)];
    if bare.exists() {
        // The same tool as the governed host lists, output schema and all:
        // a client that checks results against it works alike for both.
        let listed = mcp::Server::start(&toolwarden, &host.plugins, &host.workspace, &host.state)
            .request("tools/list", json!({}));
        let mut bare = Command::new(&bare);
        bare.env("BARE_RMCP_TOOL", listed["result"]["tools"][0].to_string());
        servers.push(spawn_spec("bare_rmcp", &bare));
    }
    let spec = json!({ "round": 50, "n": 1000 * scale, "servers": servers });
    let clients = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("clients");
    let venv_python = clients.join("../../.venv/bin/python");
    let runs = [
        (
            "typescript_sdk",
            "TypeScript",
            "node".into(),
            clients.join("stdio_round_trip.mjs"),
        ),
        (
            "python_sdk",
            "Python",
            venv_python,
            clients.join("stdio_round_trip.py"),
        ),
    ];
    let mut row = Map::new();
    for (key, label, program, script) in runs {
        match run_client(&program, &script, &spec) {
            Ok(by_server) => {
                let summaries: BTreeMap<String, Summary> = by_server
                    .into_iter()
                    .map(|(server, samples)| (server, summarize(samples)))
                    .collect();
                let mut figures = Map::new();
                for (server, summary) in &summaries {
                    summary.line(&format!("   stdio, official {label} SDK client, {server}"));
                    let mut json = summary.json();
                    json["p99_over_median"] =
                        json!(round(summary.p99_us / summary.median_us * 10.0) / 10.0);
                    figures.insert(server.clone(), json);
                }
                if let (Some(t), Some(b)) =
                    (summaries.get("toolwarden"), summaries.get("bare_rmcp"))
                {
                    let (median, p99) = (t.median_us / b.median_us, t.p99_us / b.p99_us);
                    println!(
                        "   toolwarden / bare rmcp with the {label} client: median {median:.2}x, p99 {p99:.2}x"
                    );
                    figures.insert(
                        "median_ratio_to_bare_rmcp".into(),
                        json!(round(median * 100.0) / 100.0),
                    );
                    figures.insert(
                        "p99_ratio_to_bare_rmcp".into(),
                        json!(round(p99 * 100.0) / 100.0),
                    );
                }
                row.insert(key.into(), Value::Object(figures));
            }
            Err(why) => {
                println!(
                    "   stdio, official {label} SDK client: skipped ({why}; `make bench` installs the clients)"
                );
                row.insert(key.into(), json!({ "skipped": why }));
            }
        }
    }
    out.insert(
        "mcp_stdio_round_trip_sdk_clients".into(),
        Value::Object(row),
    );
}

/// How a client script starts `command`: its program, arguments and whole
/// environment (an SDK client passes a server no more than it is given).
fn spawn_spec(name: &str, command: &Command) -> Value {
    let mut env: Map<String, Value> = std::env::vars()
        .filter(|(k, _)| !k.starts_with("TOOLWARDEN_"))
        .map(|(k, v)| (k, json!(v)))
        .collect();
    for (key, value) in command.get_envs() {
        let key = key.to_string_lossy().into_owned();
        match value {
            Some(value) => env.insert(key, json!(value.to_string_lossy())),
            None => env.remove(&key),
        };
    }
    json!({
        "name": name,
        "command": command.get_program().to_string_lossy(),
        "args": command.get_args().map(|a| a.to_string_lossy()).collect::<Vec<_>>(),
        "env": env,
    })
}

/// Runs one client script on `spec`; its samples by server, in microseconds.
fn run_client(
    program: &std::path::Path,
    script: &std::path::Path,
    spec: &Value,
) -> Result<BTreeMap<String, Vec<Duration>>, String> {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = Command::new(program)
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run `{}`: {e}", program.display()))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(spec.to_string().as_bytes())
            .map_err(|e| format!("cannot hand the client its servers: {e}"))?;
    }
    let done = child.wait_with_output().map_err(|e| e.to_string())?;
    if !done.status.success() {
        let stderr = String::from_utf8_lossy(&done.stderr);
        return Err(stderr
            .lines()
            .last()
            .unwrap_or("the client failed")
            .to_owned());
    }
    let printed: Value = serde_json::from_slice(&done.stdout).map_err(|e| e.to_string())?;
    let by_server = printed["us"].as_object().ok_or("no samples")?;
    Ok(by_server
        .iter()
        .map(|(server, us)| {
            let samples = us
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_f64)
                .map(|us| Duration::from_secs_f64(us / 1e6))
                .collect();
            (server.clone(), samples)
        })
        .filter(|(_, samples): &(String, Vec<Duration>)| !samples.is_empty())
        .collect())
}
