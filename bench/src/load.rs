//! Row 11: `serve --http` under load. Keep-alive connections, each sending
//! one 2026-07-28 stateless `tools/call` of `calc` after another (the next
//! as soon as the answer is read), for a fixed time per level; calls per
//! second, p50 and p99 latency, errors, and the server's resident memory.
//!
//! The generator is hyper's HTTP/1.1 client on one current-thread runtime,
//! on the same two cores as the server: one thread keeps its share of the
//! CPU small and known.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper_util::rt::TokioIo;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::TcpStream;

/// One `tools/call` as a stateless 2026-07-28 client sends it: everything
/// the server needs is in the request, no session.
const CALL: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"calc","arguments":{"op":"add","a":2,"b":3},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"toolwarden-bench","version":"0"},"io.modelcontextprotocol/clientCapabilities":{}}}}"#;

/// What one level measured.
pub struct Level {
    pub calls: usize,
    pub errors: usize,
    pub calls_per_second: f64,
    pub p50: Duration,
    pub p99: Duration,
}

impl Level {
    /// The level as a row of the printed table.
    pub fn shown(&self) -> String {
        format!(
            "{:>7.0} calls/s   p50 {:>6.2} ms   p99 {:>6.2} ms   errors {}",
            self.calls_per_second,
            self.p50.as_secs_f64() * 1e3,
            self.p99.as_secs_f64() * 1e3,
            self.errors,
        )
    }

    /// The level's figures for the JSON file.
    pub fn json(&self) -> serde_json::Map<String, serde_json::Value> {
        let ms = |d: Duration| (d.as_secs_f64() * 1e5).round() / 100.0;
        let serde_json::Value::Object(fields) = serde_json::json!({
            "calls": self.calls,
            "calls_per_second": self.calls_per_second.round(),
            "p50_ms": ms(self.p50),
            "p99_ms": ms(self.p99),
            "errors": self.errors,
        }) else {
            unreachable!("a JSON object literal")
        };
        fields
    }
}

/// Runs `connections` keep-alive connections for `duration`, the i-th
/// against `addresses[i % n]` (replicas behind a round-robin balancer). A
/// connection that cannot be opened counts as an error per attempt, so a
/// server that refuses connections shows, not hides.
pub fn level(addresses: &[&str], connections: usize, duration: Duration) -> Level {
    level_in(addresses, connections, duration, Sessions::Minted)
}

/// Which session a load connection's calls are in.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Sessions {
    /// None named: each stateless call is a session of its own, which the
    /// host that runs it made.
    Minted,
    /// The i-th connection names `bench-i` in `_meta`, as a client that
    /// spreads one session's calls over hosts does: its budget is counted
    /// in the store.
    Named,
}

/// [`level`], with the calls in `sessions`.
pub fn level_in(
    addresses: &[&str],
    connections: usize,
    duration: Duration,
    sessions: Sessions,
) -> Level {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime for the load generator");
    let addresses: Vec<Arc<str>> = addresses.iter().map(|a| Arc::from(*a)).collect();
    runtime.block_on(async {
        let started = Instant::now();
        let until = started + duration;
        let tasks: Vec<_> = (0..connections)
            .map(|i| {
                let address = Arc::clone(&addresses[i % addresses.len()]);
                let body = match sessions {
                    Sessions::Minted => Bytes::from_static(CALL.as_bytes()),
                    Sessions::Named => Bytes::from(CALL.replace(
                        r#""_meta":{"#,
                        &format!(r#""_meta":{{"toolwarden/session":"bench-{i}","#),
                    )),
                };
                tokio::spawn(connection(address, body, until))
            })
            .collect();
        let mut latencies = Vec::new();
        let mut errors = 0;
        for task in tasks {
            let (mut done, failed) = task.await.expect("a load connection panicked");
            latencies.append(&mut done);
            errors += failed;
        }
        let elapsed = started.elapsed();
        latencies.sort_unstable();
        let at = |q: f64| {
            latencies
                .get(((latencies.len() as f64 * q) as usize).min(latencies.len().saturating_sub(1)))
                .copied()
                .unwrap_or_default()
        };
        Level {
            calls: latencies.len(),
            errors,
            calls_per_second: latencies.len() as f64 / elapsed.as_secs_f64(),
            p50: at(0.50),
            p99: at(0.99),
        }
    })
}

/// One connection's calls until `until`: the latency of each good answer,
/// and how many calls failed (refused connection, HTTP error, an answer
/// that is not the sum).
async fn connection(address: Arc<str>, body: Bytes, until: Instant) -> (Vec<Duration>, usize) {
    let mut latencies = Vec::new();
    let mut errors = 0;
    while Instant::now() < until {
        let Ok(stream) = TcpStream::connect(&*address).await else {
            errors += 1;
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let _ = stream.set_nodelay(true);
        let Ok((mut sender, driver)) =
            hyper::client::conn::http1::handshake(TokioIo::new(stream)).await
        else {
            errors += 1;
            continue;
        };
        tokio::spawn(driver);
        while Instant::now() < until {
            let request = Request::post("/mcp")
                .header("host", &*address)
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .header("mcp-protocol-version", "2026-07-28")
                .header("mcp-method", "tools/call")
                .header("mcp-name", "calc")
                .body(Full::new(body.clone()))
                .expect("a well-formed request");
            let sent = Instant::now();
            let answered = match sender.send_request(request).await {
                Ok(response) if response.status().is_success() => response
                    .into_body()
                    .collect()
                    .await
                    .ok()
                    .map(|b| b.to_bytes()),
                _ => None,
            };
            match answered {
                Some(body) if is_the_sum(&body) => latencies.push(sent.elapsed()),
                Some(_) => errors += 1,
                None => {
                    errors += 1;
                    break;
                }
            }
        }
    }
    (latencies, errors)
}

/// Whether an answer (JSON, or one SSE event) carries `calc`'s result 5.
fn is_the_sum(body: &[u8]) -> bool {
    let text = String::from_utf8_lossy(body);
    let json = text
        .lines()
        .find_map(|line| line.strip_prefix("data:"))
        .unwrap_or(&text);
    serde_json::from_str::<serde_json::Value>(json.trim())
        .ok()
        .is_some_and(|answer| answer["result"]["structuredContent"]["result"] == 5)
}

/// The server's resident memory now and at its peak, from `/proc`.
pub fn rss_mib(pid: u32) -> (f64, f64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| {
                rest.trim()
                    .trim_end_matches("kB")
                    .trim()
                    .parse::<f64>()
                    .ok()
            })
            .map_or(0.0, |kb| kb / 1024.0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}
