//! `toolwarden serve` speaks MCP over stdio: checked here with a bare
//! newline-delimited JSON-RPC client (the Python SDK tests in `tests/mcp`
//! cover the rest).

use crate::harness::TestHost;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Stdio};
use std::time::Duration;
use toolwarden_tests::{CALC, FS};

const ALLOW_CALC: &str = "[[rule]]\ntools = [\"calc\"]\ndecision = \"allow\"\nreason = \"ok\"\n";

/// `toolwarden serve` with stdin and stdout piped, as a client starts it.
fn serve_on_pipes(t: &TestHost) -> (Child, ChildStdin, BufReader<ChildStdout>) {
    let mut server = t
        .cli()
        .arg("serve")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdin = server.stdin.take().unwrap();
    let stdout = BufReader::new(server.stdout.take().unwrap());
    (server, stdin, stdout)
}

/// A bare client's `initialize` request, id 1.
fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
           "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bare", "version": "0"}}})
}

/// The notification a client sends once `initialize` is answered.
fn initialized() -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
}

/// The next message the server wrote; `None` once it closed stdout.
fn read_message(stdout: &mut impl BufRead) -> Option<Value> {
    let mut line = String::new();
    if stdout
        .read_line(&mut line)
        .expect("read the server's stdout")
        == 0
    {
        return None;
    }
    Some(
        serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout is not JSON-RPC ({e}): {line}")),
    )
}

/// The result `toolwarden serve` answers one request with, after the
/// handshake, over stdio.
pub(crate) fn request(t: &TestHost, method: &str, params: Value) -> Value {
    let (mut server, mut stdin, mut stdout) = serve_on_pipes(t);
    let mut receive = |id: u64| loop {
        let message = read_message(&mut stdout).expect("the server closed stdout");
        if message["id"] == id {
            return message;
        }
    };
    writeln!(stdin, "{}", initialize()).unwrap();
    receive(1);
    writeln!(stdin, "{}", initialized()).unwrap();
    let message = json!({"jsonrpc": "2.0", "id": 2, "method": method, "params": params});
    writeln!(stdin, "{message}").unwrap();
    let answer = receive(2);
    drop(stdin);
    server.wait().unwrap();
    answer["result"].clone()
}

/// What `tools/list` answers a bare stdio client.
pub(crate) fn list_tools(t: &TestHost) -> Vec<Value> {
    request(t, "tools/list", json!({}))["tools"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// What `tools/call` of `tool` with `arguments` answers a bare stdio client.
pub(crate) fn call_tool(t: &TestHost, tool: &str, arguments: Value) -> Value {
    request(
        t,
        "tools/call",
        json!({"name": tool, "arguments": arguments}),
    )
}

#[test]
fn serve_answers_initialize_list_and_call_over_stdio() {
    let t = TestHost::new(&[CALC, FS]).config(ALLOW_CALC);
    let (mut server, mut stdin, mut stdout) = serve_on_pipes(&t);
    let mut send = |message: Value| writeln!(stdin, "{message}").unwrap();
    let mut receive = |id: u64| loop {
        let message = read_message(&mut stdout).expect("the server closed stdout");
        if message["id"] == id {
            return message;
        }
    };
    send(initialize());
    assert_eq!(receive(1)["result"]["serverInfo"]["name"], "toolwarden");
    send(initialized());
    send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
    let tools = receive(2);
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["calc"], "denied tools are not listed");
    send(
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "calc", "arguments": {"op": "add", "a": 40, "b": 2}}}),
    );
    let result = receive(3)["result"].clone();
    assert_eq!(result["structuredContent"], json!({"result": 42}));
    assert_eq!(result["isError"], false);
    send(
        json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "read_file", "arguments": {"path": "x"}}}),
    );
    let denied = receive(4)["result"].clone();
    assert_eq!(denied["isError"], true);
    assert_eq!(denied["_meta"]["toolwarden"]["code"], "POLICY_DENIED");
    drop(stdin);
    assert!(
        server.wait().unwrap().success(),
        "serve exits cleanly when the client goes away"
    );
}

#[test]
fn serve_answers_on_stdout_redirected_to_a_file() {
    // stdin a pipe, stdout a file: the server must not half-switch to
    // non-blocking pipes (its reads then failed with EAGAIN and it stopped).
    let t = TestHost::new(&[CALC]).config(ALLOW_CALC);
    answers_on_stdout_redirected_to_a_file(&t, None);
    // The same with stdin a socket, as a Node client's would be: neither
    // may be made non-blocking while the other stays tokio's.
    answers_on_stdout_redirected_to_a_file(
        &t,
        Some(std::os::unix::net::UnixStream::pair().unwrap()),
    );
}

/// With `socket`, stdin is its second end and requests go to its first;
/// without, stdin is a pipe.
fn answers_on_stdout_redirected_to_a_file(
    t: &TestHost,
    socket: Option<(
        std::os::unix::net::UnixStream,
        std::os::unix::net::UnixStream,
    )>,
) {
    let (input, requests): (Stdio, Option<Box<dyn Write>>) = match socket {
        Some((ours, theirs)) => (
            Stdio::from(std::os::fd::OwnedFd::from(theirs)),
            Some(Box::new(ours)),
        ),
        None => (Stdio::piped(), None),
    };
    let out_path = t.workspace.join("answers.jsonl");
    let out = std::fs::File::create(&out_path).unwrap();
    let mut server = t
        .cli()
        .arg("serve")
        .stdin(input)
        .stdout(out)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = requests.unwrap_or_else(|| Box::new(server.stdin.take().unwrap()));
    // Let the server wait on an empty stdin first, as it does for a client
    // that takes its time.
    std::thread::sleep(std::time::Duration::from_millis(500));
    for message in [
        initialize(),
        initialized(),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "calc", "arguments": {"op": "add", "a": 1, "b": 2}}}),
    ] {
        writeln!(stdin, "{message}").unwrap();
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let answered = loop {
        let text = std::fs::read_to_string(&out_path).unwrap();
        let answer = text
            .lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .find(|m| m["id"] == 2);
        if answer.is_some() || std::time::Instant::now() > deadline {
            break answer;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    drop(stdin);
    let output = server.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let answer = answered.unwrap_or_else(|| panic!("no answer to the call; stderr: {stderr}"));
    assert_eq!(answer["result"]["structuredContent"], json!({"result": 3}));
    assert!(output.status.success(), "{stderr}");
}

#[test]
fn serve_refuses_a_public_http_address_without_a_token() {
    let t = TestHost::new(&[CALC]);
    let (code, _, stderr) = crate::harness::run_cli(t.cli().args(["serve", "--http", "0.0.0.0:0"]));
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("without a token") && stderr.contains("--token-file"),
        "{stderr}"
    );
}

#[test]
fn serve_reads_past_bad_lines_and_answers_what_follows() {
    let t = TestHost::new(&[CALC]).config(ALLOW_CALC);
    let (mut server, mut stdin, mut stdout) = serve_on_pipes(&t);
    let mut next = || read_message(&mut stdout).expect("the server closed stdout");
    writeln!(stdin, "{}", initialize()).unwrap();
    assert_eq!(next()["id"], 1);
    writeln!(stdin, "{}", initialized()).unwrap();
    // Not JSON, an empty line, a notification from another protocol, and a
    // line over the 16 MiB a message may take: all passed over in silence.
    let oversized = format!(
        "{{\"jsonrpc\":\"2.0\",\"pad\":\"{}\"}}",
        "x".repeat(17 << 20)
    );
    for line in [
        "this is not json",
        "",
        "{\"jsonrpc\":\"1.0\",\"method\":\"lsp/hover\"}",
        &oversized,
    ] {
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
    }
    // JSON that is no message: answered, with no id to answer to.
    writeln!(stdin, "{}", json!({"neither": "request nor notification"})).unwrap();
    let invalid = next();
    assert_eq!(invalid["error"]["code"], -32600, "{invalid}");
    assert_eq!(invalid["id"], Value::Null, "{invalid}");
    // A call after all that, its line ending in CR LF, is answered.
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "calc", "arguments": {"op": "mul", "a": 6, "b": 7}}});
    write!(stdin, "{call}\r\n").unwrap();
    let answer = next();
    assert_eq!(answer["id"], 2, "{answer}");
    assert_eq!(answer["result"]["structuredContent"], json!({"result": 42}));
    drop(stdin);
    assert!(server.wait().unwrap().success());
}

/// The connection's thread answers a call before it tears the call's
/// sandbox down, and does that before it waits for the next request. With a
/// single sandbox instance, every call after the first needs the previous
/// one's back: answered one by one, or all sent at once.
#[test]
fn serve_gives_each_sandbox_back_after_answering_even_with_one_instance() {
    let t = TestHost::new(&[CALC]).config(&format!("[limits]\nmax_instances = 1\n\n{ALLOW_CALC}"));
    let (mut server, mut stdin, mut stdout) = serve_on_pipes(&t);
    let (answers, received) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        while let Some(message) = read_message(&mut stdout) {
            if answers.send(message).is_err() {
                return;
            }
        }
    });
    let wait = Duration::from_secs(30);
    let next = || {
        received
            .recv_timeout(wait)
            .expect("no answer in 30 s: a call waits for a sandbox nobody gives back")
    };
    let call = |id: u64| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": "calc", "arguments": {"op": "mul", "a": id, "b": 2}}})
    };
    writeln!(stdin, "{}", initialize()).unwrap();
    assert_eq!(next()["id"], 1);
    writeln!(stdin, "{}", initialized()).unwrap();
    for id in 2..6 {
        writeln!(stdin, "{}", call(id)).unwrap();
        let answer = next();
        assert_eq!(answer["id"], id, "{answer}");
        assert_eq!(
            answer["result"]["structuredContent"],
            json!({"result": id * 2})
        );
    }
    let burst: String = (6..40).map(|id| format!("{}\n", call(id))).collect();
    stdin.write_all(burst.as_bytes()).unwrap();
    let mut ids: Vec<u64> = (6..40)
        .map(|_| {
            let answer = next();
            let id = answer["id"].as_u64().unwrap();
            assert_eq!(
                answer["result"]["structuredContent"],
                json!({"result": id * 2}),
                "{answer}"
            );
            id
        })
        .collect();
    ids.sort_unstable();
    assert_eq!(ids, (6..40).collect::<Vec<_>>());
    drop(stdin);
    assert!(server.wait().unwrap().success());
}

/// The threads of process `pid` by name.
fn thread_names(pid: u32) -> Vec<String> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
        .map(|name| name.trim().to_owned())
        .collect()
}

/// Node's `child_process` (so every client built on Node or Electron)
/// starts a server on a Unix socket pair per stream, not on pipes; some
/// launchers hand one socket for both. The server reads and writes them on
/// its reactor, as it does pipes: tokio's blocking stdio would hop to a
/// thread of its blocking pool (named `tokio-rt-worker`, as the
/// connection's runtime is unnamed) for every message.
#[test]
fn serve_waits_on_stdio_sockets_as_node_clients_start_it_on_its_reactor() {
    use std::os::unix::net::UnixStream;
    let t = TestHost::new(&[CALC]).config(ALLOW_CALC);
    for shared in [false, true] {
        let (ours_in, theirs_in) = UnixStream::pair().unwrap();
        let (ours_out, theirs_out) = if shared {
            (ours_in.try_clone().unwrap(), theirs_in.try_clone().unwrap())
        } else {
            UnixStream::pair().unwrap()
        };
        let mut server = t
            .cli()
            .arg("serve")
            .stdin(std::os::fd::OwnedFd::from(theirs_in))
            .stdout(std::os::fd::OwnedFd::from(theirs_out))
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut requests = &ours_in;
        let mut answers = BufReader::new(&ours_out);
        writeln!(requests, "{}", initialize()).unwrap();
        assert_eq!(read_message(&mut answers).unwrap()["id"], 1);
        writeln!(requests, "{}", initialized()).unwrap();
        for id in 2..12u64 {
            let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": "calc", "arguments": {"op": "add", "a": id, "b": 1}}});
            writeln!(requests, "{call}").unwrap();
            let answer = read_message(&mut answers).unwrap();
            assert_eq!(answer["id"], id, "{answer}");
            assert_eq!(
                answer["result"]["structuredContent"],
                json!({"result": id + 1})
            );
        }
        let threads = thread_names(server.id());
        assert!(
            !threads.iter().any(|name| name.starts_with("tokio-")),
            "stdio went through tokio's blocking pool (shared socket: {shared}): {threads:?}"
        );
        ours_in.shutdown(std::net::Shutdown::Write).unwrap();
        assert!(server.wait().unwrap().success(), "shared socket: {shared}");
    }
}
