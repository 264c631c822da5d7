//! Rate limits (`[[rate_limit]]`): calls per caller and tool over a sliding
//! window, counted in the store, so hosts sharing it count the same calls
//! (run on SQLite and, with `make pg-test`, on PostgreSQL).

use crate::harness::{TestHost, run_cli, runtime};
use std::sync::Arc;
use toolwarden::caller::{Caller, Proof};
use toolwarden::{CallRequest, CallResult, Controller, ErrorCode, Status};
use toolwarden_tests::CALC;

const ALLOW_CALC: &str =
    "[[rule]]\ntools = [\"calc\"]\ndecision = \"allow\"\nreason = \"harmless\"\n";

fn person(subject: &str) -> Arc<Caller> {
    Arc::new(Caller {
        subject: subject.into(),
        proof: Proof::AccessToken {
            issuer: "https://login.example.org".into(),
        },
        scopes: vec![],
        claims: Default::default(),
    })
}

fn add(a: i64) -> String {
    format!(r#"{{"op":"add","a":{a},"b":1}}"#)
}

fn call_as(host: &Controller, who: Option<Arc<Caller>>, a: i64) -> CallResult {
    let mut request = CallRequest::new("calc", add(a));
    request.caller = who;
    runtime().block_on(host.handle(request))
}

#[test]
fn each_caller_gets_its_calls_per_window_and_then_is_refused() {
    let config = format!(
        "{ALLOW_CALC}\n[[rule]]\ntools = [\"calc\"]\nwhen = {{ \"/a\" = 99 }}\ndecision = \"ask\"\n\
         reason = \"a person checks 99\"\n\n[[rate_limit]]\ntools = [\"calc\"]\ncalls = 2\nwindow = \"1h\"\n"
    );
    let t = TestHost::new(&[CALC]).config(&config);
    let host = t.controller();
    let (alice, bob) = (person("alice"), person("bob"));

    // A call that waits for a person does not run, so it takes no unit.
    let waiting = call_as(&host, Some(alice.clone()), 99);
    assert_eq!(waiting.code(), Some(ErrorCode::ApprovalRequired));
    for a in [1, 2] {
        assert_eq!(call_as(&host, Some(alice.clone()), a).status, Status::Ok);
    }
    let refused = call_as(&host, Some(alice.clone()), 3);
    assert_eq!(refused.code(), Some(ErrorCode::RateLimited), "{refused:#?}");
    assert_eq!(refused.status, Status::Denied);
    let message = &refused.error.as_ref().unwrap().message;
    assert!(
        message.contains("https://login.example.org alice made 2 calls of `calc` in the last 1h")
            && message.contains("`[[rate_limit]]` at line 12 allows")
            && (message.contains("may run in 3600 s") || message.contains("may run in 3599 s")),
        "{message}"
    );
    // Counted per caller: bob has his own two, and a call without a proven
    // caller is the OS user's.
    assert_eq!(call_as(&host, Some(bob.clone()), 1).status, Status::Ok);
    assert_eq!(call_as(&host, None, 1).status, Status::Ok);
    assert_eq!(call_as(&host, None, 2).status, Status::Ok);
    assert_eq!(call_as(&host, None, 3).code(), Some(ErrorCode::RateLimited));
    drop(host);

    // The refusals are audited and counted by `audit stats`.
    let (code, stdout, stderr) = run_cli(t.cli().args(["audit", "stats", "--json"]));
    assert_eq!(code, 0, "{stderr}");
    let stats: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(stats["tools"]["calc"]["rate_limited"], 2, "{stats}");
    assert_eq!(stats["tools"]["calc"]["outcomes"]["RATE_LIMITED"], 2);
}

#[test]
fn a_limit_for_everyone_counts_every_caller_and_others_are_untouched() {
    let config = format!(
        "{ALLOW_CALC}\n[[rate_limit]]\ntools = [\"ca*\"]\ncalls = 1\nwindow = \"10m\"\nper = []\n\n\
         [[rate_limit]]\ntools = [\"nothing_*\"]\ncalls = 1\nwindow = \"1s\"\n"
    );
    let t = TestHost::new(&[CALC]).config(&config);
    let host = t.controller();
    assert_eq!(call_as(&host, Some(person("alice")), 1).status, Status::Ok);
    let refused = call_as(&host, Some(person("bob")), 1);
    assert_eq!(refused.code(), Some(ErrorCode::RateLimited));
    assert!(
        refused
            .error
            .unwrap()
            .message
            .starts_with("everyone together made 1 calls of ca* in the last 10m")
    );
}

/// Two hosts on one store, each with several threads, race for a
/// caller's five calls: exactly five run.
#[test]
fn hosts_sharing_a_store_count_the_same_calls() {
    let config = format!("{ALLOW_CALC}\n[[rate_limit]]\ncalls = 5\nwindow = \"1h\"\n");
    let t = TestHost::new(&[CALC]).config(&config);
    let hosts = [Arc::new(t.controller()), Arc::new(t.controller())];
    let alice = person("alice");
    let threads: Vec<_> = (0..12)
        .map(|i| {
            let host = Arc::clone(&hosts[i % 2]);
            let alice = alice.clone();
            std::thread::spawn(move || call_as(&host, Some(alice), i as i64).code())
        })
        .collect();
    let codes: Vec<Option<ErrorCode>> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    let ran = codes.iter().filter(|c| c.is_none()).count();
    let limited = codes
        .iter()
        .filter(|c| **c == Some(ErrorCode::RateLimited))
        .count();
    assert_eq!((ran, limited), (5, 7), "{codes:?}");
}

#[test]
fn a_limit_that_could_never_count_is_refused_at_load() {
    for (limit, says) in [
        ("calls = 0\nwindow = \"1h\"", "`rate_limit.calls` is 0"),
        ("calls = 5\nwindow = \"1w\"", "not a window from 1s to 31d"),
        ("calls = 5\nwindow = \"40d\"", "not a window from 1s to 31d"),
        ("calls = 5\nwindow = \"0s\"", "not a window from 1s to 31d"),
        ("tools = []\ncalls = 5\nwindow = \"1h\"", "counts nothing"),
        (
            "calls = 5\nwindow = \"1h\"\nper = [\"session\"]",
            "unknown variant",
        ),
        (
            "calls = 5\nwindow = \"1h\"\nlimit = 3",
            "expected one of `tools`, `calls`, `window`, `per`",
        ),
    ] {
        let t = TestHost::new(&[CALC]).config(&format!("{ALLOW_CALC}\n[[rate_limit]]\n{limit}\n"));
        let (code, stdout, stderr) = run_cli(t.cli().arg("check"));
        assert_ne!(code, 0, "{limit}: {stdout}");
        assert!(
            stderr.contains(says) || stdout.contains(says),
            "{limit}: expected {says:?} in {stdout}{stderr}"
        );
    }
}
