//! Rows 9, 11 and 12: `serve --http` with the official SDK clients, under
//! load, and with its state shared in PostgreSQL.

use crate::host::Host;
use crate::load::Sessions;
use crate::summary::{round, summarize};
use crate::{CONFIG, load, mcp};
use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};
use std::time::Duration;
use toolwarden_tests::CALC;

/// Row 9: sequential `tools/call`s of `calc` over Streamable HTTP against
/// `serve --http` on loopback, with the official SDK clients as agents use
/// them (`bench/clients`, pinned; `make bench` installs them). A client that
/// cannot run here is reported as skipped, with why.
pub(crate) fn http_row(scale: usize, out: &mut Map<String, Value>) {
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
pub(crate) fn load_row(scale: usize, out: &mut Map<String, Value>) {
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
/// of stateless `calc` calls under a `[budget] max_calls`, each appending
/// its audit records) with the state in SQLite on one host, in PostgreSQL
/// on one host, and in PostgreSQL shared by three hosts that the
/// connections are spread over; the calls in no named session (each one a
/// session its host made, counted there) and, on PostgreSQL, in a named
/// session per connection (each call reserving its unit in the store).
/// PostgreSQL's own statistics give the transactions per call. Needs the server `make bench` starts
/// (`tests/mcp/postgres.py`, named by `TOOLWARDEN_TEST_POSTGRES`).
pub(crate) fn shared_store_row(scale: usize, out: &mut Map<String, Value>) {
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
    for (name, config, replicas, sessions) in [
        ("sqlite_1_host", &budget, 1, Sessions::Minted),
        ("postgres_1_host", &shared, 1, Sessions::Minted),
        ("postgres_3_hosts", &shared, 3, Sessions::Minted),
        ("postgres_1_host_named", &shared, 1, Sessions::Named),
        ("postgres_3_hosts_named", &shared, 3, Sessions::Named),
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
        load::level_in(&addresses, 4, Duration::from_secs(1), sessions);
        let before = transactions(&server, &password, config);
        let level = load::level_in(
            &addresses,
            16,
            Duration::from_secs(3 * scale as u64),
            sessions,
        );
        let per_call = transactions(&server, &password, config)
            .zip(before)
            .map(|(after, before)| (after - before) as f64 / level.calls.max(1) as f64);
        let shown = per_call.map_or_else(String::new, |t| {
            format!(", {t:.2} PostgreSQL transactions per call")
        });
        println!("12. {name:<22} 16 connections: {}{shown}", level.shown());
        let mut figures = level.json();
        figures.insert("hosts".into(), json!(replicas));
        if let Some(t) = per_call {
            figures.insert("postgres_transactions_per_call".into(), json!(t));
        }
        rows.insert(name.into(), Value::Object(figures));
    }
    println!("    (the hosts, PostgreSQL 15 and the load generator share the same two cores)");
    println!(
        "    (named: each connection's calls are one session, its units reserved in the store)"
    );
    out.insert("shared_store".into(), Value::Object(rows));
}

/// The transactions PostgreSQL committed or rolled back in the store's
/// database so far, when `config` names one (the statistics lag by up to
/// half a second: read after a pause).
fn transactions(server: &str, password: &str, config: &str) -> Option<i64> {
    if !config.contains("[store]") {
        return None;
    }
    std::thread::sleep(Duration::from_millis(600));
    toolwarden_tests::psql(
        server,
        password,
        "postgres",
        "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = 'postgres'",
    )
    .ok()?
    .parse()
    .ok()
}
