//! Prompts (contract 0.3.0), governed like calls: listed and got only as
//! the policy's prompt rules allow (default deny) and the session's profile
//! offers, arguments checked before the plugin runs, rendered in a sandbox
//! with no filesystem under a deadline and the output limit, every
//! `prompts/get` in the audit log. Real plugins: the conformance fixture
//! and `prompt_probe`.

use crate::harness::{TestHost, records_until, runtime, started};
use std::time::{Duration, Instant};
use toolwarden::{Block, Controller, ErrorCode, OfferRequest};
use toolwarden_tests::{CONFORMANCE, PROMPT_PROBE};

const ALLOW_PROMPTS: &str = "[[rule]]\nprompts = [\"*\"]\ndecision = \"allow\"\nreason = \"the tests' prompts are harmless\"\n";

fn get(
    host: &Controller,
    name: &str,
    args: &[(&str, &str)],
) -> Result<toolwarden::prompt::RenderedPrompt, toolwarden::CallError> {
    let mut request = OfferRequest::new(name);
    request.arguments = args
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    runtime().block_on(host.get_prompt(request))
}

fn text_of(block: &Block) -> &str {
    match block {
        Block::Text { text } => text,
        other => panic!("not text: {other:?}"),
    }
}

#[test]
fn a_plugin_built_against_0_3_0_offers_its_prompts() {
    let (_t, host) = started(&[CONFORMANCE], ALLOW_PROMPTS);
    let registry = host.registry();
    let plugin = &registry.plugins()[0];
    assert_eq!(plugin.contract(), toolwarden::Contract::V0_3);
    let names: Vec<String> = host.offered_prompts(None, None, |p| p.spec().name.clone());
    assert_eq!(
        names,
        [
            "test_input_required_result_prompt",
            "test_prompt_with_arguments",
            "test_prompt_with_embedded_resource",
            "test_prompt_with_image",
            "test_simple_prompt"
        ]
    );
    let with_args = plugin
        .prompts()
        .iter()
        .find(|p| p.name == "test_prompt_with_arguments")
        .unwrap();
    let args: Vec<(&str, bool)> = with_args
        .arguments
        .iter()
        .map(|a| (a.name.as_str(), a.required))
        .collect();
    assert_eq!(args, [("arg1", true), ("arg2", true)]);
}

#[test]
fn a_prompt_is_denied_unless_a_rule_allows_it_and_every_request_is_recorded() {
    // Tools allowed, prompts not: the default holds for prompts.
    let (_t, host) = started(&[CONFORMANCE], crate::harness::ALLOW_ALL);
    assert!(
        host.offered_prompts(None, None, |p| p.spec().name.clone())
            .is_empty()
    );
    let denied = get(&host, "test_simple_prompt", &[]).unwrap_err();
    assert_eq!(denied.code, ErrorCode::PolicyDenied);
    assert!(
        denied
            .message
            .contains("prompts = [\"test_simple_prompt\"]"),
        "{denied:?}"
    );
    let trail = records_until(&host, "prompt:test_simple_prompt", "refused");
    let kinds: Vec<&str> = trail.iter().map(|r| r.kind.as_str()).collect();
    assert_eq!(kinds, ["call", "policy", "refused"], "{trail:#?}");
    assert_eq!(trail[1].data["verdict"], "deny");

    // One prompt allowed, another denied by name: the deny wins where both match.
    let config = "[[rule]]\nprompts = [\"test_*\"]\ndecision = \"allow\"\nreason = \"test prompts\"\n\
                  [[rule]]\nprompts = [\"test_prompt_with_image\"]\ndecision = \"deny\"\nreason = \"no images\"\n";
    let (_t, host) = started(&[CONFORMANCE], config);
    let listed = host.offered_prompts(None, None, |p| p.spec().name.clone());
    assert!(
        !listed.contains(&"test_prompt_with_image".to_owned()),
        "{listed:?}"
    );
    let image = get(&host, "test_prompt_with_image", &[]).unwrap_err();
    assert_eq!(image.code, ErrorCode::PolicyDenied);
    assert!(image.message.contains("no images"), "{image:?}");
    let simple = get(&host, "test_simple_prompt", &[]).unwrap();
    assert_eq!(
        text_of(&simple.messages[0].content),
        "This is a simple prompt for testing."
    );
    let trail = records_until(&host, "prompt:test_simple_prompt", "outcome");
    let kinds: Vec<&str> = trail.iter().map(|r| r.kind.as_str()).collect();
    assert_eq!(kinds, ["call", "policy", "outcome"], "{trail:#?}");
    assert_eq!(trail[2].data["status"], "ok");
    assert_eq!(trail[2].data["content"][0]["type"], "text");
    assert_eq!(
        trail[2].data["content"][0]["bytes"],
        "This is a simple prompt for testing.".len()
    );
}

#[test]
fn a_prompt_rule_may_not_say_what_only_calls_have() {
    for (config, expected) in [
        (
            "[[rule]]\nprompts = [\"x\"]\ndecision = \"ask\"\nreason = \"r\"\n",
            "cannot `ask`",
        ),
        (
            "[[rule]]\nprompts = [\"x\"]\ntools = [\"y\"]\ndecision = \"allow\"\nreason = \"r\"\n",
            "`tools`",
        ),
        (
            "[[rule]]\nprompts = [\"x\"]\nwhen = { \"/a\" = \"b\" }\ndecision = \"deny\"\nreason = \"r\"\n",
            "`when`",
        ),
        (
            "[[rule]]\nprompts = []\ndecision = \"deny\"\nreason = \"r\"\n",
            "empty",
        ),
    ] {
        let error = TestHost::new(&[]).config(config).start().unwrap_err();
        assert!(error.to_string().contains(expected), "{config}: {error}");
    }
}

#[test]
fn a_prompt_rule_decides_no_tool_call() {
    // A rule allowing every prompt allows no tool.
    let (_t, host) = started(&[PROMPT_PROBE], ALLOW_PROMPTS);
    let r = crate::harness::call(&host, "probe_noop", "{}");
    crate::harness::assert_code(&host, &r, ErrorCode::PolicyDenied);
}

#[test]
fn arguments_are_checked_before_the_plugin_renders() {
    let (_t, host) = started(&[PROMPT_PROBE], ALLOW_PROMPTS);
    let echoed = get(&host, "probe_echo", &[("topic", "rust")]).unwrap();
    assert_eq!(
        text_of(&echoed.messages[0].content),
        "topic=rust tone=plain"
    );
    let missing = get(&host, "probe_echo", &[("tone", "dry")]).unwrap_err();
    assert_eq!(missing.code, ErrorCode::InvalidArgs);
    assert!(missing.message.contains("topic"), "{missing:?}");
    let unknown = get(&host, "probe_echo", &[("topic", "a"), ("mood", "b")]).unwrap_err();
    assert_eq!(unknown.code, ErrorCode::InvalidArgs);
    assert!(unknown.message.contains("`mood`") && unknown.message.contains("topic, tone"));
    let nothing = get(&host, "probe_nothing", &[]).unwrap_err();
    assert_eq!(nothing.code, ErrorCode::UnknownTool);
    assert!(nothing.message.contains("probe_echo"), "{nothing:?}");
}

#[test]
fn a_rendering_gets_no_filesystem_no_endless_time_and_no_unbounded_output() {
    let (t, host) = started(&[PROMPT_PROBE], ALLOW_PROMPTS);
    t.file("secret.txt", "workspace content");
    let peek = get(&host, "probe_peek", &[]).unwrap();
    assert_eq!(text_of(&peek.messages[0].content), "directories seen: []");

    let began = Instant::now();
    let spin = get(&host, "probe_spin", &[]).unwrap_err();
    assert!(
        matches!(spin.code, ErrorCode::Timeout | ErrorCode::OutOfFuel),
        "{spin:?}"
    );
    assert!(began.elapsed() < Duration::from_secs(10));

    let flood = get(&host, "probe_flood", &[]).unwrap_err();
    assert_eq!(flood.code, ErrorCode::OutputTooLarge, "{flood:?}");
    let empty = get(&host, "probe_empty", &[]).unwrap_err();
    assert_eq!(empty.code, ErrorCode::InvalidToolOutput, "{empty:?}");
    let trail = records_until(&host, "prompt:probe_flood", "outcome");
    let outcome = trail.iter().find(|r| r.kind == "outcome").unwrap();
    assert_eq!(outcome.data["code"], "OUTPUT_TOO_LARGE");
    crate::harness::assert_still_serves(&host);
}

#[test]
fn a_profile_offers_only_the_prompts_it_names() {
    let config = format!(
        "{ALLOW_PROMPTS}[profile.review]\ntools = [\"*\"]\nprompts = [\"test_simple_*\"]\n\
         [profile.plain]\ntools = [\"*\"]\n"
    );
    let (_t, host) = started(&[CONFORMANCE], &config);
    let review = host.offered_prompts(Some("review"), None, |p| p.spec().name.clone());
    assert_eq!(review, ["test_simple_prompt"]);
    assert!(
        host.offered_prompts(Some("plain"), None, |p| p.spec().name.clone())
            .is_empty()
    );
    let mut request = OfferRequest::new("test_prompt_with_image");
    request.profile = Some("review".into());
    let hidden = runtime().block_on(host.get_prompt(request)).unwrap_err();
    assert_eq!(hidden.code, ErrorCode::UnknownTool);
    assert!(hidden.message.contains("test_simple_prompt"), "{hidden:?}");
}

#[test]
fn completion_comes_from_the_plugin_and_only_for_an_allowed_prompt() {
    let complete = |host: &Controller, value: &str| {
        runtime()
            .block_on(host.complete_prompt(
                OfferRequest::new("test_prompt_with_arguments"),
                "arg1",
                value,
            ))
            .unwrap()
    };
    let (_t, host) = started(&[CONFORMANCE], ALLOW_PROMPTS);
    assert_eq!(complete(&host, "par"), ["paris", "park", "party"]);
    assert_eq!(complete(&host, "pari"), ["paris"]);
    let (_t, denied) = started(&[CONFORMANCE], crate::harness::ALLOW_ALL);
    assert!(complete(&denied, "par").is_empty());
}

#[test]
fn two_plugins_may_not_serve_one_prompt_name() {
    let error = TestHost::new(&[CONFORMANCE, PROMPT_PROBE])
        .config(ALLOW_PROMPTS)
        .start()
        .unwrap_err();
    assert_eq!(error.code(), "DUPLICATE_PROMPT", "{error}");
    assert!(error.to_string().contains("test_simple_prompt"), "{error}");
}

#[test]
fn a_prompt_that_asks_stops_at_its_question_and_renders_with_the_answer() {
    let (_t, host) = started(&[CONFORMANCE], ALLOW_PROMPTS);
    let stopped = get(&host, "test_input_required_result_prompt", &[]).unwrap_err();
    assert_eq!(stopped.code, ErrorCode::InputRequired, "{stopped:?}");
    let [question] = stopped.questions.as_slice() else {
        panic!("one question: {stopped:?}");
    };
    assert_eq!(question.key, "user_context");
    assert_eq!(question.plugin, "conformance.wasm");
    assert_eq!(question.form["required"], serde_json::json!(["context"]));
    // The question is in the prompt's audit trail, unanswered.
    let asked: Vec<_> = records_until(
        &host,
        "prompt:test_input_required_result_prompt",
        "question",
    )
    .into_iter()
    .filter(|r| r.kind == "question")
    .collect();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0].data["key"], "user_context");
    assert!(asked[0].data.get("answer").is_none());

    let mut request = OfferRequest::new("test_input_required_result_prompt");
    let answers: toolwarden::Answers = [(
        "user_context".to_string(),
        toolwarden::Answer::Accepted(serde_json::json!({"context": "a code review"})),
    )]
    .into_iter()
    .collect();
    request.answers = std::sync::Arc::new(answers);
    let rendered = runtime().block_on(host.get_prompt(request)).unwrap();
    assert_eq!(
        text_of(&rendered.messages[0].content),
        "Answer with this context in mind: a code review"
    );
    // An answer that does not fit the form is asked for again.
    let mut request = OfferRequest::new("test_input_required_result_prompt");
    let wrong: toolwarden::Answers = [(
        "user_context".to_string(),
        toolwarden::Answer::Accepted(serde_json::json!({"context": 5})),
    )]
    .into_iter()
    .collect();
    request.answers = std::sync::Arc::new(wrong);
    let again = runtime().block_on(host.get_prompt(request)).unwrap_err();
    assert_eq!(again.code, ErrorCode::InputRequired);
}
