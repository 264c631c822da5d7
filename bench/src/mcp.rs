//! `tools/call` round trips over MCP stdio, with a bare newline-delimited
//! JSON-RPC client: no SDK on our side, so client overhead hides nothing.

use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::AsRawFd;
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Server {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
    /// How the client waits for an answer (see [`Wait`]).
    wait: Wait,
}

/// How the client waits for an answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wait {
    /// Asleep in `read`, as SDK clients wait. On a VM whose idle vCPUs
    /// halt, the answer must then wake the client's vCPU: a cost of the
    /// client's, which lands in the round trip.
    Sleep,
    /// Polling its pipe (and yielding, so a server on the same CPU still
    /// runs) for up to [`POLL_FOR`], as the server watches stdin between
    /// requests; then asleep as above. The round trip is then the server's
    /// time and the pipes', with no vCPU woken from halt on the client's side.
    Poll,
}

/// How long a polling client polls before it sleeps in `read`.
const POLL_FOR: Duration = Duration::from_millis(2);

/// What one round trip sends, and what its answer must look like.
#[derive(Clone, Copy, Debug)]
pub enum Exchange {
    /// `tools/call` of `calc`; the answer must be a success.
    CallCalc,
    /// `ping`: the server's JSON-RPC layer with no tool behind it.
    Ping,
    /// A `tools/call` line sent to `cat`, which must come back unchanged.
    Echo,
}

impl Exchange {
    fn request(self) -> (&'static str, Value) {
        match self {
            Exchange::CallCalc | Exchange::Echo => (
                "tools/call",
                json!({ "name": "calc", "arguments": { "op": "mul", "a": 6, "b": 7 } }),
            ),
            Exchange::Ping => ("ping", json!({})),
        }
    }

    fn check(self, answer: &Value) {
        match self {
            Exchange::CallCalc => assert_eq!(
                answer["result"]["isError"],
                json!(false),
                "the benchmarked call failed: {answer}"
            ),
            Exchange::Ping => assert!(answer.get("result").is_some(), "ping failed: {answer}"),
            Exchange::Echo => assert_eq!(
                answer["method"],
                json!("tools/call"),
                "not an echo: {answer}"
            ),
        }
    }
}

impl Server {
    /// Starts `toolwarden serve` and completes the `initialize` handshake.
    pub fn start(binary: &Path, plugins: &Path, workspace: &Path, state: &Path) -> Server {
        Server::start_command(serve_command(binary, plugins, workspace, state))
    }

    fn initialize(&mut self) {
        self.request(
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": { "name": "toolwarden-bench", "version": "0" },
            }),
        );
        self.send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
    }

    /// An MCP server started by `command` (the bare rmcp floor), after the
    /// same handshake.
    pub fn start_command(command: Command) -> Server {
        let mut server = Server::spawn(command);
        server.initialize();
        server
    }

    /// `cat`, which echoes each request line: the same client and pipes with
    /// no server work at all. Its round trip is the floor of row 7 (two
    /// cross-process wake-ups; the kernel keeps `cat` on the client's CPU).
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
            wait: Wait::Sleep,
        }
    }

    /// From now on, waits for answers this way.
    pub fn wait_by(&mut self, wait: Wait) {
        self.wait = wait;
    }

    /// With [`Wait::Poll`], returns once the answer's first bytes are
    /// there to read (or [`POLL_FOR`] has passed).
    fn poll_for_answer(&mut self) {
        if self.wait == Wait::Sleep || !self.stdout.buffer().is_empty() {
            return;
        }
        let mut ready = libc::pollfd {
            fd: self.stdout.get_ref().as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let started = Instant::now();
        while started.elapsed() < POLL_FOR {
            // SAFETY: one valid `pollfd`, a zero timeout.
            if unsafe { libc::poll(&mut ready, 1, 0) } != 0 {
                return;
            }
            // SAFETY: no arguments; lets a server on this CPU run.
            unsafe { libc::sched_yield() };
        }
    }

    fn send(&mut self, message: &Value) {
        self.send_line(&line(message));
    }

    fn send_line(&mut self, line: &str) {
        self.stdin.write_all(line.as_bytes()).expect("write");
        self.stdin.flush().expect("flush");
    }

    /// Sends a request and returns its response, skipping notifications.
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let (line, id) = self.request_line(method, &params);
        self.send_line(&line);
        self.answer(id).1
    }

    /// The next request as a line, and its id.
    fn request_line(&mut self, method: &str, params: &Value) -> (String, u64) {
        self.next_id += 1;
        let id = self.next_id;
        let request = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
        (line(&request), id)
    }

    /// Reads lines until the answer to `id`; returns when its last byte
    /// arrived, and the answer.
    fn answer(&mut self, id: u64) -> (Instant, Value) {
        let mut line = String::new();
        loop {
            line.clear();
            self.poll_for_answer();
            let read = self.stdout.read_line(&mut line).expect("read");
            let arrived = Instant::now();
            assert!(read > 0, "the server closed stdout");
            let message: Value = serde_json::from_str(&line).expect("JSON-RPC line");
            if message["id"] == json!(id) {
                return (arrived, message);
            }
        }
    }

    /// `n` sequential round trips of `exchange`, each timed from the
    /// request's first byte to the answer's last. The request line is
    /// written out before the clock starts and the answer parsed and checked
    /// after it stops, so the client's own JSON work is not counted.
    pub fn round_trips(&mut self, exchange: Exchange, n: usize) -> Vec<Duration> {
        let (method, params) = exchange.request();
        (0..n)
            .map(|_| {
                let (line, id) = self.request_line(method, &params);
                let started = Instant::now();
                self.send_line(&line);
                let (arrived, answer) = self.answer(id);
                exchange.check(&answer);
                arrived - started
            })
            .collect()
    }
}

impl Server {
    /// `n` `tools/call`s of `calc`, each sent `pause` after the previous
    /// answer arrived (a client that does some work of its own between
    /// calls).
    pub fn paced_calls(&mut self, n: usize, pause: Duration) {
        let (method, params) = Exchange::CallCalc.request();
        for _ in 0..n {
            let (line, id) = self.request_line(method, &params);
            self.send_line(&line);
            let (_, answer) = self.answer(id);
            Exchange::CallCalc.check(&answer);
            pause_for(pause);
        }
    }

    /// CPU time each of the server's threads has used so far, user and
    /// system, by thread id, with the thread's name: from
    /// `/proc/PID/task/TID/schedstat` (nanoseconds, where `stat` counts
    /// clock ticks of 10 ms).
    pub fn cpu_by_thread(&self) -> BTreeMap<u32, (String, Duration)> {
        let tasks = format!("/proc/{}/task", self.child.id());
        let Ok(entries) = std::fs::read_dir(&tasks) else {
            return BTreeMap::new();
        };
        entries
            .filter_map(Result::ok)
            .filter_map(|entry| {
                let tid: u32 = entry.file_name().to_str()?.parse().ok()?;
                let name = std::fs::read_to_string(entry.path().join("comm")).ok()?;
                let schedstat = std::fs::read_to_string(entry.path().join("schedstat")).ok()?;
                let ns: u64 = schedstat.split_whitespace().next()?.parse().ok()?;
                Some((tid, (name.trim().to_owned(), Duration::from_nanos(ns))))
            })
            .collect()
    }
}

/// The CPU each thread name used between two [`Server::cpu_by_thread`]
/// readings, added to `total`. A thread that ended between them is missed.
pub fn add_cpu_between(
    before: &BTreeMap<u32, (String, Duration)>,
    after: &BTreeMap<u32, (String, Duration)>,
    total: &mut BTreeMap<String, Duration>,
) {
    for (tid, (name, used)) in after {
        let earlier = before.get(tid).map_or(Duration::ZERO, |(_, d)| *d);
        *total.entry(name.clone()).or_default() += used.saturating_sub(earlier);
    }
}

/// Waits `pause` without sleeping in the kernel's timer slack: the client
/// keeps its CPU, as one doing its own work between calls would.
fn pause_for(pause: Duration) {
    let until = Instant::now() + pause;
    while Instant::now() < until {
        std::hint::spin_loop();
    }
}

/// `toolwarden serve` on these directories (see [`host_command`]).
pub fn serve_command(binary: &Path, plugins: &Path, workspace: &Path, state: &Path) -> Command {
    let mut command = host_command(binary, plugins, workspace, state);
    command.arg("serve");
    command
}

/// `toolwarden` on these directories, trusting its config, with nothing
/// from the caller's environment that would change what it loads.
pub fn host_command(binary: &Path, plugins: &Path, workspace: &Path, state: &Path) -> Command {
    let mut command = Command::new(binary);
    command
        .env("TOOLWARDEN_PLUGINS", plugins)
        .env("TOOLWARDEN_WORKSPACE", workspace)
        .env("TOOLWARDEN_STATE", state)
        .env("TOOLWARDEN_TRUST_CONFIG", "1")
        .env_remove("TOOLWARDEN_CONFIG")
        .env_remove("TOOLWARDEN_LOG");
    command
}

/// A message as one newline-terminated line.
fn line(message: &Value) -> String {
    let mut line = message.to_string();
    line.push('\n');
    line
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `f` with the calling thread (and so every process it starts) bound
/// to CPU 0, then lets it run anywhere again.
pub fn on_one_core<R>(f: impl FnOnce() -> R) -> R {
    let all = affinity();
    set_affinity(&[0]);
    let result = f();
    set_affinity(&all);
    result
}

/// The CPUs the calling thread may run on. Fails loudly rather than guess:
/// a wrong guess would leave every later row bound to one core unsaid.
fn affinity() -> Vec<usize> {
    // SAFETY: `set` is a plain bit set that the call fills in.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        let read = libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set);
        assert_eq!(read, 0, "cannot read the CPU affinity");
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&cpu| libc::CPU_ISSET(cpu, &set))
            .collect()
    }
}

fn set_affinity(cpus: &[usize]) {
    // SAFETY: `set` is a plain bit set filled here before the call reads it.
    let done = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &cpu in cpus {
            libc::CPU_SET(cpu, &mut set);
        }
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
    };
    assert_eq!(done, 0, "cannot set the CPU affinity to {cpus:?}");
}

/// `toolwarden serve --http` on a free loopback port, stopped when dropped.
pub struct HttpServer {
    pub address: String,
    process: Child,
}

impl HttpServer {
    pub fn start(plugins: &Path, workspace: &Path, state: &Path) -> HttpServer {
        let binary = std::env::current_exe()
            .expect("own path")
            .with_file_name("toolwarden");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free loopback port")
            .port();
        let address = format!("127.0.0.1:{port}");
        let process = serve_command(&binary, plugins, workspace, state)
            .args(["--http", &address])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start serve --http");
        let listening = Instant::now();
        while std::net::TcpStream::connect(&address).is_err() {
            assert!(
                listening.elapsed() < Duration::from_secs(20),
                "serve --http did not listen"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        HttpServer { address, process }
    }

    pub fn pid(&self) -> u32 {
        self.process.id()
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.process.kill();
        let _ = self.process.wait();
    }
}
