//! The audit log records every call and decision, redacts secrets, and
//! `audit verify` catches tampering with the database file.

use crate::harness::{TestHost, run_cli};
use serde_json::Value;
use std::sync::Arc;
use toolwarden::{CallRequest, ErrorCode, SandboxMode, Status, Verification};
use toolwarden_tests::{CALC, FS, HOSTILE};

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

fn kinds(t: &TestHost, call_id: &str) -> Vec<String> {
    let (code, stdout, _) = run_cli(t.cli().args(["audit", "--json", "--call", call_id]));
    assert_eq!(code, 0);
    json(&stdout)
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["kind"].as_str().unwrap().to_owned())
        .collect()
}

fn call_id(t: &TestHost, args: &[&str]) -> String {
    let (_, stdout, _) = run_cli(t.cli().arg("call").args(args).arg("--json"));
    json(&stdout)["call_id"].as_str().unwrap().to_owned()
}

const POLICY: &str = r#"
[audit]
redact_keys = ["content"]

[[rule]]
tools = ["calc", "read_file", "write_file", "hostile_sleep"]
decision = "allow"
reason = "ok"

[[rule]]
tools = ["list_dir"]
decision = "ask"
reason = "listing needs a look"

[[rule]]
tools = ["hostile_spin"]
decision = "deny"
reason = "never spin"
"#;

fn host() -> TestHost {
    TestHost::new(&[CALC, FS, HOSTILE])
        .config(POLICY)
        .sandbox(SandboxMode::WorkspaceWrite)
}

fn db(t: &TestHost) -> rusqlite::Connection {
    rusqlite::Connection::open(t.state.join(toolwarden::DB_FILE)).unwrap()
}

fn verify(t: &TestHost) -> (i32, String) {
    let (code, stdout, stderr) = run_cli(t.cli().args(["audit", "verify"]));
    (code, format!("{stdout}{stderr}"))
}

#[test]
fn every_call_and_decision_is_recorded() {
    let t = host();
    assert_eq!(
        kinds(&t, &call_id(&t, &["calc", r#"{"op":"add","a":1,"b":2}"#])),
        ["call", "policy", "outcome"]
    );
    let denied = call_id(&t, &["hostile_panic"]);
    assert_eq!(
        kinds(&t, &denied),
        ["call", "policy", "refused"],
        "denied by default"
    );
    let (_, stdout, _) = run_cli(t.cli().args(["audit", "--json", "--call", &denied]));
    let policy = &json(&stdout)[1]["data"];
    assert_eq!(policy["verdict"], "deny");
    assert_eq!(policy["matched_rules"], serde_json::json!([]));
    assert!(
        policy["reason"]
            .as_str()
            .unwrap()
            .contains("no policy rule matches")
    );
    let by_rule = call_id(&t, &["hostile_spin"]);
    let (_, stdout, _) = run_cli(t.cli().args(["audit", "--json", "--call", &by_rule]));
    let records = json(&stdout);
    assert_eq!(records[1]["kind"], "policy");
    assert_eq!(records[1]["data"]["verdict"], "deny");
    assert_eq!(records[1]["data"]["matched_rules"], serde_json::json!([3]));
    assert_eq!(records[2]["data"]["code"], "POLICY_DENIED");
    assert_eq!(
        kinds(&t, &call_id(&t, &["calc", r#"{"op":"add"}"#])),
        ["call", "refused"],
        "invalid arguments"
    );
    assert_eq!(
        kinds(&t, &call_id(&t, &["list_dir", r#"{"path":"."}"#])),
        ["call", "policy", "approval_asked", "refused"]
    );
    assert_eq!(
        kinds(&t, &call_id(&t, &["read_file", r#"{"path":"../x"}"#])),
        ["call", "policy", "refused"],
        "guard"
    );
    let id = call_id(&t, &["calc", r#"{"op":"div","a":1,"b":0}"#]);
    let (_, stdout, _) = run_cli(t.cli().args(["audit", "--json", "--call", &id]));
    let records = json(&stdout);
    let outcome = &records[2]["data"];
    assert_eq!(outcome["status"], "error");
    assert_eq!(outcome["code"], "TOOL_FAILED");
    assert!(outcome["fuel_used"].as_u64().unwrap() > 0);
    assert_eq!(records[1]["data"]["verdict"], "allow");
    assert_eq!(records[1]["data"]["matched_rules"], serde_json::json!([1]));
    let (_, stdout, _) = run_cli(t.cli().args(["audit", "--tool", "calc"]));
    assert!(
        stdout.lines().count() >= 8 && stdout.contains("outcome"),
        "{stdout}"
    );
    assert_eq!(verify(&t).0, 0);
}

#[test]
fn secrets_are_redacted_in_arguments_and_outputs() {
    let t = host();
    t.file("secret.txt", "hunter2");
    let write = call_id(
        &t,
        &["write_file", r#"{"path":"w.txt","content":"hunter2"}"#],
    );
    let read = call_id(&t, &["read_file", r#"{"path":"secret.txt"}"#]);
    for id in [write, read] {
        let (_, stdout, _) = run_cli(t.cli().args(["audit", "--json", "--call", &id]));
        assert!(!stdout.contains("hunter2"), "{stdout}");
        assert!(stdout.contains("[REDACTED]"), "{stdout}");
    }
}

#[test]
fn verify_names_the_first_altered_removed_or_reordered_record() {
    let t = host();
    if t.is_shared() {
        return; // edits toolwarden.db itself; test_shared_store.py attacks the shared chain
    }
    for n in 0..4 {
        call_id(&t, &["calc", &format!(r#"{{"op":"add","a":{n},"b":1}}"#)]);
    }
    let (code, out) = verify(&t);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("12 records"), "{out}");

    // The WAL must be folded into the main file for a copy to be complete.
    db(&t)
        .execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
        .unwrap();
    let pristine = std::fs::read(t.state.join(toolwarden::DB_FILE)).unwrap();
    let restore = |t: &TestHost| {
        let _ = std::fs::remove_file(t.state.join(format!("{}-wal", toolwarden::DB_FILE)));
        let _ = std::fs::remove_file(t.state.join(format!("{}-shm", toolwarden::DB_FILE)));
        std::fs::write(t.state.join(toolwarden::DB_FILE), &pristine).unwrap();
        assert_eq!(verify(t).0, 0);
    };

    db(&t)
        .execute(
            "UPDATE audit SET data = replace(data, '\"allow\"', '\"deny\"') WHERE seq = 5",
            [],
        )
        .unwrap();
    let (code, out) = verify(&t);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("record 5") && out.contains("altered"), "{out}");
    restore(&t);

    db(&t)
        .execute("DELETE FROM audit WHERE seq = 7", [])
        .unwrap();
    let (code, out) = verify(&t);
    assert_eq!(code, 1);
    assert!(out.contains("record 8"), "{out}");
    restore(&t);

    db(&t)
        .execute_batch("UPDATE audit SET seq = 100 WHERE seq = 3; UPDATE audit SET seq = 3 WHERE seq = 4; UPDATE audit SET seq = 4 WHERE seq = 100;")
        .unwrap();
    let (code, out) = verify(&t);
    assert_eq!(code, 1);
    assert!(out.contains("record 3"), "{out}");
}

/// Regression for issue #17: the chain alone could not show records cut off
/// its end.
#[test]
fn verify_names_records_cut_off_the_end_and_head_prints_the_anchor() {
    let t = host();
    if t.is_shared() {
        return; // edits toolwarden.db itself; test_shared_store.py attacks the shared chain
    }
    let (_, stdout, _) = run_cli(t.cli().args(["audit", "head", "--json"]));
    assert_eq!(json(&stdout), Value::Null, "nothing recorded yet");
    for n in 0..3 {
        call_id(&t, &["calc", &format!(r#"{{"op":"add","a":{n},"b":1}}"#)]);
    }
    let (code, stdout, stderr) = run_cli(t.cli().args(["audit", "head", "--json"]));
    assert_eq!(code, 0, "{stderr}");
    let head = json(&stdout);
    assert_eq!(head["records"], 9);
    let (_, stdout, _) = run_cli(t.cli().args(["audit", "--json"]));
    assert_eq!(
        head["hash"],
        json(&stdout)[8]["hash"],
        "the head is the last record's hash"
    );
    let (code, out) = verify(&t);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("9 records") && out.contains("its head matches"),
        "{out}"
    );

    db(&t)
        .execute("DELETE FROM audit WHERE seq > 7", [])
        .unwrap();
    let (code, out) = verify(&t);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("record 8") && out.contains("the last 2 were cut off the end"),
        "{out}"
    );

    // A head that names a record by another hash: the chain was rewritten.
    let forged = serde_json::json!({ "records": 7, "hash": "0".repeat(64) });
    std::fs::write(t.state.join(toolwarden::HEAD_FILE), forged.to_string()).unwrap();
    let (code, out) = verify(&t);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("record 7") && out.contains("rewritten"),
        "{out}"
    );

    std::fs::write(t.state.join(toolwarden::HEAD_FILE), "not a head").unwrap();
    let (code, out) = verify(&t);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("damaged or replaced"), "{out}");
}

#[test]
fn sigkill_mid_call_keeps_approvals_and_a_chain_that_verifies() {
    let t = host();
    if t.is_shared() {
        return; // reads toolwarden.db itself; test_shared_store.py attacks the shared chain
    }
    let (_, stdout, _) = run_cli(
        t.cli()
            .args(["call", "list_dir", r#"{"path":"."}"#, "--json"]),
    );
    let id = json(&stdout)["approval_id"].as_str().unwrap().to_owned();
    let (code, _, _) = run_cli(t.cli().args(["approvals", "approve", &id]));
    assert_eq!(code, 0);
    for round in 0..3 {
        let mut child = t
            .cli()
            .args(["call", "hostile_sleep", r#"{"ms":30000}"#])
            .spawn()
            .unwrap();
        // Wait until the call's trail before execution is committed, then kill.
        let started = std::time::Instant::now();
        loop {
            let policies: i64 = db(&t)
                .query_row(
                    "SELECT count(*) FROM audit WHERE tool = 'hostile_sleep' AND kind = 'policy'",
                    [],
                    |r| r.get(0),
                )
                .unwrap();
            if policies > round {
                break;
            }
            assert!(started.elapsed().as_secs() < 30, "the call never started");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        child.kill().unwrap();
        child.wait().unwrap();
        call_id(&t, &["calc", r#"{"op":"add","a":1,"b":1}"#]);
    }
    let (code, out) = verify(&t);
    assert_eq!(code, 0, "{out}");
    let (_, stdout, _) = run_cli(t.cli().args(["approvals", "show", &id, "--json"]));
    assert_eq!(
        json(&stdout)["state"],
        "approved",
        "a committed approval survives"
    );
    let (code, r) = {
        let (code, stdout, _) = run_cli(t.cli().args([
            "call",
            "list_dir",
            r#"{"path":"."}"#,
            "--approval",
            &id,
            "--json",
        ]));
        (code, json(&stdout))
    };
    assert_eq!(code, 0, "{r}");
}

#[test]
fn audit_filters_by_time_and_refuses_a_time_it_cannot_read() {
    let t = host();
    call_id(&t, &["calc", r#"{"op":"add","a":1,"b":2}"#]);
    let count = |since: &str| {
        let (code, stdout, stderr) = run_cli(t.cli().args(["audit", "--json", "--since", since]));
        assert_eq!(code, 0, "{stderr}");
        json(&stdout).as_array().unwrap().len()
    };
    assert_eq!(count("1h"), 3);
    assert_eq!(count("0"), 3, "milliseconds since the epoch");
    let in_an_hour = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis()
        + 3_600_000;
    assert_eq!(count(&in_an_hour.to_string()), 0);
    let (code, _, stderr) = run_cli(t.cli().args(["audit", "--since", "yesterday"]));
    assert_eq!(code, 2);
    assert!(
        stderr.contains("--since yesterday") && stderr.contains("hint:"),
        "{stderr}"
    );
}

fn rows_of(t: &TestHost, call_id: &str) -> i64 {
    db(t)
        .query_row(
            "SELECT count(*) FROM audit WHERE call_id = ?1",
            [call_id],
            |r| r.get(0),
        )
        .unwrap()
}

#[test]
fn sync_durability_commits_before_the_call_returns_and_batched_by_drop() {
    use crate::harness::call;
    let sync = TestHost::new(&[CALC]).config(&format!(
        "[audit]\ndurability = \"sync\"\n\n{}",
        crate::harness::ALLOW_ALL
    ));
    if sync.is_shared() {
        return; // reads toolwarden.db itself; test_shared_store.py kills a host in sync mode
    }
    let host = sync.controller();
    let r = call(&host, "calc", r#"{"op":"add","a":1,"b":2}"#);
    // Another connection sees the whole trail while the host still runs.
    assert_eq!(rows_of(&sync, &r.call_id), 3, "call, policy, outcome");

    let batched = TestHost::new(&[CALC]);
    let host = batched.controller();
    let ids: Vec<String> = (0..50)
        .map(|n| call(&host, "calc", &format!(r#"{{"op":"add","a":{n},"b":2}}"#)).call_id)
        .collect();
    drop(host);
    for id in &ids {
        assert_eq!(
            rows_of(&batched, id),
            3,
            "an orderly stop commits the queue"
        );
    }
    let (code, out) = verify(&batched);
    assert_eq!(code, 0, "{out}");
}

#[test]
fn the_batch_window_is_a_setting_the_writer_keeps() {
    use crate::harness::call;
    let slow = TestHost::new(&[CALC]).config(&format!(
        "[audit]\nbatch_window_ms = 1000\n\n{}",
        crate::harness::ALLOW_ALL
    ));
    if slow.is_shared() {
        return; // reads toolwarden.db itself
    }
    let host = slow.controller();
    let r = call(&host, "calc", r#"{"op":"add","a":1,"b":2}"#);
    let answered = std::time::Instant::now();
    let seen_at_once = rows_of(&slow, &r.call_id);
    // A test thread held up for most of the window proves nothing either way.
    if answered.elapsed() < std::time::Duration::from_millis(500) {
        assert_eq!(seen_at_once, 0, "committed before its window ended");
    }
    let deadline = answered + std::time::Duration::from_secs(10);
    while rows_of(&slow, &r.call_id) < 3 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(
        rows_of(&slow, &r.call_id),
        3,
        "the window's batch is committed"
    );

    for (config, said) in [
        ("[audit]\nbatch_window_ms = 0\n", "between 1 and 1000"),
        ("[audit]\nbatch_window_ms = 5000\n", "between 1 and 1000"),
        (
            "[audit]\ndurability = \"sync\"\nbatch_window_ms = 5\n",
            "remove `batch_window_ms`",
        ),
    ] {
        let t = TestHost::new(&[CALC]).config(config);
        let (code, _, stderr) = run_cli(t.cli().arg("list"));
        assert_eq!(code, 2, "{config}");
        assert!(stderr.contains(said), "{config}: {stderr}");
    }
}

#[test]
fn the_head_catches_up_with_batched_commits_while_the_host_runs() {
    use crate::harness::call;
    let t = TestHost::new(&[CALC]).config(crate::harness::ALLOW_ALL);
    let host = t.controller();
    for n in 0..20 {
        call(&host, "calc", &format!(r#"{{"op":"add","a":{n},"b":2}}"#));
    }
    // Spaced out, the head still follows once the writer falls idle: a
    // host that stays up is not left with a head that lags for ever.
    let head = || {
        std::fs::read(t.state.join(toolwarden::HEAD_FILE))
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
            .and_then(|h| h["records"].as_i64())
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while head() != Some(60) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(head(), Some(60), "20 calls of 3 records each");
    let (code, out) = verify(&t);
    assert_eq!(code, 0, "{out}");
    drop(host);
}

#[test]
fn an_unknown_durability_is_a_config_error_with_its_line() {
    let t = TestHost::new(&[CALC]).config("[audit]\ndurability = \"eventually\"\n");
    let (code, _, stderr) = run_cli(t.cli().arg("list"));
    assert_eq!(code, 2);
    assert!(
        stderr.contains("line 2") && stderr.contains("sync") && stderr.contains("batched"),
        "{stderr}"
    );
}

#[test]
fn a_burst_beyond_the_writers_queue_is_recorded_whole() {
    // More jobs than the audit writer's queue holds (16,384; two per call),
    // from eight tasks at once: with callers waiting for room whenever it is
    // full, every record still lands, in one intact chain.
    const CALLS: usize = 12_000;
    const TASKS: usize = 8;
    let t = TestHost::new(&[CALC]).config(&format!(
        "[budget]\nallow_duplicate_calls = true\n\n{}",
        crate::harness::ALLOW_ALL
    ));
    let host = Arc::new(t.controller());
    let before = match host.records().verify().unwrap() {
        Verification::Intact { records, .. } => records,
        broken => panic!("{broken:?}"),
    };
    crate::harness::runtime().block_on(async {
        let tasks: Vec<_> = (0..TASKS)
            .map(|task| {
                let host = Arc::clone(&host);
                tokio::spawn(async move {
                    for i in (task..CALLS).step_by(TASKS) {
                        let args = format!(r#"{{"op":"add","a":{i},"b":1}}"#);
                        let r = host.handle(CallRequest::new("calc", args)).await;
                        assert_eq!(r.status, Status::Ok, "{r:?}");
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
    });
    match host.records().verify().unwrap() {
        Verification::Intact { records, .. } => assert_eq!(records - before, 3 * CALLS as i64),
        broken => panic!("{broken:?}"),
    }
}

#[test]
fn stats_count_a_known_sequence_of_calls() {
    let t = host();
    {
        let host = t.controller();
        let in_session = |tool: &str, args: &str| {
            let mut request = toolwarden::CallRequest::new(tool, args);
            request.session = toolwarden::SessionId::from("s1".to_owned());
            crate::harness::runtime().block_on(host.handle(request))
        };
        for _ in 0..3 {
            assert_eq!(
                in_session("calc", r#"{"op":"add","a":1,"b":2}"#).status,
                Status::Ok
            );
        }
        assert_eq!(
            in_session("calc", r#"{"op":"add"}"#).code(),
            Some(ErrorCode::InvalidArgs)
        );
        assert_eq!(
            in_session("list_dir", r#"{"path":"."}"#).status,
            Status::PendingApproval
        );
        assert_eq!(
            in_session("hostile_spin", "{}").code(),
            Some(ErrorCode::PolicyDenied)
        );
    }
    let (code, stdout, stderr) = run_cli(t.cli().args(["audit", "stats", "--json"]));
    assert_eq!(code, 0, "{stderr}");
    let stats = json(&stdout);
    let calc = &stats["tools"]["calc"];
    assert_eq!(calc["calls"], 4);
    assert_eq!(
        calc["outcomes"],
        serde_json::json!({ "ok": 3, "INVALID_ARGS": 1 })
    );
    assert_eq!(calc["rates"]["ok"], 0.75);
    assert!(calc["duration_us"]["p50"].as_u64().unwrap() > 0, "{calc}");
    assert!(calc["fuel"]["p99"].as_u64().unwrap() >= calc["fuel"]["p50"].as_u64().unwrap());
    let listing = &stats["tools"]["list_dir"];
    assert_eq!(listing["approvals"]["asked"], 1);
    assert_eq!(
        listing["outcomes"],
        serde_json::json!({ "APPROVAL_REQUIRED": 1 })
    );
    assert_eq!(
        stats["tools"]["hostile_spin"]["outcomes"]["POLICY_DENIED"],
        1
    );
    assert_eq!(stats["sessions"]["s1"]["longest_repeat"], 3);

    let (_, stdout, _) = run_cli(t.cli().args(["audit", "stats", "--json", "--tool", "calc"]));
    let tools: Vec<String> = json(&stdout)["tools"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    assert_eq!(tools, ["calc"]);
    let (code, stdout, _) = run_cli(t.cli().args(["audit", "stats"]));
    assert_eq!(code, 0);
    let calc_line = stdout
        .lines()
        .find(|l| l.starts_with("calc "))
        .unwrap_or_default();
    assert!(
        calc_line.contains("75.0%") && calc_line.contains("INVALID_ARGS 1"),
        "{stdout}"
    );
    assert!(
        stdout.contains("the same call 3 times in a row"),
        "{stdout}"
    );
    let (code, _, stderr) = run_cli(t.cli().args(["audit", "stats", "--since", "yesterday"]));
    assert_eq!(code, 2, "{stderr}");
}

#[test]
fn stats_count_model_turns_and_calls_per_turn() {
    let t = host();
    let add = |id: &str, a: u32| {
        format!(
            r#"{{"id":"{id}","type":"function","function":{{"name":"calc","arguments":"{{\"op\":\"add\",\"a\":{a},\"b\":1}}"}}}}"#
        )
    };
    let turns = [
        format!("[{},{},{}]", add("c1", 1), add("c2", 2), add("c3", 3)),
        format!("[{}]", add("c4", 4)),
    ];
    for turn in &turns {
        let (code, _, stderr) = crate::harness::run_cli_with_stdin(
            t.cli().args(["turn", "-", "--session", "agent"]),
            turn.as_bytes(),
        );
        assert_eq!(code, 0, "{stderr}");
    }
    // A call on its own belongs to no turn.
    let (code, _, _) = run_cli(t.cli().args([
        "call",
        "calc",
        r#"{"op":"add","a":9,"b":1}"#,
        "--session",
        "agent",
    ]));
    assert_eq!(code, 0);
    let (_, stdout, _) = run_cli(t.cli().args(["audit", "stats", "--json"]));
    let session = &json(&stdout)["sessions"]["agent"];
    assert_eq!(session["calls"], 5, "{session}");
    assert_eq!(session["turns"], 2, "{session}");
    assert_eq!(session["calls_per_turn"], 2.0, "{session}");
    let (_, stdout, _) = run_cli(t.cli().args(["audit", "stats"]));
    assert!(
        stdout.contains("model turns: 2, 2.00 calls per turn"),
        "{stdout}"
    );
}

fn export(t: &TestHost, args: &[&str]) -> (i32, String) {
    let (code, stdout, stderr) = run_cli(t.cli().args(["audit", "export"]).args(args));
    (code, format!("{stdout}{stderr}"))
}

fn verify_file(t: &TestHost, file: &std::path::Path) -> (i32, Value) {
    let (code, stdout, stderr) = run_cli(
        t.cli()
            .args(["audit", "verify", "--json", "--file"])
            .arg(file),
    );
    assert!(!stdout.is_empty(), "{stderr}");
    (code, json(&stdout))
}

#[test]
fn export_moves_old_records_into_a_file_that_verifies_alone_and_the_rest_still_verifies() {
    let t = host();
    if t.is_shared() {
        return; // reads toolwarden.db itself; test_shared_store.py attacks the shared chain
    }
    for n in 0..5 {
        call_id(&t, &["calc", &format!(r#"{{"op":"add","a":{n},"b":1}}"#)]);
    }
    let first = t.root.path().join("first.jsonl");

    // A pipe cannot be synced: nothing leaves the database.
    let (code, out) = export(&t, &["--keep", "4"]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("standard output is not a file"), "{out}");
    let (code, out) = export(&t, &["--before", "1h", "--output", first.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("nothing was exported"), "{out}");
    assert!(!first.exists());
    assert!(verify(&t).1.contains("15 records"));

    // Redirected to a file, as `> first.jsonl` does.
    let ran = t
        .cli()
        .args(["audit", "export", "--keep", "4"])
        .stdout(std::fs::File::create(&first).unwrap())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&ran.stderr);
    assert!(ran.status.success(), "{stderr}");
    assert!(stderr.contains("exported records 1 to 11 (11)"), "{stderr}");
    let (code, segment) = verify_file(&t, &first);
    assert_eq!(code, 0, "{segment:#}");
    assert_eq!(segment["status"], "intact");
    assert_eq!(
        (segment["first_seq"].clone(), segment["last_seq"].clone()),
        (1.into(), 11.into())
    );
    assert_eq!(segment["prev_hash"], "0".repeat(64));

    let (code, out) = verify(&t);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("5 records (records up to 11 were exported or pruned"),
        "4 kept and the record of the cut: {out}"
    );
    assert!(out.contains("its head matches"), "{out}");
    let (_, stdout, _) = run_cli(t.cli().args(["audit", "--json"]));
    let left = json(&stdout);
    assert_eq!(left[0]["seq"], 12);
    let cut = left.as_array().unwrap().last().unwrap();
    assert_eq!(cut["kind"], "cut");
    assert_eq!(cut["data"]["through_seq"], 11);
    assert_eq!(cut["data"]["through_hash"], segment["last_hash"]);

    // The log goes on; a second export hangs on the first.
    call_id(&t, &["calc", r#"{"op":"add","a":9,"b":9}"#]);
    let second = t.root.path().join("second.jsonl");
    let (code, out) = export(&t, &["--keep", "0", "-o", second.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    let (code, next) = verify_file(&t, &second);
    assert_eq!(code, 0, "{next:#}");
    assert_eq!(next["first_seq"], 12);
    assert_eq!(next["prev_hash"], segment["last_hash"]);
    let (code, out) = verify(&t);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("1 records (records up to 19"),
        "only the cut's record: {out}"
    );
    call_id(&t, &["calc", r#"{"op":"add","a":1,"b":1}"#]);
    assert_eq!(verify(&t).0, 0);
    let (code, out) = export(&t, &["--keep", "0", "-o", second.to_str().unwrap()]);
    assert_eq!(code, 2, "an export never overwrites a file: {out}");

    // A segment altered or cut short fails on its own.
    let text = std::fs::read_to_string(&first).unwrap();
    let altered = t.root.path().join("altered.jsonl");
    std::fs::write(&altered, text.replacen("\\\"b\\\":1", "\\\"b\\\":2", 1)).unwrap();
    assert_ne!(text, std::fs::read_to_string(&altered).unwrap());
    let (code, check) = verify_file(&t, &altered);
    assert_eq!(code, 1, "{check:#}");
    assert!(
        check["problem"].as_str().unwrap().contains("altered"),
        "{check:#}"
    );
    let short: Vec<&str> = text.lines().collect();
    std::fs::write(&altered, short[..short.len() - 1].join("\n")).unwrap();
    let (code, check) = verify_file(&t, &altered);
    assert_eq!(code, 1, "{check:#}");
    assert!(
        check["problem"].as_str().unwrap().contains("cut short"),
        "{check:#}"
    );

    // Records removed with the record of the cut, the checkpoint moved to
    // hide the gap: the missing record of the cut shows.
    db(&t)
        .execute_batch(
            "DELETE FROM audit WHERE kind = 'cut'; \
             UPDATE audit_checkpoint SET seq = (SELECT min(seq) FROM audit), \
               hash = (SELECT hash FROM audit ORDER BY seq LIMIT 1); \
             DELETE FROM audit WHERE seq = (SELECT seq FROM audit_checkpoint);",
        )
        .unwrap();
    let (code, out) = verify(&t);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("no record in it says it was cut there"),
        "{out}"
    );
}

#[test]
fn retention_keeps_the_newest_records_and_archives_the_rest_in_segments_that_chain() {
    let t = TestHost::new(&[CALC]).config(&format!(
        "{POLICY}\n[audit.retention]\nmax_records = 6\narchive_dir = \"archive\"\n"
    ));
    for n in 0..8 {
        call_id(&t, &["calc", &format!(r#"{{"op":"add","a":{n},"b":1}}"#)]);
    }
    // Each host that starts runs a pass; `list` starts one that calls nothing.
    let (code, _, stderr) = run_cli(t.cli().args(["list"]));
    assert_eq!(code, 0, "{stderr}");
    let (code, stdout, _) = run_cli(t.cli().args(["audit", "verify", "--json"]));
    assert_eq!(code, 0, "{stdout}");
    let verified = json(&stdout);
    let cut = verified["cut_through"].as_i64().expect("records were cut");
    let kept = verified["records"].as_i64().unwrap();
    assert!(
        kept <= 6 + 1 + 3,
        "at most the limit, the cut's record and one call: {kept}"
    );

    let mut segments: Vec<Value> = std::fs::read_dir(t.state.join("archive"))
        .unwrap()
        .map(|entry| {
            let path = entry.unwrap().path();
            let (code, segment) = verify_file(&t, &path);
            assert_eq!(code, 0, "{}: {segment:#}", path.display());
            let named = format!(
                "audit-{:012}-{:012}.jsonl",
                segment["first_seq"].as_i64().unwrap(),
                segment["last_seq"].as_i64().unwrap()
            );
            assert_eq!(path.file_name().unwrap().to_str(), Some(named.as_str()));
            segment
        })
        .collect();
    segments.sort_by_key(|s| s["first_seq"].as_i64());
    assert!(segments.len() >= 2, "{segments:#?}");
    assert_eq!(segments[0]["first_seq"], 1);
    assert_eq!(segments[0]["prev_hash"], "0".repeat(64));
    for pair in segments.windows(2) {
        assert_eq!(
            pair[1]["prev_hash"], pair[0]["last_hash"],
            "one chain: {pair:#?}"
        );
        assert_eq!(
            pair[1]["first_seq"].as_i64(),
            pair[0]["last_seq"].as_i64().map(|s| s + 1)
        );
    }
    assert_eq!(segments.last().unwrap()["last_seq"], cut);
    assert_eq!(
        cut + kept,
        24 + segments.len() as i64,
        "nothing lost: every record is kept or archived (and each cut recorded)"
    );
}

#[test]
fn a_running_host_drops_records_past_their_age_and_the_rest_verifies() {
    let t = TestHost::new(&[CALC]).config(&format!(
        "{POLICY}\n[audit.retention]\nmax_age = \"1s\"\ninterval = \"1s\"\n"
    ));
    let host = t.controller();
    let ran = crate::harness::runtime()
        .block_on(host.handle(CallRequest::new("calc", r#"{"op":"add","a":1,"b":2}"#)));
    assert_eq!(ran.status, Status::Ok);
    crate::harness::outcome_of(&host, ran.call_id.as_str());
    let until = std::time::Instant::now() + std::time::Duration::from_secs(15);
    loop {
        let left = crate::harness::audit(&host, ran.call_id.as_str());
        if left.is_empty() {
            break;
        }
        assert!(
            std::time::Instant::now() < until,
            "never dropped: {left:#?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    match host.records().verify().unwrap() {
        Verification::Intact { cut_through, .. } => assert!(cut_through >= Some(3)),
        broken => panic!("{broken:?}"),
    }
    drop(host);
    assert_eq!(verify(&t).0, 0);
}

#[test]
fn retention_settings_that_cannot_work_are_config_errors() {
    for (table, expected) in [
        ("max_records = 0", "would keep nothing"),
        ("max_age = \"soon\"", "is not a duration"),
        (
            "archive_dir = \"../workspace/audit\"",
            "the audit archive `",
        ),
    ] {
        let t = TestHost::new(&[CALC]).config(&format!(
            "{POLICY}\n[audit.retention]\ninterval = \"60s\"\n{table}\n"
        ));
        let (code, _, stderr) = run_cli(t.cli().args(["list"]));
        assert_eq!(code, 2, "{table}: {stderr}");
        assert!(stderr.contains(expected), "{table}: {stderr}");
        assert!(
            !t.workspace.join("audit").exists(),
            "a refused archive is not left in the workspace"
        );
    }
}

#[test]
fn a_record_the_database_refuses_for_good_is_replaced_and_the_host_goes_on() {
    let t = TestHost::new(&[CALC]).config(crate::harness::ALLOW_ALL);
    if t.is_shared() {
        // The refusal is made with a SQLite trigger; PostgreSQL's (a NUL in
        // text) is test_shared_store.py's.
        return;
    }
    let host = t.controller();
    // A database that will never take one record (as PostgreSQL's text
    // never takes a NUL): retried as it was, it failed every commit after
    // it, and the host refused every later call.
    rusqlite::Connection::open(t.state.join("toolwarden.db"))
        .unwrap()
        .execute_batch(
            "CREATE TRIGGER refuse_it BEFORE INSERT ON audit WHEN NEW.data LIKE '%\"a\":666%' \
             BEGIN SELECT RAISE(ABORT, 'this record is not wanted'); END;",
        )
        .unwrap();
    let refused = crate::harness::call(&host, "calc", r#"{"op":"add","a":666,"b":1}"#);
    assert_eq!(refused.status, Status::Ok, "{refused:?}");
    crate::harness::outcome_of(&host, &refused.call_id);
    for b in 0..5 {
        let later =
            crate::harness::call(&host, "calc", &format!(r#"{{"op":"add","a":1,"b":{b}}}"#));
        assert_eq!(later.status, Status::Ok, "{later:?}");
        crate::harness::outcome_of(&host, &later.call_id);
    }
    let records = crate::harness::audit(&host, &refused.call_id);
    let stand_in = records
        .iter()
        .find(|r| r.kind == "unrecordable" && r.data["kind"] == "call")
        .unwrap_or_else(|| panic!("no stand-in for the call record: {records:?}"));
    // What it was, how big, and why not: never what it held.
    let mut said: Vec<&String> = stand_in.data.as_object().unwrap().keys().collect();
    said.sort();
    assert_eq!(said, ["bytes", "kind", "refused"], "{stand_in:?}");
    assert!(stand_in.data["bytes"].as_u64().unwrap() > 0);
    assert!(
        stand_in.data["refused"]
            .as_str()
            .unwrap()
            .contains("not wanted"),
        "{stand_in:?}"
    );
    assert!(records.iter().all(|r| r.kind != "call"), "{records:?}");
    assert!(matches!(
        host.records().verify().unwrap(),
        Verification::Intact { .. }
    ));
}
