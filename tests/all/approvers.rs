//! Approvers by name: every decision records who made it, a rule may keep
//! the caller from approving their own call, and may want several
//! distinct people (a quorum) before the call runs once.

use crate::harness::{TestHost, run_cli, runtime};
use std::sync::Arc;
use toolwarden::approval::Decided;
use toolwarden::caller::{Caller, Proof};
use toolwarden::{ApprovalDecision, CallRequest, CallResult, Controller, Decider, ErrorCode};
use toolwarden::{SessionId, Status};
use toolwarden_tests::CALC;

const ISSUER: &str = "https://login.example.org";
const ADD: &str = r#"{"op":"add","a":20,"b":22}"#;

fn person(subject: &str) -> Caller {
    Caller {
        subject: subject.into(),
        proof: Proof::AccessToken {
            issuer: ISSUER.into(),
        },
        scopes: vec![],
        claims: Default::default(),
    }
}

fn call_as(host: &Controller, who: &Caller) -> CallResult {
    let mut request = CallRequest::new("calc", ADD).in_session(SessionId::from("work".to_owned()));
    request.caller = Some(Arc::new(who.clone()));
    runtime().block_on(host.handle(request))
}

fn approve(host: &Controller, id: &str, who: &Caller) -> Decided {
    host.records()
        .decide(id, ApprovalDecision::Approve, None, (Decider::Console, who))
        .unwrap()
}

fn config(rule: &str) -> String {
    format!(
        "[[rule]]\ntools = [\"calc\"]\ndecision = \"ask\"\n{rule}reason = \"two people sign off\"\n"
    )
}

#[test]
fn a_quorum_of_two_others_must_approve_before_the_call_runs_once() {
    let t = TestHost::new(&[CALC]).config(&config("approvers = 2\nself_approval = false\n"));
    let host = t.controller();
    let (alice, bob, carol) = (person("alice"), person("bob"), person("carol"));

    let asked = call_as(&host, &alice);
    assert_eq!(
        asked.code(),
        Some(ErrorCode::ApprovalRequired),
        "{asked:#?}"
    );
    let id = asked.approval_id.clone().unwrap();

    let own = approve(&host, &id, &alice);
    assert!(matches!(own, Decided::OwnCall(_)), "{own:?}");
    // The same subject from another issuer is another person: counted.
    let elsewhere = Caller {
        proof: Proof::AccessToken {
            issuer: "https://other.example.org".into(),
        },
        ..alice.clone()
    };
    match approve(&host, &id, &bob) {
        Decided::Counted { approval, again } => {
            assert!(!again);
            assert_eq!((approval.awaiting(), approval.state), (1, "pending"));
        }
        other => panic!("bob's approval counts and the call waits: {other:?}"),
    }
    match approve(&host, &id, &bob) {
        Decided::Counted { approval, again } => {
            assert!(again, "bob approving twice is one approver");
            assert_eq!(approval.awaiting(), 1);
        }
        other => panic!("{other:?}"),
    }
    let waiting = call_as(&host, &alice);
    assert_eq!(
        (waiting.code(), waiting.approval_id.as_deref()),
        (Some(ErrorCode::ApprovalRequired), Some(id.as_str())),
        "one approver of two: the same call still waits, on the same approval"
    );

    match approve(&host, &id, &elsewhere) {
        Decided::Now(approval) => assert_eq!(approval.state, "approved"),
        other => panic!("the second distinct approver decides it: {other:?}"),
    }
    let ran = call_as(&host, &alice);
    assert_eq!(ran.status, Status::Ok, "{ran:#?}");
    assert_eq!(ran.value, Some(serde_json::json!({ "result": 42 })));
    let again = call_as(&host, &alice);
    assert_eq!(
        again.code(),
        Some(ErrorCode::ApprovalRequired),
        "a quorum lets the call run once"
    );
    assert!(matches!(approve(&host, &id, &carol), Decided::Stale(_)));

    let shown = host.records().approval(&id).unwrap().unwrap();
    assert_eq!(
        shown.asked_by.as_deref(),
        Some("https://login.example.org alice")
    );
    assert_eq!((shown.approvers_needed, shown.self_approval), (2, false));
    let who: Vec<(&str, &str)> = shown
        .decisions
        .iter()
        .map(|d| (d.name.as_str(), d.proof.as_str()))
        .collect();
    assert_eq!(who, [("bob", "access token"), ("alice", "access token")]);

    let records = host
        .records()
        .audit(&toolwarden::AuditFilter::default())
        .unwrap();
    let counted: Vec<_> = records
        .iter()
        .filter(|r| r.kind == "approval_counted")
        .collect();
    assert_eq!(
        counted.len(),
        1,
        "a repeated approval is not recorded twice"
    );
    assert_eq!(counted[0].data["approver"]["subject"], "bob");
    assert_eq!(counted[0].data["awaiting"], 1);
    let decided = records
        .iter()
        .find(|r| r.kind == "approval_decided")
        .expect("the deciding approval is audited");
    assert_eq!(decided.data["approver"]["subject"], "alice");
    assert_eq!(
        decided.data["approver"]["issuer"],
        "https://other.example.org"
    );
    assert_eq!(decided.data["by"], "console");
}

#[test]
fn the_strictest_ask_rule_says_who_approves_and_anyone_may_deny() {
    let policy = format!(
        "{}\n[[rule]]\ntools = [\"c*\"]\ndecision = \"ask\"\nself_approval = false\nreason = \"not your own\"\n",
        config("approvers = 2\n")
    );
    let t = TestHost::new(&[CALC]).config(&policy);
    let host = t.controller();
    let alice = person("alice");
    let id = call_as(&host, &alice).approval_id.unwrap();
    let shown = host.records().approval(&id).unwrap().unwrap();
    assert_eq!(
        (shown.approvers_needed, shown.self_approval),
        (2, false),
        "both rules' demands hold"
    );
    assert!(matches!(approve(&host, &id, &alice), Decided::OwnCall(_)));
    // The caller may always take their call back.
    let taken_back = host
        .records()
        .decide(
            &id,
            ApprovalDecision::Deny,
            Some("not now"),
            (Decider::Mcp, &alice),
        )
        .unwrap();
    assert!(
        matches!(&taken_back, Decided::Now(a) if a.state == "denied"),
        "{taken_back:?}"
    );
    let denied = call_as(&host, &alice);
    assert_eq!(
        denied.code(),
        Some(ErrorCode::ApprovalDenied),
        "{denied:#?}"
    );
}

/// At the CLI, the caller is the OS user running it: the same person
/// approving their own call with `approvals approve` is refused.
#[test]
fn at_the_cli_the_os_user_may_not_approve_their_own_call_when_a_rule_says_so() {
    let t = TestHost::new(&[CALC]).config(&config("self_approval = false\n"));
    let (code, stdout, stderr) = run_cli(t.cli().args(["call", "calc", ADD, "--json"]));
    assert_eq!(code, 3, "{stdout}{stderr}");
    let asked: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let id = asked["approval_id"].as_str().unwrap().to_owned();

    let (code, stdout, stderr) = run_cli(t.cli().args(["approvals", "approve", &id]));
    assert_eq!(code, 1, "{stdout}{stderr}");
    let me = Caller::os_user().subject;
    assert!(
        stderr.contains(&format!("you asked for this call (as os-user {me})"))
            && stderr.contains("not the one who asked"),
        "{stderr}"
    );
    let (_, shown, _) = run_cli(t.cli().args(["approvals", "show", &id]));
    assert!(shown.contains(&format!("by os-user {me}")), "{shown}");
    let (_, listed, _) = run_cli(t.cli().args(["approvals", "list"]));
    assert!(
        listed.contains(&format!("{id}  pending    0/1")),
        "{listed}"
    );
    let (_, explained, _) = run_cli(t.cli().args(["policy", "explain", "calc", ADD]));
    assert!(
        explained.contains("decision: ask\napprovers: 1 person, not the one who asked"),
        "{explained}"
    );
    assert!(
        shown.contains("approvers  1 person, not the one who asked"),
        "{shown}"
    );
    assert!(shown.contains("state      pending"), "{shown}");

    // Another person (here: a token's subject, as the console or MCP over
    // HTTP would prove it) approves, and the CLI's call runs once.
    let host = t.controller();
    assert!(matches!(
        approve(&host, &id, &person("bob")),
        Decided::Now(_)
    ));
    drop(host);
    let (code, stdout, stderr) =
        run_cli(
            t.cli()
                .args(["call", "calc", ADD, "--approval", &id, "--json"]),
        );
    assert_eq!(code, 0, "{stdout}{stderr}");
    let (_, shown, _) = run_cli(t.cli().args(["approvals", "show", &id]));
    assert!(
        shown.contains("approved   bob (access token, console)"),
        "{shown}"
    );
}

#[test]
fn approvers_belong_to_ask_rules_and_are_bounded() {
    for (rule, says) in [
        (
            "[[rule]]\ntools = [\"calc\"]\ndecision = \"allow\"\napprovers = 2\nreason = \"x\"\n",
            "no one is asked",
        ),
        (
            "[[rule]]\ntools = [\"calc\"]\ndecision = \"ask\"\napprovers = 0\nreason = \"x\"\n",
            "`approvers = 0` is not between 1 and 16",
        ),
        (
            "[[rule]]\ntools = [\"calc\"]\ndecision = \"ask\"\napprovers = 17\nreason = \"x\"\n",
            "`approvers = 17` is not between 1 and 16",
        ),
    ] {
        let t = TestHost::new(&[CALC]).config(rule);
        let (code, stdout, stderr) = run_cli(t.cli().arg("check"));
        assert_ne!(code, 0, "{stdout}");
        assert!(
            stderr.contains(says) || stdout.contains(says),
            "{says}: {stdout}{stderr}"
        );
    }
}
