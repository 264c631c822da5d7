//! `tools/call` round trips over MCP stdio, with a bare newline-delimited
//! JSON-RPC client: no SDK on our side, so client overhead hides nothing.

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Server {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl Server {
    /// Starts `toolwarden serve` and completes the `initialize` handshake.
    pub fn start(binary: &Path, plugins: &Path, workspace: &Path, state: &Path) -> Server {
        let mut command = Command::new(binary);
        command
            .arg("serve")
            .env("TOOLWARDEN_PLUGINS", plugins)
            .env("TOOLWARDEN_WORKSPACE", workspace)
            .env("TOOLWARDEN_STATE", state)
            .env_remove("TOOLWARDEN_CONFIG")
            .env_remove("TOOLWARDEN_LOG");
        let mut server = Server::spawn(command);
        server.request(
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": { "name": "toolwarden-bench", "version": "0" },
            }),
        );
        server.send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
        server
    }

    /// `cat`, which echoes each request line: the same client and pipes with
    /// no server work at all. Its round trip is the floor of row 7 on this
    /// machine (two cross-process wake-ups).
    pub fn echo() -> Server {
        Server::spawn(Command::new("cat"))
    }

    fn spawn(mut command: Command) -> Server {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start `{command:?}`: {e}"));
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
        Server {
            child,
            stdin,
            stdout,
            next_id: 0,
        }
    }

    fn send(&mut self, message: &Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.stdin.write_all(line.as_bytes()).expect("write");
        self.stdin.flush().expect("flush");
    }

    /// Sends a request and returns its response, skipping notifications.
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }));
        let mut line = String::new();
        loop {
            line.clear();
            let read = self.stdout.read_line(&mut line).expect("read");
            assert!(read > 0, "the server closed stdout");
            let message: Value = serde_json::from_str(&line).expect("JSON-RPC line");
            if message["id"] == json!(id) {
                return message;
            }
        }
    }

    /// `n` sequential `tools/call` round trips of one tool.
    pub fn round_trips(&mut self, tool: &str, args: Value, n: usize) -> Vec<Duration> {
        self.timed(
            "tools/call",
            json!({ "name": tool, "arguments": args }),
            n,
            |response| {
                assert_eq!(
                    response["result"]["isError"],
                    json!(false),
                    "the benchmarked call failed: {response}"
                );
            },
        )
    }

    /// `n` sequential round trips of an echoed `tools/call` line.
    pub fn echo_round_trips(&mut self, tool: &str, args: Value, n: usize) -> Vec<Duration> {
        self.timed(
            "tools/call",
            json!({ "name": tool, "arguments": args }),
            n,
            |echoed| {
                assert_eq!(
                    echoed["method"],
                    json!("tools/call"),
                    "not an echo: {echoed}"
                );
            },
        )
    }

    fn timed(
        &mut self,
        method: &str,
        params: Value,
        n: usize,
        check: impl Fn(&Value),
    ) -> Vec<Duration> {
        let mut once = || {
            let started = Instant::now();
            let response = self.request(method, params.clone());
            let elapsed = started.elapsed();
            check(&response);
            elapsed
        };
        (0..n / 10).for_each(|_| {
            once();
        });
        (0..n).map(|_| once()).collect()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
