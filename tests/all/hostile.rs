//! The hostile corpus: plugins and calls that try to break out, hang, hoard
//! or confuse the host. Each is contained: the right code, nothing outside
//! the grant touched, the host still serving. SECURITY.md lists every case
//! with its expected code and the test that proves it.

use crate::harness::{ALLOW_ALL, TestHost, assert_code, assert_still_serves, call};
use toolwarden::{Controller, ErrorCode, PluginError, SandboxMode, Status};
use toolwarden_tests::{
    CALC, FOREIGN_IMPORT, FS, HOSTILE, LYING_EFFECTS, LYING_KEYED, SPIN_AT_LOAD, SPIN_AT_START,
};

fn hostile_host(config: &str, sandbox: SandboxMode) -> (TestHost, std::sync::Arc<Controller>) {
    let t = TestHost::new(&[CALC, FS, HOSTILE])
        .config(&format!("{config}\n{ALLOW_ALL}"))
        .sandbox(sandbox);
    let host = t.controller();
    (t, host)
}

fn code_of(host: &Controller, tool: &str, args: serde_json::Value) -> Option<ErrorCode> {
    call(host, tool, &args.to_string()).code()
}

#[test]
fn loops_at_load_or_start_foreign_imports_and_lying_specs_are_refused_and_the_rest_load() {
    let t = TestHost::new(&[
        CALC,
        SPIN_AT_LOAD,
        SPIN_AT_START,
        FOREIGN_IMPORT,
        LYING_EFFECTS,
        LYING_KEYED,
    ]);
    let host = t.controller();
    let registry = host.registry();
    let failures = registry.failures();
    let by_file = |name: &str| {
        failures
            .iter()
            .find(|f| f.file().file_name().is_some_and(|n| n == name))
            .unwrap_or_else(|| panic!("{name} should fail to load: {failures:#?}"))
    };
    for looping in ["spin_at_load.wasm", "spin_at_start.wasm"] {
        let failure = by_file(looping);
        assert!(
            matches!(&failure.error(), PluginError::Describe(e) if e.code == ErrorCode::OutOfFuel || e.code == ErrorCode::Timeout),
            "{failure}"
        );
    }
    let foreign = by_file("foreign_import.wasm");
    assert!(
        matches!(&foreign.error(), PluginError::WrongWorld(m) if m.contains("evil:plugin/net")),
        "the error names the import: {foreign}"
    );
    let liar = by_file("lying_effects.wasm");
    assert!(
        matches!(&liar.error(), PluginError::Spec { tool, problem } if tool == "innocent_reader" && problem.contains("workspace-write")),
        "{liar}"
    );
    let keyed = by_file("lying_keyed.wasm").to_string();
    assert!(
        keyed.contains("`keyed-tools` names `transfer_funds`, which `tools()` does not declare"),
        "{keyed}"
    );
    assert_eq!(host.registry().tools().count(), 1, "calc still loads");
    assert_still_serves(&host);
}

#[test]
fn a_read_only_grant_refuses_every_kind_of_change() {
    let (t, host) = hostile_host("", SandboxMode::WorkspaceWrite);
    t.file("keep.txt", "original");
    let before = std::fs::metadata(t.workspace.join("keep.txt"))
        .unwrap()
        .modified()
        .unwrap();
    for (op, path) in [
        ("create", "/workspace/new.txt"),
        ("delete", "/workspace/keep.txt"),
        ("rename", "/workspace/keep.txt"),
        ("mkdir", "/workspace/newdir"),
        ("set_times", "/workspace/keep.txt"),
        ("hard_link", "/workspace/keep.txt"),
        ("symlink", "/workspace/link"),
    ] {
        let r = call(
            &host,
            "hostile_fs_op",
            &serde_json::json!({ "op": op, "path": path }).to_string(),
        );
        assert_eq!(r.code(), Some(ErrorCode::ToolFailed), "{op}: {r:#?}");
    }
    let mut names: Vec<String> = std::fs::read_dir(&t.workspace)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["keep.txt"]);
    let meta = std::fs::metadata(t.workspace.join("keep.txt")).unwrap();
    assert_eq!(meta.modified().unwrap(), before, "set-times was refused");
    assert_eq!(
        std::fs::read_to_string(t.workspace.join("keep.txt")).unwrap(),
        "original"
    );
    assert_still_serves(&host);
}

#[test]
fn workspace_write_cannot_link_or_rename_outside() {
    let (t, host) = hostile_host("", SandboxMode::WorkspaceWrite);
    let secret = t.root.path().join("secret.txt");
    std::fs::write(&secret, "top secret").unwrap();
    std::os::unix::fs::symlink(t.root.path(), t.workspace.join("link_dir")).unwrap();
    t.file("mine.txt", "mine");
    for (op, path, to) in [
        (
            "hard_link",
            "/workspace/link_dir/secret.txt",
            "/workspace/got.txt",
        ),
        (
            "hard_link",
            "/workspace/mine.txt",
            "/workspace/../planted.txt",
        ),
        ("hard_link", "/workspace/mine.txt", "/tmp/planted.txt"),
        ("rename", "/workspace/mine.txt", "/workspace/../moved.txt"),
        (
            "rename",
            "/workspace/link_dir/secret.txt",
            "/workspace/stolen.txt",
        ),
        ("create", "/workspace/link_dir/planted.txt", ""),
        ("mkdir", "/workspace/../newdir", ""),
    ] {
        let r = call(
            &host,
            "hostile_fs_op_rw",
            &serde_json::json!({ "op": op, "path": path, "to": to }).to_string(),
        );
        assert_eq!(
            r.code(),
            Some(ErrorCode::ToolFailed),
            "{op} {path} {to}: {r:#?}"
        );
    }
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), "top secret");
    for escaped in ["planted.txt", "moved.txt", "newdir"] {
        assert!(!t.root.path().join(escaped).exists(), "{escaped}");
    }
    assert!(!std::path::Path::new("/tmp/planted.txt").exists());
    assert!(t.workspace.join("mine.txt").exists());
    // Inside, the same operations work: the refusals are about where.
    let inside = call(
        &host,
        "hostile_fs_op_rw",
        r#"{"op":"rename","path":"/workspace/mine.txt","to":"/workspace/yours.txt"}"#,
    );
    assert_eq!(inside.status, Status::Ok, "{inside:#?}");
}

#[test]
fn a_symlink_loop_is_an_error_not_a_hang() {
    let (t, host) = hostile_host("", SandboxMode::ReadOnly);
    std::os::unix::fs::symlink("loop_b", t.workspace.join("loop_a")).unwrap();
    std::os::unix::fs::symlink("loop_a", t.workspace.join("loop_b")).unwrap();
    let guarded = code_of(&host, "read_file", serde_json::json!({ "path": "loop_a" }));
    assert!(
        matches!(
            guarded,
            Some(ErrorCode::GuardDenied | ErrorCode::ToolFailed)
        ),
        "{guarded:?}"
    );
    let raw = code_of(
        &host,
        "hostile_read_raw",
        serde_json::json!({ "path": "/workspace/loop_a" }),
    );
    assert_eq!(raw, Some(ErrorCode::ToolFailed));
    assert_still_serves(&host);
}

#[test]
fn descriptor_exhaustion_is_capped_per_call() {
    let (t, host) = hostile_host("", SandboxMode::ReadOnly);
    t.file("f.txt", "x");
    let few = call(
        &host,
        "hostile_open_many",
        r#"{"path":"/workspace/f.txt","n":100}"#,
    );
    assert_eq!(few.status, Status::Ok, "{few:#?}");
    let many = call(
        &host,
        "hostile_open_many",
        r#"{"path":"/workspace/f.txt","n":20000}"#,
    );
    assert!(
        matches!(
            many.code(),
            Some(ErrorCode::ToolFailed | ErrorCode::ToolCrashed)
        ),
        "{many:#?}"
    );
    // The handles died with the call: the next one opens as many again.
    let again = call(
        &host,
        "hostile_open_many",
        r#"{"path":"/workspace/f.txt","n":100}"#,
    );
    assert_eq!(again.status, Status::Ok, "{again:#?}");
}

#[test]
fn endless_stdout_and_stderr_end_at_the_deadline() {
    let (_t, host) = hostile_host("[limits]\ntimeout_ms = 300", SandboxMode::ReadOnly);
    let r = call(&host, "hostile_chatter", "{}");
    assert_code(&host, &r, ErrorCode::Timeout);
}

#[test]
fn output_that_is_not_utf8_or_not_json_is_refused() {
    let (_t, host) = hostile_host("", SandboxMode::ReadOnly);
    let not_utf8 = call(&host, "hostile_bad_utf8", "{}");
    assert!(
        matches!(
            not_utf8.code(),
            Some(ErrorCode::ToolCrashed | ErrorCode::InvalidToolOutput)
        ),
        "{not_utf8:#?}"
    );
    assert!(not_utf8.value.is_none());
    let not_json = call(&host, "hostile_not_json", "{}");
    assert_code(&host, &not_json, ErrorCode::InvalidToolOutput);
}

#[test]
fn a_giant_return_value_is_bounded_by_memory_and_output_limits() {
    let (_t, host) = hostile_host("", SandboxMode::ReadOnly);
    let r = call(&host, "hostile_big_output", r#"{"kb": 40000}"#);
    assert!(
        matches!(
            r.code(),
            Some(ErrorCode::OutputTooLarge | ErrorCode::MemoryLimit)
        ),
        "{r:#?}"
    );
    let bigger = call(&host, "hostile_big_output", r#"{"kb": 200000}"#);
    assert_code(&host, &bigger, ErrorCode::MemoryLimit);
}

#[test]
fn a_huge_read_ends_at_a_limit() {
    let (t, host) = hostile_host("[limits]\ntimeout_ms = 2000", SandboxMode::ReadOnly);
    let huge = std::fs::File::create(t.workspace.join("huge.bin")).unwrap();
    huge.set_len(4 << 30).unwrap();
    let r = call(
        &host,
        "hostile_read_raw",
        r#"{"path":"/workspace/huge.bin"}"#,
    );
    assert!(
        matches!(
            r.code(),
            Some(ErrorCode::MemoryLimit | ErrorCode::Timeout | ErrorCode::ToolFailed)
        ),
        "{r:#?}"
    );
    assert_still_serves(&host);
}

#[test]
fn hostile_arguments_are_refused_before_any_plugin_runs() {
    let (_t, host) = hostile_host("", SandboxMode::ReadOnly);
    let depth_bomb = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let enormous = format!(
        r#"{{"op":"add","a":1,"b":2,"pad":"{}"}}"#,
        "x".repeat(toolwarden::MAX_ARGS_BYTES)
    );
    for (args, code) in [
        ("not json", ErrorCode::InvalidArgs),
        ("", ErrorCode::InvalidArgs),
        ("[1,2]", ErrorCode::InvalidArgs),
        (depth_bomb.as_str(), ErrorCode::InvalidArgs),
        (enormous.as_str(), ErrorCode::InvalidArgs),
        (
            r#"{"op":"add","a":1,"b":2,"extra":true}"#,
            ErrorCode::InvalidArgs,
        ),
        (r#"{"op":"add","a":"1","b":2}"#, ErrorCode::InvalidArgs),
        (r#"{"op":"add","a":1.5,"b":2}"#, ErrorCode::InvalidArgs),
        (r#"{"op":"ad\u0000d","a":1,"b":2}"#, ErrorCode::InvalidArgs),
        (r#"{"op":"\ud800","a":1,"b":2}"#, ErrorCode::InvalidArgs),
        (r#"{"op":"add\u202e","a":1,"b":2}"#, ErrorCode::InvalidArgs),
    ] {
        let r = call(&host, "calc", args);
        assert_eq!(
            r.code(),
            Some(code),
            "{}: {r:#?}",
            args.chars().take(60).collect::<String>()
        );
    }
    // A duplicate key is read once, last one wins, and the plugin receives the
    // canonical form that was validated and judged: no parser differential.
    let duplicate = call(&host, "calc", r#"{"op":"add","a":1,"b":2,"a":3}"#);
    assert_eq!(duplicate.value, Some(serde_json::json!({ "result": 5 })));
    let unknown = call(&host, "calc\u{0}", "{}");
    assert_eq!(unknown.code(), Some(ErrorCode::UnknownTool));
    // Unicode that is valid stays data: the path guard judges it as a path.
    let emoji = call(&host, "read_file", r#"{"path":"😀/../../etc/passwd"}"#);
    assert_eq!(emoji.code(), Some(ErrorCode::GuardDenied), "{emoji:#?}");
    assert_still_serves(&host);
}

#[test]
fn the_network_is_closed_to_every_plugin() {
    use std::net::{TcpListener, UdpSocket};
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let datagrams = UdpSocket::bind(("127.0.0.1", port)).unwrap();
    listener.set_nonblocking(true).unwrap();
    datagrams.set_nonblocking(true).unwrap();
    for mode in [SandboxMode::ReadOnly, SandboxMode::WorkspaceWrite] {
        let (_t, host) = hostile_host("", mode);
        let r = call(&host, "hostile_net", &format!("{{\"port\":{port}}}"));
        let message = r
            .error
            .as_ref()
            .map(|e| e.message.clone())
            .unwrap_or_default();
        assert!(!message.contains("GOT THROUGH"), "{message}");
        assert!(message.starts_with("lookup: "), "{r:#?}");
        assert_code(&host, &r, ErrorCode::ToolFailed);
    }
    let accepted = listener.accept();
    assert!(
        matches!(&accepted, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "the listener saw a connection: {accepted:?}"
    );
    let mut buf = [0u8; 64];
    let received = datagrams.recv_from(&mut buf);
    assert!(
        matches!(&received, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "a datagram arrived: {received:?}"
    );
}

/// Empty lines cost nothing of the log's byte budget; each costs a line's
/// share of it, so a client that asked for log lines gets a bounded number.
#[test]
fn a_flood_of_empty_log_lines_is_cut_not_forwarded_whole() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};
    let (_t, host) = hostile_host("", SandboxMode::ReadOnly);
    let lines = Arc::new(AtomicUsize::new(0));
    let levels = Arc::new(Mutex::new(std::collections::BTreeSet::new()));
    let (counted, seen) = (Arc::clone(&lines), Arc::clone(&levels));
    let mut request = toolwarden::CallRequest::new("hostile_log_flood", r#"{"n":200000}"#);
    request.log = Some(toolwarden::LogSink::new(move |line| {
        counted.fetch_add(1, Ordering::Relaxed);
        seen.lock().unwrap().insert(line.level);
    }));
    let r = crate::harness::runtime().block_on(host.handle(request));
    assert_eq!(r.status, toolwarden::Status::Ok, "{r:#?}");
    assert_eq!(r.value.unwrap()["result"], 200_000);
    let lines = lines.load(Ordering::Relaxed);
    assert_eq!(lines, 1024, "64 KiB at 64 bytes a line");
    assert_eq!(
        *levels.lock().unwrap(),
        [toolwarden::LogLevel::Error].into(),
        "passed on at the level logged"
    );
    assert_still_serves(&host);
}

/// Regression for issue #17: every one of a plugin's progress reports
/// reached the client, growing the server by hundreds of MiB and holding
/// the answer up well past the deadline.
#[test]
fn a_flood_of_progress_reports_is_thinned_and_cut_not_forwarded_whole() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let (_t, host) = hostile_host("", SandboxMode::ReadOnly);
    let reports = Arc::new(AtomicUsize::new(0));
    let bytes = Arc::new(AtomicUsize::new(0));
    let (counted, measured) = (Arc::clone(&reports), Arc::clone(&bytes));
    let mut request = toolwarden::CallRequest::new("hostile_progress_flood", r#"{"n":200000}"#);
    request.progress = Some(toolwarden::ProgressSink::new(move |p| {
        counted.fetch_add(1, Ordering::Relaxed);
        measured.fetch_add(p.message.map_or(0, |m| m.len()), Ordering::Relaxed);
    }));
    let r = crate::harness::runtime().block_on(host.handle(request));
    assert_eq!(r.status, toolwarden::Status::Ok, "{r:#?}");
    assert_eq!(r.value.unwrap()["result"], 200_000);
    let reports = reports.load(Ordering::Relaxed);
    assert!(
        (1..=1_000).contains(&reports),
        "{reports} reports passed on"
    );
    assert!(
        bytes.load(Ordering::Relaxed) <= reports * 1024,
        "messages are cut"
    );
    assert_still_serves(&host);
}
