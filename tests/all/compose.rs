//! Composite tools: a tool that calls other tools through the host
//! (`compose`). Every child is a call of its own, governed from the start
//! (policy, approval, budgets, its own grant), bounded in depth and
//! fan-out, stopped with its parent, and recorded in a tree that
//! `audit --call` shows whole.

use crate::harness::{ALLOW_ALL, TestHost, audit, outcome_of, run_cli, runtime};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant};
use toolwarden::{CallRequest, CallResult, Controller, ErrorCode, Record, Status};
use toolwarden_tests::{CALC, COMPOSER, HOSTILE};

fn host(config: &str) -> (TestHost, Arc<Controller>) {
    let t = TestHost::new(&[COMPOSER, CALC, HOSTILE]).config(config);
    let host = t.controller();
    (t, host)
}

/// A `compose_run` request making `calls` (tool, arguments) in order.
fn run_request(calls: &[(&str, Value)]) -> CallRequest {
    let calls: Vec<Value> = calls
        .iter()
        .map(|(tool, args)| json!({ "tool": tool, "args": args.to_string() }))
        .collect();
    CallRequest::new("compose_run", json!({ "calls": calls }).to_string())
}

fn handle(host: &Controller, request: CallRequest) -> CallResult {
    runtime().block_on(host.handle(request))
}

/// (tool, code) of each call `compose_run` reported, in order.
fn reported(result: &CallResult) -> Vec<(String, Option<String>)> {
    result.value.as_ref().expect("compose_run returns a value")["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["tool"].as_str().unwrap().to_owned(),
                r["code"].as_str().map(str::to_owned),
            )
        })
        .collect()
}

fn add(a: i64, b: i64) -> Value {
    json!({ "op": "add", "a": a, "b": b })
}

fn three_sums() -> CallRequest {
    run_request(&[
        ("calc", add(1, 1)),
        ("calc", add(1, 2)),
        ("calc", add(1, 3)),
    ])
}

/// The refusal record of the call the parent's first child made.
fn grandchild_refusal(host: &Controller, parent: &CallResult) -> Record {
    let child = &parent.children[0].call_id;
    audit(host, child)
        .into_iter()
        .find(|r| r.kind == "refused" && r.call_id != *child)
        .expect("the grandchild's refusal")
}

#[test]
fn a_child_the_policy_denies_does_not_run_while_its_allowed_parent_does() {
    let (_t, host) = host(
        r#"
[[rule]]
tools = ["compose_run", "calc"]
decision = "allow"
reason = "composition and arithmetic are fine"
"#,
    );
    let result = handle(
        &host,
        run_request(&[
            ("calc", add(20, 22)),
            ("hostile_sleep", json!({ "ms": 0 })),
            ("calc", add(1, 1)),
        ]),
    );
    assert_eq!(result.status, Status::Ok, "{result:#?}");
    assert_eq!(
        reported(&result),
        [
            ("calc".into(), None),
            ("hostile_sleep".into(), Some("POLICY_DENIED".into())),
            ("calc".into(), None),
        ]
    );
    let values: Vec<&Value> = result.value.as_ref().unwrap()["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["value"])
        .collect();
    assert_eq!(
        values[0],
        &json!(r#"{"result":42}"#),
        "the child's value reaches the parent"
    );

    // The parent's result lists its children in order and carries what
    // the model would have been shown for those that succeeded.
    let children: Vec<(&str, Status, Option<ErrorCode>)> = result
        .children
        .iter()
        .map(|c| (c.tool.as_str(), c.status, c.code))
        .collect();
    assert_eq!(
        children,
        [
            ("calc", Status::Ok, None),
            (
                "hostile_sleep",
                Status::Denied,
                Some(ErrorCode::PolicyDenied)
            ),
            ("calc", Status::Ok, None),
        ]
    );
    let attached: Vec<String> = result
        .blocks
        .iter()
        .map(|b| {
            serde_json::to_value(b).unwrap()["text"]
                .as_str()
                .unwrap_or("")
                .to_owned()
        })
        .collect();
    assert_eq!(attached.len(), 2, "{attached:?}");
    assert!(attached[0].starts_with(&format!("[calc ({})]", result.children[0].call_id)));
    assert!(attached[0].contains("42"), "{attached:?}");
    assert!(attached[1].starts_with(&format!("[calc ({})]", result.children[2].call_id)));

    // One tree in the audit trail: each child names its parent and root,
    // and the parent's id brings up every record of the tree.
    let tree = audit(&host, &result.call_id);
    for child in &result.children {
        let call = tree
            .iter()
            .find(|r| r.call_id == child.call_id && r.kind == "call")
            .unwrap_or_else(|| panic!("no call record of {} in {tree:#?}", child.call_id));
        assert_eq!(call.data["parent"], result.call_id.as_str());
        assert_eq!(call.data["root"], result.call_id.as_str());
    }
    let denied = tree
        .iter()
        .find(|r| r.call_id == result.children[1].call_id && r.kind == "policy")
        .unwrap();
    assert_eq!(denied.data["verdict"], "deny", "{denied:#?}");
    assert!(
        !tree.iter().any(|r| r.call_id == result.children[1].call_id
            && r.kind == "outcome"
            && r.data.get("fuel_used").is_some_and(|f| !f.is_null())),
        "the denied child never ran"
    );
    let outside = audit(&host, &result.children[0].call_id);
    assert!(
        outside
            .iter()
            .all(|r| r.call_id == result.children[0].call_id),
        "a leaf's records are its own"
    );
}

#[test]
fn rules_match_on_nesting_and_on_the_parent_tool() {
    let (_t, host) = host(
        r#"
[[rule]]
tools = ["compose_run", "relay"]
decision = "allow"
reason = "composition is fine"

[[rule]]
tools = ["calc"]
nested = false
decision = "allow"
reason = "agents may do arithmetic"

[[rule]]
tools = ["calc"]
parent = ["relay"]
decision = "allow"
reason = "relay may do arithmetic for its caller"
"#,
    );
    let direct = handle(&host, CallRequest::new("calc", add(1, 2).to_string()));
    assert_eq!(direct.status, Status::Ok, "{direct:#?}");
    let nested = handle(&host, run_request(&[("calc", add(1, 2))]));
    assert_eq!(
        reported(&nested),
        [("calc".into(), Some("POLICY_DENIED".into()))],
        "no rule allows calc under compose_run"
    );
    let relayed = handle(
        &host,
        CallRequest::new(
            "relay",
            json!({ "tool": "calc", "args": add(1, 2).to_string() }).to_string(),
        ),
    );
    assert_eq!(relayed.status, Status::Ok, "{relayed:#?}");
    assert_eq!(relayed.value.unwrap()["value"], r#"{"result":3}"#);
}

#[test]
fn the_parents_approval_does_not_carry_over_to_its_children() {
    let (_t, host) = host(
        r#"
[[rule]]
tools = ["compose_run", "calc"]
decision = "ask"
reason = "a person looks first"
"#,
    );
    let session = || toolwarden::SessionId::from("reviewed".to_owned());
    let asked = handle(
        &host,
        run_request(&[("calc", add(2, 3))]).in_session(session()),
    );
    assert_eq!(
        asked.code(),
        Some(ErrorCode::ApprovalRequired),
        "{asked:#?}"
    );
    let id = asked.approval_id.clone().unwrap();
    let decided = host
        .records()
        .decide(
            &id,
            toolwarden::ApprovalDecision::Approve,
            None,
            (
                toolwarden::Decider::Cli,
                &toolwarden::caller::Caller::os_user(),
            ),
        )
        .unwrap();
    assert!(
        matches!(decided, toolwarden::approval::Decided::Now(_)),
        "{decided:?}"
    );
    let ran = handle(
        &host,
        run_request(&[("calc", add(2, 3))])
            .in_session(session())
            .with_approval(id),
    );
    assert_eq!(ran.status, Status::Ok, "{ran:#?}");
    assert_eq!(
        reported(&ran),
        [("calc".into(), Some("APPROVAL_REQUIRED".into()))],
        "the child asks for its own approval"
    );
}

#[test]
fn a_tool_reaching_itself_again_stops_with_call_cycle() {
    let (_t, host) = host(ALLOW_ALL);
    let direct = handle(
        &host,
        run_request(&[("compose_run", json!({ "calls": [] }))]),
    );
    assert_eq!(
        reported(&direct),
        [("compose_run".into(), Some("CALL_CYCLE".into()))]
    );
    // compose_run -> relay -> compose_run
    let through = handle(
        &host,
        run_request(&[(
            "relay",
            json!({ "tool": "compose_run", "args": json!({ "calls": [] }).to_string() }),
        )]),
    );
    assert_eq!(
        reported(&through),
        [("relay".into(), Some("TOOL_FAILED".into()))]
    );
    let cycle = grandchild_refusal(&host, &through);
    assert_eq!(cycle.data["code"], "CALL_CYCLE", "{cycle:#?}");
    assert!(
        cycle.data["message"]
            .as_str()
            .unwrap()
            .contains("compose_run -> relay -> compose_run"),
        "{cycle:#?}"
    );
}

#[test]
fn depth_and_fan_out_are_bounded_by_the_compose_table() {
    let (_t, host) = host(&format!(
        "[compose]\nmax_depth = 1\nmax_children = 2\n{ALLOW_ALL}"
    ));
    let wide = handle(&host, three_sums());
    assert_eq!(
        reported(&wide),
        [
            ("calc".into(), None),
            ("calc".into(), None),
            ("calc".into(), Some("NESTING_LIMIT".into())),
        ]
    );
    // compose_run -> relay (depth 1) -> calc (depth 2)
    let deep = handle(
        &host,
        run_request(&[(
            "relay",
            json!({ "tool": "calc", "args": add(1, 1).to_string() }),
        )]),
    );
    assert_eq!(
        reported(&deep),
        [("relay".into(), Some("TOOL_FAILED".into()))]
    );
    let stopped = grandchild_refusal(&host, &deep);
    assert_eq!(stopped.data["code"], "NESTING_LIMIT", "{stopped:#?}");
}

#[test]
fn nested_calls_count_against_the_sessions_budget() {
    let (_t, host) = host(&format!("[budget]\nmax_calls = 3\n{ALLOW_ALL}"));
    let result = handle(&host, three_sums());
    assert_eq!(result.status, Status::Ok, "{result:#?}");
    assert_eq!(
        reported(&result),
        [
            ("calc".into(), None),
            ("calc".into(), None),
            ("calc".into(), Some("BUDGET_EXCEEDED".into())),
        ],
        "the parent is the session's first call, its children the next"
    );
}

/// The outcome record of `call_id`, once it is written (a child stopped
/// with its parent ends on its own task, just after).
#[test]
fn cancelling_or_timing_out_the_parent_stops_its_child() {
    let (_t, host) = host(ALLOW_ALL);
    // The cancellation comes 300 ms in: by then the child must be running,
    // not its plugin still compiling.
    host.registry().finish_compiling();
    let request = run_request(&[("hostile_sleep", json!({ "ms": 20_000 }))]);
    let cancel = request.cancel.clone();
    let started = Instant::now();
    let result = runtime().block_on(async {
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(300)).await;
            cancel.cancel();
        });
        host.handle(request).await
    });
    assert_eq!(result.code(), Some(ErrorCode::Cancelled), "{result:#?}");
    let child = audit(&host, &result.call_id)
        .into_iter()
        .find(|r| r.kind == "call" && r.call_id != result.call_id)
        .expect("the child's call record");
    let ended = outcome_of(&host, &child.call_id);
    assert_eq!(ended.data["code"], "CANCELLED", "{ended:#?}");
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "the child was stopped, not slept out"
    );

    // relay gives up after 500 ms; its child would sleep 20 s.
    let started = Instant::now();
    let timed_out = handle(
        &host,
        CallRequest::new(
            "relay",
            json!({ "tool": "hostile_sleep", "args": json!({ "ms": 20_000 }).to_string() })
                .to_string(),
        ),
    );
    assert_eq!(timed_out.code(), Some(ErrorCode::Timeout), "{timed_out:#?}");
    let child = audit(&host, &timed_out.call_id)
        .into_iter()
        .find(|r| r.kind == "call" && r.call_id != timed_out.call_id)
        .expect("the child's call record");
    let ended = outcome_of(&host, &child.call_id);
    assert_eq!(ended.data["code"], "CANCELLED", "{ended:#?}");
    assert!(started.elapsed() < Duration::from_secs(15));
}

#[test]
fn audit_call_shows_the_whole_tree_and_inspect_shows_the_import() {
    let t = TestHost::new(&[COMPOSER, CALC]).config(ALLOW_ALL);
    let args = json!({ "calls": [
        { "tool": "relay", "args": json!({ "tool": "calc", "args": add(3, 4).to_string() }).to_string() },
        { "tool": "calc", "args": add(5, 6).to_string() },
    ]});
    let (code, stdout, stderr) =
        run_cli(
            t.cli()
                .args(["call", "compose_run", &args.to_string(), "--json"]),
        );
    assert_eq!(code, 0, "{stderr}");
    let result: Value = serde_json::from_str(&stdout).unwrap();
    let root = result["call_id"].as_str().unwrap();
    assert_eq!(
        result["children"].as_array().unwrap().len(),
        2,
        "{result:#}"
    );
    let (code, stdout, _) = run_cli(t.cli().args(["audit", "--json", "--call", root]));
    assert_eq!(code, 0);
    let records: Vec<Value> = serde_json::from_str(&stdout).unwrap();
    let calls: Vec<(&str, &str)> = records
        .iter()
        .filter(|r| r["kind"] == "call")
        .map(|r| {
            (
                r["tool"].as_str().unwrap(),
                r["data"]["parent"].as_str().unwrap_or("-"),
            )
        })
        .collect();
    let relay_id = result["children"][0]["call_id"].as_str().unwrap();
    assert_eq!(
        calls,
        [
            ("compose_run", "-"),
            ("relay", root),
            ("calc", relay_id),
            ("calc", root)
        ],
        "parent, children and grandchild, in the order they were made"
    );
    assert!(
        records
            .iter()
            .filter(|r| r["kind"] == "call"
                && r["tool"] == "calc"
                && r["data"]["parent"] == relay_id)
            .all(|r| r["data"]["root"] == root),
        "the grandchild names the root"
    );
    let (code, stdout, _) = run_cli(t.cli().args(["inspect", toolwarden_tests::COMPOSER]));
    assert_eq!(code, 0);
    assert!(stdout.contains("toolwarden:tool/compose@0.3.0"), "{stdout}");
}

#[test]
fn a_childs_log_lines_go_where_its_parents_go_under_its_own_name() {
    let (_t, host) = host(ALLOW_ALL);
    let lines = Arc::new(std::sync::Mutex::new(Vec::new()));
    let heard = Arc::clone(&lines);
    let mut request = run_request(&[
        ("hostile_log_flood", json!({ "n": 3 })),
        ("calc", add(1, 1)),
    ]);
    request.log = Some(toolwarden::LogSink::new(move |line| {
        heard.lock().unwrap().push(line.tool.to_string());
    }));
    let result = handle(&host, request);
    assert_eq!(result.status, Status::Ok, "{result:#?}");
    assert_eq!(
        *lines.lock().unwrap(),
        ["hostile_log_flood"; 3],
        "the child's three lines, named after the child; calc logs nothing"
    );
}

#[test]
fn a_child_is_recorded_as_made_by_its_parents_caller() {
    use toolwarden::caller::{Caller, Proof};
    let (_t, host) = host(ALLOW_ALL);
    let mut request = run_request(&[("calc", add(2, 2)), ("calc", add(3, 3))]);
    request.caller = Some(Arc::new(Caller {
        subject: "alice".into(),
        proof: Proof::AccessToken {
            issuer: "https://login.example.org".into(),
        },
        scopes: vec!["tools:call".into()],
        claims: [("groups".to_owned(), json!(["oncall"]))].into(),
    }));
    let root = request.call_id.to_string();
    let result = handle(&host, request);
    assert_eq!(result.status, Status::Ok, "{result:#?}");
    outcome_of(&host, &root);
    let calls: Vec<Record> = audit(&host, &root)
        .into_iter()
        .filter(|r| r.kind == "call")
        .collect();
    assert_eq!(calls.len(), 3, "the parent and its two children");
    for call in &calls {
        assert_eq!(
            call.data["caller"],
            json!({ "subject": "alice", "proof": "access_token",
                    "issuer": "https://login.example.org",
                    "scopes": ["tools:call"], "claims": { "groups": ["oncall"] } }),
            "{}",
            call.tool
        );
    }
    let anonymous = handle(&host, CallRequest::new("calc", add(1, 1).to_string()));
    let record = audit(&host, &anonymous.call_id)
        .into_iter()
        .find(|r| r.kind == "call")
        .expect("its call record");
    assert!(record.data.get("caller").is_none(), "{:#}", record.data);
}
