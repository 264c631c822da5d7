//! Plugins that ask a person (the `ask` import): a question stops the call,
//! the answers run it again from the start, an answer that does not fit
//! the form never reaches the plugin, a malformed question is the plugin's
//! defect, and the audit keeps what was asked with the answer masked.

use crate::harness::{TestHost, assert_code, audit, on_a_terminal, outcome_of, run_cli, runtime};
use serde_json::{Value, json};
use toolwarden::{Answer, Answers, CallRequest, CallResult, Controller, ErrorCode, Status};
use toolwarden_tests::{CALC, CONFORMANCE, HOSTILE};

fn ask(host: &Controller, tool: &str, args: Value, answers: &[(&str, Answer)]) -> CallResult {
    let mut request = CallRequest::new(tool, args.to_string());
    request.answers = answers
        .iter()
        .map(|(key, answer)| (key.to_string(), answer.clone()))
        .collect::<Answers>();
    runtime().block_on(host.handle(request))
}

fn accepted(content: Value) -> Answer {
    Answer::Accepted(content)
}

/// The keys of the questions a call stopped at, in the order asked.
fn keys(result: &CallResult) -> Vec<&str> {
    result.questions.iter().map(|q| q.key.as_str()).collect()
}

const GREET: &str = "test_input_required_result_elicitation";

#[test]
fn a_question_stops_the_call_and_the_answer_runs_it_again() {
    let t = TestHost::new(&[CONFORMANCE]);
    let host = t.controller();
    let asked = ask(&host, GREET, json!({}), &[]);
    assert_eq!(asked.code(), Some(ErrorCode::InputRequired), "{asked:#?}");
    assert_eq!(asked.status, Status::Error);
    let [question] = asked.questions.as_slice() else {
        panic!("the result carries the one question: {asked:#?}");
    };
    assert_eq!(question.key, "user_name");
    assert_eq!(question.message, "What is your name?");
    assert_eq!(question.form["required"], json!(["name"]));
    let error = asked.error.as_ref().unwrap();
    assert!(
        error.message.contains("user_name") && error.message.contains("What is your name?"),
        "{error:?}"
    );

    let answered = ask(
        &host,
        GREET,
        json!({}),
        &[("user_name", accepted(json!({"name": "Ada"})))],
    );
    assert_eq!(answered.status, Status::Ok, "{answered:#?}");
    assert_eq!(answered.content.as_deref(), Some("Hello, Ada!"));
    assert!(answered.questions.is_empty());

    // The audit keeps each run: the question without an answer where the
    // call stopped, with its answer where it went on.
    let questions = |result: &CallResult| -> Vec<Value> {
        outcome_of(&host, &result.call_id);
        audit(&host, &result.call_id)
            .into_iter()
            .filter(|r| r.kind == "question")
            .map(|r| r.data)
            .collect()
    };
    let stopped = questions(&asked);
    assert_eq!(stopped.len(), 1, "{stopped:?}");
    assert_eq!(stopped[0]["key"], "user_name");
    assert!(stopped[0].get("answer").is_none(), "{stopped:?}");
    let went_on = questions(&answered);
    assert_eq!(went_on[0]["answer"]["action"], "accepted", "{went_on:?}");
}

#[test]
fn a_question_is_asked_once_per_round_until_every_one_is_answered() {
    let t = TestHost::new(&[CONFORMANCE]);
    let host = t.controller();
    let tool = "test_input_required_result_multi_round";
    let step1 = ("step1", accepted(json!({"name": "Ada"})));
    let first = ask(&host, tool, json!({}), &[]);
    assert_eq!(keys(&first), ["step1"]);
    let second = ask(&host, tool, json!({}), std::slice::from_ref(&step1));
    assert_eq!(keys(&second), ["step2"]);
    let done = ask(
        &host,
        tool,
        json!({}),
        &[step1, ("step2", accepted(json!({"color": "blue"})))],
    );
    assert_eq!(done.content.as_deref(), Some("Ada likes blue"), "{done:#?}");
}

#[test]
fn an_answer_that_does_not_fit_the_form_never_reaches_the_plugin() {
    let t = TestHost::new(&[CONFORMANCE, CALC]);
    let host = t.controller();
    for wrong in [
        json!({"name": 5}),
        json!({}),
        json!({"name": "Ada", "admin": true}),
        json!("Ada"),
    ] {
        let r = ask(
            &host,
            GREET,
            json!({}),
            &[("user_name", accepted(wrong.clone()))],
        );
        assert_eq!(
            r.code(),
            Some(ErrorCode::InputRequired),
            "{wrong} must be asked again: {r:#?}"
        );
        assert_eq!(keys(&r), ["user_name"]);
    }
    // Answers to questions the tool did not ask change nothing.
    let r = ask(
        &host,
        GREET,
        json!({}),
        &[
            ("user_name", accepted(json!({"name": "Ada"}))),
            ("other", accepted(json!({"x": 1}))),
        ],
    );
    assert_eq!(r.content.as_deref(), Some("Hello, Ada!"), "{r:#?}");
    // Declining is an answer: the tool decides what it means.
    let r = ask(&host, GREET, json!({}), &[("user_name", Answer::Declined)]);
    assert_code(&host, &r, ErrorCode::ToolFailed);
    assert!(r.error.unwrap().message.contains("declined"));
}

fn hostile_ask(
    host: &Controller,
    key: &str,
    form: Value,
    count: u32,
    answers: &[(&str, Answer)],
) -> CallResult {
    hostile_ask_with(host, json!({"key": key, "count": count}), form, answers)
}

/// `hostile_ask` with `args` (its form set from `form`).
fn hostile_ask_with(
    host: &Controller,
    mut args: Value,
    form: Value,
    answers: &[(&str, Answer)],
) -> CallResult {
    args["form"] = match form {
        Value::String(text) => Value::String(text),
        other => Value::String(other.to_string()),
    };
    ask(host, "hostile_ask", args, answers)
}

#[test]
fn a_malformed_question_is_the_plugins_defect_and_the_host_keeps_serving() {
    let t = TestHost::new(&[HOSTILE, CALC]);
    let host = t.controller();
    let fine = json!({"type": "object", "properties": {"ok": {"type": "boolean"}}});
    let nested =
        json!({"type": "object", "properties": {"a": {"type": "object", "properties": {}}}});
    let linked = json!({"type": "object", "properties": {"a": {"$ref": "#/x"}}});
    let remote =
        json!({"type": "object", "properties": {"a": {"type": "string", "format": "path"}}});
    let huge = json!({"type": "object", "properties": {"a": {"type": "string", "description": "x".repeat(20_000)}}});
    let bad_default =
        json!({"type": "object", "properties": {"n": {"type": "integer", "default": "ten"}}});
    let cases = [
        ("Bad Key", fine.clone(), "key"),
        ("", fine.clone(), "key"),
        (&*"k".repeat(65), fine.clone(), "key"),
        ("k", json!("{not json"), "not JSON"),
        ("k", json!({"type": "array"}), "form"),
        ("k", nested, "form"),
        ("k", linked, "form"),
        ("k", remote, "form"),
        ("k", huge, "bytes"),
        ("k", bad_default, "default"),
    ];
    for (key, form, says) in cases {
        let r = hostile_ask(&host, key, form.clone(), 1, &[]);
        assert_code(&host, &r, ErrorCode::ToolCrashed);
        let message = &r.error.as_ref().unwrap().message;
        assert!(
            message.contains("malformed question") && message.contains(says),
            "{key:?} {form}: {message}"
        );
        assert!(
            r.questions.is_empty(),
            "a malformed question is never shown to anyone"
        );
    }
    // Asking more than 16 questions in one run is refused, however many
    // were answered.
    let answers: Vec<(String, Answer)> = (0..20)
        .map(|i| (format!("q{i}"), Answer::Declined))
        .collect();
    let answers: Vec<(&str, Answer)> = answers
        .iter()
        .map(|(k, a)| (k.as_str(), a.clone()))
        .collect();
    let r = hostile_ask(&host, "q", fine.clone(), 16, &answers);
    assert_eq!(r.value, Some(json!({"result": 0})), "{r:#?}");
    let r = hostile_ask(&host, "q", fine, 20, &answers);
    assert_code(&host, &r, ErrorCode::ToolCrashed);
    assert!(r.error.unwrap().message.contains("16"));
}

#[test]
fn questions_asked_at_once_stop_the_call_together_until_each_is_answered() {
    let t = TestHost::new(&[CONFORMANCE]);
    let host = t.controller();
    let both = ask(&host, "multi_input", json!({}), &[]);
    assert_eq!(both.code(), Some(ErrorCode::InputRequired), "{both:#?}");
    assert_eq!(keys(&both), ["first", "second"]);
    let message = &both.error.as_ref().unwrap().message;
    assert!(
        message.contains("2 questions at once") && message.contains("Second: your name?"),
        "{message}"
    );
    // Answered out of order, one at a time: the other is still asked.
    let second = ("second", accepted(json!({"name": "Bo", "confirm": true})));
    let one_left = ask(
        &host,
        "multi_input",
        json!({}),
        std::slice::from_ref(&second),
    );
    assert_eq!(keys(&one_left), ["first"]);
    // An answer that does not fit its form counts as none.
    let unfit = ask(
        &host,
        "multi_input",
        json!({}),
        &[second.clone(), ("first", accepted(json!({"name": 7})))],
    );
    assert_eq!(keys(&unfit), ["first"]);
    let done = ask(
        &host,
        "multi_input",
        json!({}),
        &[second, ("first", accepted(json!({"name": "Al"})))],
    );
    assert_eq!(done.status, Status::Ok, "{done:#?}");
    assert_eq!(done.content.as_deref(), Some("Al and Bo"));
    // The audit keeps both questions of the run that stopped, unanswered.
    outcome_of(&host, &both.call_id);
    let asked: Vec<Value> = audit(&host, &both.call_id)
        .into_iter()
        .filter(|r| r.kind == "question")
        .map(|r| r.data)
        .collect();
    assert_eq!(asked.len(), 2, "{asked:?}");
    assert!(asked.iter().all(|q| q.get("answer").is_none()), "{asked:?}");
}

#[test]
fn a_malformed_batch_of_questions_is_the_plugins_defect() {
    let t = TestHost::new(&[HOSTILE, CALC]);
    let host = t.controller();
    let fine = json!({"type": "object", "properties": {"ok": {"type": "boolean"}}});
    let twice = hostile_ask_with(
        &host,
        json!({"key": "k", "count": 2, "batch": true, "same_key": true}),
        fine.clone(),
        &[],
    );
    assert_code(&host, &twice, ErrorCode::ToolCrashed);
    assert!(
        twice.error.as_ref().unwrap().message.contains("`k` twice"),
        "{twice:#?}"
    );
    // One malformed question spoils the batch: none of it is shown.
    let spoiled = hostile_ask_with(
        &host,
        json!({"key": "Bad Key", "count": 3, "batch": true}),
        fine.clone(),
        &[],
    );
    assert_code(&host, &spoiled, ErrorCode::ToolCrashed);
    assert!(spoiled.questions.is_empty());
    // The limit on questions per run counts a batch whole.
    let many = hostile_ask_with(
        &host,
        json!({"key": "q", "count": 17, "batch": true}),
        fine.clone(),
        &[],
    );
    assert_code(&host, &many, ErrorCode::ToolCrashed);
    assert!(many.error.unwrap().message.contains("16"));
    let sixteen = hostile_ask_with(
        &host,
        json!({"key": "q", "count": 16, "batch": true}),
        fine,
        &[("q3", Answer::Declined)],
    );
    assert_eq!(sixteen.questions.len(), 15, "{sixteen:#?}");
    assert!(sixteen.questions.iter().all(|q| q.key != "q3"));
}

#[test]
fn an_answer_is_masked_in_the_audit_like_arguments() {
    let t = TestHost::new(&[HOSTILE]);
    let host = t.controller();
    let form = json!({"type": "object", "properties": {"password": {"type": "string"}, "note": {"type": "string"}}});
    let r = hostile_ask(
        &host,
        "login",
        form,
        1,
        &[(
            "login",
            accepted(json!({"password": "hunter2", "note": "plain"})),
        )],
    );
    assert_eq!(r.value, Some(json!({"result": 1})), "{r:#?}");
    outcome_of(&host, &r.call_id);
    let records = serde_json::to_string(&audit(&host, &r.call_id)).unwrap();
    assert!(!records.contains("hunter2"), "{records}");
    assert!(
        records.contains("[REDACTED]") && records.contains("plain"),
        "{records}"
    );
    let (code, out, _) = run_cli(t.cli().args(["audit", "verify"]));
    assert_eq!(code, 0, "{out}");
}

#[test]
fn the_cli_asks_on_a_terminal_and_fails_closed_elsewhere() {
    let t = TestHost::new(&[CONFORMANCE]);
    let args = format!("call {GREET} '{{}}'");
    let (code, out) = on_a_terminal(t.command("script"), &args, "y\nAda\n");
    let asked = format!(
        "Question from the tool `{GREET}` (plugin `conformance.wasm`), not from toolwarden:"
    );
    assert!(
        out.contains(&asked) && out.contains("What is your name?"),
        "the host names who asks: {out}"
    );
    assert_eq!(code, 0, "{out}");
    assert!(out.trim_end().ends_with("Hello, Ada!"), "{out}");

    let (code, out) = on_a_terminal(t.command("script"), &args, "n\n");
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("TOOL_FAILED") && out.contains("declined"),
        "{out}"
    );

    let (code, stdout, stderr) = run_cli(t.cli().args(["call", GREET, "{}"]));
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(stdout.contains("INPUT_REQUIRED"), "{stdout}");
    assert!(
        stderr.contains(&asked)
            && stderr.contains("What is your name?")
            && stderr.contains("\"name\""),
        "{stderr}"
    );
    let (_, stdout, _) = run_cli(t.cli().args(["call", "--json", GREET, "{}"]));
    let result: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(result["error"]["code"], "INPUT_REQUIRED");
    assert_eq!(result["questions"][0]["key"], "user_name");
    assert_eq!(result["questions"][0]["tool"], GREET);
    assert_eq!(result["questions"][0]["plugin"], "conformance.wasm");
}
