//! One-time approvals: asked, reviewed, decided, bound to the exact call,
//! consumed once across processes, and kept across restarts.

use crate::harness::{TestHost, run_cli};
use serde_json::Value;
use toolwarden_tests::{CALC, FS};

const ASK_CALC: &str =
    "[[rule]]\ntools = [\"calc\"]\ndecision = \"ask\"\nreason = \"a person checks the numbers\"\n";
const ADD: &str = r#"{"op":"add","a":20,"b":22}"#;

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// Calls through the CLI with `--json`: (exit code, result).
fn call(t: &TestHost, args: &[&str]) -> (i32, Value) {
    let (code, stdout, stderr) = run_cli(t.cli().arg("call").args(args).arg("--json"));
    assert!(!stdout.is_empty(), "no output; stderr: {stderr}");
    (code, json(&stdout))
}

/// Asks for an approval and returns its id.
fn ask(t: &TestHost, args: &[&str]) -> String {
    let (code, r) = call(t, args);
    assert_eq!(code, 3, "{r}");
    assert_eq!(r["status"], "pending_approval");
    assert_eq!(r["error"]["code"], "APPROVAL_REQUIRED");
    assert_eq!(r["value"], Value::Null, "nothing ran");
    r["approval_id"]
        .as_str()
        .expect("an approval id")
        .to_owned()
}

/// Calls with `args` and expects the call refused with `code`, its message
/// containing `why`.
fn refused(t: &TestHost, args: &[&str], code: &str, why: &str) {
    let (exit, r) = call(t, args);
    assert_eq!((exit, r["error"]["code"].as_str()), (1, Some(code)), "{r}");
    let message = r["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains(why), "expected {why:?} in {message}");
}

fn approve(t: &TestHost, id: &str) {
    let (code, stdout, stderr) = run_cli(t.cli().args(["approvals", "approve", id]));
    assert_eq!(code, 0, "{stdout}{stderr}");
}

#[test]
fn ask_records_a_pending_approval_that_shows_exactly_what_would_run() {
    let t = TestHost::new(&[CALC]).config(ASK_CALC);
    let id = ask(&t, &["calc", ADD]);
    let (code, stdout, _) = run_cli(t.cli().args(["approvals", "list", "--json"]));
    assert_eq!(code, 0);
    let list = json(&stdout);
    assert_eq!(list.as_array().unwrap().len(), 1);
    assert_eq!(list[0]["id"], id.as_str());
    assert_eq!(list[0]["state"], "pending");
    let (code, stdout, _) = run_cli(t.cli().args(["approvals", "show", &id]));
    assert_eq!(code, 0);
    for expected in [
        "tool       calc",
        "\"a\": 20",
        "capability filesystem none",
        "a person checks the numbers",
        "expires",
    ] {
        assert!(
            stdout.contains(expected),
            "missing {expected:?} in:\n{stdout}"
        );
    }
    let (_, stdout, _) = run_cli(t.cli().args(["approvals", "show", &id, "--json"]));
    let shown = json(&stdout);
    assert_eq!(shown["args"], json(ADD));
    assert!(shown["expires_ms"].as_i64().unwrap() > shown["created_ms"].as_i64().unwrap());
}

#[test]
fn an_approved_call_runs_exactly_once() {
    let t = TestHost::new(&[CALC]).config(ASK_CALC);
    let id = ask(&t, &["calc", ADD]);
    let (code, r) = call(&t, &["calc", ADD, "--approval", &id]);
    assert_eq!(
        (code, &r["error"]["code"]),
        (3, &Value::from("APPROVAL_REQUIRED")),
        "not decided yet: {r}"
    );
    approve(&t, &id);
    let (code, r) = call(&t, &["calc", ADD, "--approval", &id]);
    assert_eq!(code, 0, "{r}");
    assert_eq!(r["value"]["result"], 42);
    let (code, r) = call(&t, &["calc", ADD, "--approval", &id]);
    assert_eq!(code, 1);
    assert_eq!(r["error"]["code"], "APPROVAL_INVALID");
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("already used")
    );
    let (code, _, stderr) = run_cli(t.cli().args(["approvals", "approve", &id]));
    assert_eq!(
        code, 1,
        "a consumed approval cannot be approved again: {stderr}"
    );
}

#[test]
fn an_approval_is_bound_to_arguments_session_plugin_and_policy() {
    let t = TestHost::new(&[CALC]).config(ASK_CALC);
    let id = ask(&t, &["calc", ADD]);
    approve(&t, &id);
    let session = {
        let (_, stdout, _) = run_cli(t.cli().args(["approvals", "show", &id, "--json"]));
        json(&stdout)["session"].as_str().unwrap().to_owned()
    };
    let invalid = |args: &[&str], why: &str| {
        let (code, r) = call(&t, args);
        assert_eq!(code, 1, "{r}");
        assert_eq!(r["error"]["code"], "APPROVAL_INVALID", "{r}");
        assert!(r["error"]["message"].as_str().unwrap().contains(why), "{r}");
    };
    invalid(
        &["calc", r#"{"op":"add","a":20,"b":23}"#, "--approval", &id],
        "arguments differ",
    );
    invalid(
        &["calc", ADD, "--approval", &id, "--session", "someone-else"],
        "another session",
    );
    // Same behaviour, different bytes: a custom section changes the plugin's hash.
    let plugin = t.plugins.join("calc.wasm");
    let original = std::fs::read(&plugin).unwrap();
    let mut changed = original.clone();
    changed.extend_from_slice(b"\x00\x05\x04note");
    std::fs::write(&plugin, &changed).unwrap();
    invalid(&["calc", ADD, "--approval", &id], "plugin changed");
    std::fs::write(&plugin, &original).unwrap();
    // Key order and white space do not matter: the digest is over canonical JSON.
    let reordered = r#"{ "b": 22, "a": 20, "op": "add" }"#;
    let (code, r) = call(
        &t,
        &["calc", reordered, "--approval", &id, "--session", &session],
    );
    assert_eq!(
        code, 0,
        "mismatches leave the approval usable for its own call: {r}"
    );
}

#[test]
fn a_changed_or_now_denying_policy_invalidates_an_approval() {
    let t = TestHost::new(&[CALC]).config(ASK_CALC);
    let id = ask(&t, &["calc", ADD]);
    approve(&t, &id);
    // Comments, layout and rule order are not the policy: an approval
    // survives them.
    let t = t.config(&format!("# reviewed again\n\n{ASK_CALC}\n# and again\n"));
    let (code, r) = call(&t, &["calc", ADD, "--approval", &id]);
    assert_eq!(code, 0, "a comment does not void an approval: {r}");
    let id = ask(&t, &["calc", ADD]);
    approve(&t, &id);
    let t = t.config(&format!(
        "{ASK_CALC}\n[[rule]]\ntools = [\"calc\"]\nwhen = {{ \"/op\" = \"div\" }}\ndecision = \"deny\"\nreason = \"no division\"\n"
    ));
    refused(
        &t,
        &["calc", ADD, "--approval", &id],
        "APPROVAL_INVALID",
        "policy changed",
    );
    let id = ask(&t, &["calc", ADD]);
    approve(&t, &id);
    let t = t.config(
        "[[rule]]\ntools = [\"calc\"]\ndecision = \"deny\"\nreason = \"no more arithmetic\"\n",
    );
    refused(
        &t,
        &["calc", ADD, "--approval", &id],
        "APPROVAL_INVALID",
        "no more arithmetic",
    );
}

#[test]
fn denied_and_expired_approvals_never_run() {
    let t = TestHost::new(&[CALC]).config(&format!("[approvals]\nttl_seconds = 1\n\n{ASK_CALC}"));
    let denied = ask(&t, &["calc", ADD]);
    let (code, _, _) =
        run_cli(
            t.cli()
                .args(["approvals", "deny", &denied, "--reason", "not today"]),
        );
    assert_eq!(code, 0);
    refused(
        &t,
        &["calc", ADD, "--approval", &denied],
        "APPROVAL_DENIED",
        "not today",
    );

    let late = ask(&t, &["calc", ADD]);
    approve(&t, &late);
    std::thread::sleep(std::time::Duration::from_millis(1200));
    let (code, r) = call(&t, &["calc", ADD, "--approval", &late]);
    assert_eq!(
        (code, r["error"]["code"].as_str()),
        (1, Some("APPROVAL_EXPIRED")),
        "{r}"
    );
    let never = ask(&t, &["calc", ADD]);
    std::thread::sleep(std::time::Duration::from_millis(1200));
    let (code, _, stderr) = run_cli(t.cli().args(["approvals", "approve", &never]));
    assert_eq!(code, 1, "an expired approval cannot be approved: {stderr}");
    let (code, _, stderr) = run_cli(t.cli().args(["approvals", "approve", "no-such-id"]));
    assert_eq!(code, 2, "{stderr}");
}

#[test]
fn racing_processes_consume_one_approval_exactly_once() {
    let t = TestHost::new(&[FS]).config(
        "[[rule]]\ntools = [\"write_file\"]\ndecision = \"ask\"\nreason = \"writes need a person\"\n",
    );
    let t = t.sandbox(toolwarden::SandboxMode::WorkspaceWrite);
    let args = r#"{"path":"once.txt","content":"written"}"#;
    let id = ask(&t, &["write_file", args]);
    approve(&t, &id);
    let racers: Vec<_> = (0..6)
        .map(|_| {
            t.cli()
                .args(["call", "write_file", args, "--approval", &id, "--json"])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let outcomes: Vec<(i32, Value)> = racers
        .into_iter()
        .map(|child| {
            let out = child.wait_with_output().unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(
                !stdout.is_empty(),
                "a racer printed nothing: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            (out.status.code().unwrap_or(-1), json(&stdout))
        })
        .collect();
    let winners = outcomes.iter().filter(|(code, _)| *code == 0).count();
    assert_eq!(
        winners, 1,
        "exactly one process runs the call: {outcomes:#?}"
    );
    // A loser finds the approval used, or (if it arrives after the winner's
    // run was counted) the duplicate-call guard refuses it first.
    for (code, r) in outcomes.iter().filter(|(code, _)| *code != 0) {
        assert_eq!(*code, 1, "{r}");
        assert!(
            matches!(
                r["error"]["code"].as_str(),
                Some("APPROVAL_INVALID" | "DUPLICATE_CALL")
            ),
            "{r}"
        );
    }
    let (_, stdout, _) = run_cli(t.cli().args(["audit", "--json"]));
    let consumed = json(&stdout)
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["kind"] == "approval_consumed")
        .count();
    assert_eq!(consumed, 1);
}

/// Runs `toolwarden ARGS` on a pseudo-terminal, typing `answer` at the prompt.
fn on_a_terminal(t: &TestHost, args: &str, answer: &str) -> (i32, String) {
    crate::harness::on_a_terminal(t.command("script"), args, answer)
}

#[test]
fn on_a_terminal_call_shows_the_details_and_asks_default_no() {
    let t = TestHost::new(&[CALC]).config(ASK_CALC);
    let args = format!("call calc '{ADD}'");
    let (code, out) = on_a_terminal(&t, &args, "y\n");
    assert!(
        out.contains("Run it once? [y/N]") && out.contains("a person checks the numbers"),
        "{out}"
    );
    assert_eq!(code, 0, "{out}");
    assert!(out.trim_end().ends_with("42"), "{out}");
    let (code, out) = on_a_terminal(&t, &args, "\n");
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("APPROVAL_DENIED") && out.contains("declined at the terminal prompt"),
        "{out}"
    );
    let (_, stdout, _) = run_cli(t.cli().args(["approvals", "list", "--json"]));
    let states: Vec<String> = json(&stdout)
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["state"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(states, ["denied", "consumed"]);
}
