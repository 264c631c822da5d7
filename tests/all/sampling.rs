//! Plugins that ask the client's model or its roots (the `client` import of
//! contract 0.3.0): sampling is refused unless a policy rule allows it for
//! the tool, held to the rule's caps per call and per session, and waits
//! for the person's yes to each request under an `ask` rule; an allowed
//! request stops the call like a question and its answer runs it again;
//! the audit keeps the request and only a digest of the answer; a
//! malformed request is the plugin's defect.

use crate::harness::{ALLOW_ALL, TestHost, audit, outcome_of, runtime};
use serde_json::{Value, json};
use toolwarden::call::SessionId;
use toolwarden::question::Need;
use toolwarden::sampling::{Completion, Part, Role, Root};
use toolwarden::{Answer, Answers, CallRequest, CallResult, Controller, ErrorCode, Status};
use toolwarden_tests::{CONFORMANCE, HOSTILE};

fn call(
    host: &Controller,
    tool: &str,
    args: Value,
    session: &str,
    answers: &Answers,
) -> CallResult {
    let mut request =
        CallRequest::new(tool, args.to_string()).in_session(SessionId::from(session.to_owned()));
    request.answers = answers.clone();
    runtime().block_on(host.handle(request))
}

/// A call with no answers yet.
fn asked(host: &Controller, tool: &str, args: Value, session: &str) -> CallResult {
    call(host, tool, args, session, &Answers::default())
}

fn given(pairs: Vec<(&str, Answer)>) -> Answers {
    pairs
        .into_iter()
        .map(|(key, answer)| (key.to_string(), answer))
        .collect()
}

fn answered(text: &str) -> Answer {
    Answer::Sampled(Completion {
        role: Role::Assistant,
        content: vec![Part::Text { text: text.into() }],
        model: "test-model".into(),
        stop_reason: Some("endTurn".into()),
    })
}

fn allowing(rule: &str) -> String {
    format!(
        "{ALLOW_ALL}\n[[rule]]\nsampling = [\"test_*\", \"hostile_*\"]\ndecision = \"allow\"\n{rule}\nreason = \"tests sample\"\n"
    )
}

const CAPITAL: &str = "test_input_required_result_sampling";

#[test]
fn without_a_rule_no_request_leaves_and_the_tool_is_told_why() {
    let t = TestHost::new(&[CONFORMANCE]);
    let host = t.controller();
    let r = asked(&host, CAPITAL, json!({}), "s");
    // Nothing stopped the call to ask the client: the tool got the refusal
    // and failed with it.
    assert!(r.questions.is_empty(), "{r:#?}");
    assert_eq!(r.code(), Some(ErrorCode::ToolFailed), "{r:#?}");
    let message = &r.error.as_ref().unwrap().message;
    assert!(
        message.contains("sampling refused")
            && message.contains("sampling = [\"test_input_required_result_sampling\"]"),
        "the refusal names the rule to add: {message}"
    );
    // A deny rule beats an allow rule.
    let t = TestHost::new(&[CONFORMANCE]).config(&format!(
        "{}\n[[rule]]\nsampling = [\"test_input_*\"]\ndecision = \"deny\"\nreason = \"no model for these\"\n",
        allowing("")
    ));
    let r = asked(&t.controller(), CAPITAL, json!({}), "s");
    assert_eq!(r.code(), Some(ErrorCode::ToolFailed), "{r:#?}");
    assert!(r.questions.is_empty());
}

#[test]
fn an_allowed_request_stops_the_call_and_its_answer_runs_it_again() {
    let t = TestHost::new(&[CONFORMANCE]).config(&allowing(""));
    let host = t.controller();
    let asked = asked(&host, CAPITAL, json!({}), "s");
    assert_eq!(asked.code(), Some(ErrorCode::InputRequired), "{asked:#?}");
    let [question] = asked.questions.as_slice() else {
        panic!("one request: {asked:#?}");
    };
    assert_eq!(question.key, "capital_question");
    let Need::Sample(request) = &question.need else {
        panic!("a sampling request: {question:#?}");
    };
    assert_eq!(request.max_tokens, 100);
    assert_eq!(
        serde_json::to_value(&request.messages).unwrap(),
        json!([{"role": "user", "content": {"type": "text", "text": "What is the capital of France?"}}])
    );

    let answers = given(vec![("capital_question", answered("Paris"))]);
    let done = call(&host, CAPITAL, json!({}), "s", &answers);
    assert_eq!(done.status, Status::Ok, "{done:#?}");
    assert_eq!(done.content.as_deref(), Some("The model says: Paris"));

    // The audit keeps the request whole and the answer only by digest.
    outcome_of(&host, &done.call_id);
    let records: Vec<Value> = audit(&host, &done.call_id)
        .into_iter()
        .filter(|r| r.kind == "question")
        .map(|r| r.data)
        .collect();
    let [record] = records.as_slice() else {
        panic!("one request recorded: {records:?}");
    };
    assert_eq!(record["kind"], "sampling");
    assert_eq!(record["request"]["maxTokens"], 100);
    let kept = record["answer"]["content"].clone();
    assert_eq!(kept["model"], "test-model");
    assert_eq!(kept["sha256"].as_str().map(str::len), Some(64), "{kept}");
    assert!(!record.to_string().contains("Paris"), "{record}");
}

#[test]
fn an_answer_of_the_wrong_kind_is_asked_for_again() {
    let t = TestHost::new(&[CONFORMANCE]).config(&allowing(""));
    let host = t.controller();
    for wrong in [
        Answer::Accepted(json!({"text": "Paris"})),
        Answer::Roots(vec![]),
    ] {
        let answers = given(vec![("capital_question", wrong)]);
        let r = call(&host, CAPITAL, json!({}), "s", &answers);
        assert_eq!(r.code(), Some(ErrorCode::InputRequired), "{r:#?}");
    }
    // A client's refusal reaches the tool as an error it can report.
    let answers = given(vec![(
        "capital_question",
        Answer::Failed("the person rejected the request".into()),
    )]);
    let r = call(&host, CAPITAL, json!({}), "s", &answers);
    assert_eq!(r.code(), Some(ErrorCode::ToolFailed), "{r:#?}");
    assert!(
        r.error.unwrap().message.contains("the person rejected"),
        "the tool sees why"
    );
}

#[test]
fn the_caps_per_call_and_per_session_hold() {
    // 100 tokens asked, 99 allowed per call: refused before it leaves.
    let t = TestHost::new(&[CONFORMANCE]).config(&allowing("max_tokens = 99"));
    let r = asked(&t.controller(), CAPITAL, json!({}), "s");
    assert_eq!(r.code(), Some(ErrorCode::ToolFailed), "{r:#?}");
    assert!(r.error.unwrap().message.contains("max_tokens"));

    // Three requests at once, two allowed a call: two go out, the third is
    // refused, and stays refused once the two are answered.
    let t = TestHost::new(&[HOSTILE]).config(&allowing("max_requests = 2"));
    let host = t.controller();
    let three = json!({"count": 3, "max_tokens": 10, "batch": true, "fail": true});
    let r = asked(&host, "hostile_sample", three.clone(), "s");
    assert_eq!(r.code(), Some(ErrorCode::InputRequired), "{r:#?}");
    let keys: Vec<&str> = r.questions.iter().map(|q| q.key.as_str()).collect();
    assert_eq!(keys, ["sample0", "sample1"]);
    let answers = given(vec![("sample0", answered("a")), ("sample1", answered("b"))]);
    let r = call(&host, "hostile_sample", three, "s", &answers);
    assert_eq!(r.code(), Some(ErrorCode::ToolFailed), "{r:#?}");
    assert!(r.error.unwrap().message.contains("max_requests"));

    // 250 tokens a session: two requests of 100 go out, the third does not,
    // in that session only.
    let t = TestHost::new(&[CONFORMANCE]).config(&allowing("max_session_tokens = 250"));
    let host = t.controller();
    for _ in 0..2 {
        let r = asked(&host, CAPITAL, json!({}), "a");
        assert_eq!(r.code(), Some(ErrorCode::InputRequired), "{r:#?}");
    }
    let r = asked(&host, CAPITAL, json!({}), "a");
    assert_eq!(r.code(), Some(ErrorCode::ToolFailed), "{r:#?}");
    assert!(r.error.unwrap().message.contains("max_session_tokens"));
    let r = asked(&host, CAPITAL, json!({}), "b");
    assert_eq!(r.code(), Some(ErrorCode::InputRequired), "{r:#?}");
    // An answered request is not paid for again when its call runs again.
    let answers = given(vec![("capital_question", answered("Paris"))]);
    let r = call(&host, CAPITAL, json!({}), "a", &answers);
    assert_eq!(r.status, Status::Ok, "{r:#?}");

    // The session's count is the store's: a restarted host (and so another
    // host of a shared store) goes on from it, and forgets no session.
    drop(host);
    let host = t.controller();
    let r = asked(&host, CAPITAL, json!({}), "a");
    assert_eq!(r.code(), Some(ErrorCode::ToolFailed), "{r:#?}");
    assert!(r.error.unwrap().message.contains("max_session_tokens"));
    let r = asked(&host, CAPITAL, json!({}), "b");
    assert_eq!(r.code(), Some(ErrorCode::InputRequired), "{r:#?}");
    let r = asked(&host, CAPITAL, json!({}), "b");
    assert_eq!(
        r.code(),
        Some(ErrorCode::ToolFailed),
        "b asked 100 before: {r:#?}"
    );
}

#[test]
fn several_requests_go_out_together_and_each_answer_reaches_its_own() {
    let t = TestHost::new(&[CONFORMANCE]).config(&allowing(""));
    let host = t.controller();
    let tool = "test_input_required_result_multiple_inputs";
    let r = asked(&host, tool, json!({}), "s");
    let kinds: Vec<&str> = r.questions.iter().map(|q| q.need.capability()).collect();
    assert_eq!(kinds, ["elicitation", "sampling", "roots"], "{r:#?}");
    let answers = given(vec![
        ("user_name", Answer::Accepted(json!({"name": "Ada"}))),
        ("greeting", answered("Hello there!")),
        (
            "client_roots",
            Answer::Roots(vec![Root {
                uri: "file:///home/ada/project".into(),
                name: None,
            }]),
        ),
    ]);
    let done = call(&host, tool, json!({}), "s", &answers);
    assert_eq!(
        done.content.as_deref(),
        Some("name: Ada; greeting: Hello there!; roots: file:///home/ada/project"),
        "{done:#?}"
    );
}

#[test]
fn sampling_rules_that_cannot_be_honoured_are_config_errors() {
    for (rule, says) in [
        (
            "[[rule]]\nprompts = [\"x\"]\ndecision = \"ask\"\nreason = \"r\"\n",
            "cannot `ask`",
        ),
        (
            "[[rule]]\nsampling = [\"x\"]\ndecision = \"deny\"\nmax_tokens = 5\nreason = \"r\"\n",
            "cap what a rule allowing `sampling` grants",
        ),
        (
            "[[rule]]\ntools = [\"x\"]\ndecision = \"allow\"\nmax_tokens = 5\nreason = \"r\"\n",
            "cap what a rule allowing `sampling` grants",
        ),
        (
            "[[rule]]\nsampling = [\"x\"]\ndecision = \"allow\"\nmax_requests = 0\nreason = \"r\"\n",
            "allows nothing",
        ),
        (
            "[[rule]]\nsampling = [\"x\"]\ntools = [\"x\"]\ndecision = \"allow\"\nreason = \"r\"\n",
            "has no place in it",
        ),
        (
            "[[rule]]\nsampling = [\"x\"]\nprompts = [\"x\"]\ndecision = \"allow\"\nreason = \"r\"\n",
            "not several",
        ),
    ] {
        let t = TestHost::new(&[CONFORMANCE]).config(rule);
        let error = t.start().err().map(|e| e.to_string()).unwrap_or_default();
        assert!(error.contains(says), "{rule}: {error}");
    }
}

#[test]
fn a_malformed_request_is_the_plugins_defect_and_nothing_is_sent() {
    let t = TestHost::new(&[HOSTILE]).config(&allowing(""));
    let host = t.controller();
    for args in [
        json!({"count": 1, "max_tokens": 10, "empty": true}),
        json!({"count": 1, "max_tokens": 0}),
        json!({"count": 1, "max_tokens": 10, "temperature": 3.0}),
        json!({"count": 1, "max_tokens": 10, "text": "x".repeat(300 << 10)}),
        json!({"count": 17, "max_tokens": 1, "batch": true}),
    ] {
        let r = asked(&host, "hostile_sample", args.clone(), "s");
        assert_eq!(r.code(), Some(ErrorCode::ToolCrashed), "{args}: {r:#?}");
        assert!(r.questions.is_empty(), "nothing is asked: {r:#?}");
    }
    // The host goes on serving, and a well-formed request still goes out.
    let r = asked(
        &host,
        "hostile_sample",
        json!({"count": 1, "max_tokens": 10}),
        "s",
    );
    assert_eq!(r.code(), Some(ErrorCode::InputRequired), "{r:#?}");
}

#[test]
fn an_ask_rule_waits_for_the_persons_yes_to_this_very_request() {
    let t = TestHost::new(&[CONFORMANCE, HOSTILE]).config(&format!(
        "{ALLOW_ALL}\n[[rule]]\nsampling = [\"test_*\", \"hostile_*\"]\ndecision = \"ask\"\nreason = \"a person sees each request\"\n"
    ));
    let host = t.controller();
    // First the host's own question, nothing for the model yet.
    let r = asked(&host, CAPITAL, json!({}), "s");
    let [approval] = r.questions.as_slice() else {
        panic!("the host's question alone: {r:#?}");
    };
    assert!(
        matches!(approval.need, Need::SamplingApproval(_)),
        "{approval:#?}"
    );
    assert!(
        approval
            .key
            .starts_with("toolwarden-sampling-capital_question-"),
        "{}",
        approval.key
    );
    assert!(
        approval
            .prompt()
            .starts_with("toolwarden approval: the tool `test_input_required_result_sampling`"),
        "the host speaks as itself: {}",
        approval.prompt()
    );
    let yes = Answer::Accepted(json!({"toolwarden_decision": "approve_once"}));
    let no = Answer::Accepted(json!({"toolwarden_decision": "deny"}));
    // Once allowed, the request goes out; with its answer the call ends.
    let r = call(
        &host,
        CAPITAL,
        json!({}),
        "s",
        &given(vec![(&approval.key, yes.clone())]),
    );
    assert_eq!(keys_of(&r), ["capital_question"], "{r:#?}");
    let r = call(
        &host,
        CAPITAL,
        json!({}),
        "s",
        &given(vec![
            (&approval.key, yes.clone()),
            ("capital_question", answered("Paris")),
        ]),
    );
    assert_eq!(r.status, Status::Ok, "{r:#?}");
    // A no, or no answer at all, refuses it; the tool is told.
    for refusal in [no, Answer::Declined] {
        let r = call(
            &host,
            CAPITAL,
            json!({}),
            "s",
            &given(vec![(&approval.key, refusal)]),
        );
        assert_eq!(r.code(), Some(ErrorCode::ToolFailed), "{r:#?}");
        assert!(r.error.unwrap().message.contains("did not allow"));
    }
    // A yes is for one request: another text under the same key is asked
    // about again.
    let first = asked(
        &host,
        "hostile_sample",
        json!({"count": 1, "max_tokens": 5, "text": "a"}),
        "s",
    );
    let key = first.questions[0].key.clone();
    let other = call(
        &host,
        "hostile_sample",
        json!({"count": 1, "max_tokens": 5, "text": "b"}),
        "s",
        &given(vec![(&key, yes)]),
    );
    assert!(
        matches!(other.questions[0].need, Need::SamplingApproval(_))
            && other.questions[0].key != key,
        "{other:#?}"
    );
}

fn keys_of(result: &CallResult) -> Vec<&str> {
    result.questions.iter().map(|q| q.key.as_str()).collect()
}
