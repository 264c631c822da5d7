//! Plugins built against an earlier contract keep loading and working. The
//! kept binaries in `tests/kept/` are never rebuilt (their SHA-256 is
//! checked), so a host change that breaks what a 0.1.0 plugin relies on
//! fails here.

use crate::harness::{TestHost, runtime};
use std::sync::{Arc, Mutex};
use toolwarden::{CallRequest, Effect, ErrorCode, FsNeed, ProgressSink, Risk, Status};

const KEPT_0_1_0: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/kept/contract-0.1.0.wasm");
const KEPT_0_1_0_SHA256: &str = "fc26a2d4b99089b40772e5fc137d29ce0cafad40ad4ce51e61f991514b8ead88";

#[test]
fn a_plugin_built_against_0_1_0_loads_with_its_spec_as_declared() {
    let t = TestHost::new(&[KEPT_0_1_0]);
    let host = t.controller();
    let registry = host.registry();
    let tool = registry
        .get("contract_read")
        .expect("the 0.1.0 tool is served");
    assert_eq!(
        tool.plugin().sha256(),
        KEPT_0_1_0_SHA256,
        "the kept binary was replaced"
    );
    let spec = tool.spec();
    assert_eq!(spec.title, "Contract 0.1.0 reader");
    let effects: Vec<Effect> = spec.effects.iter().collect();
    assert_eq!(effects, [Effect::ReadOnly, Effect::Idempotent]);
    assert_eq!(spec.risk, Risk::Safe);
    assert_eq!(spec.filesystem, FsNeed::ReadOnly);
    assert_eq!(spec.timeout_ms, Some(5_000));
    assert_eq!(spec.input_schema["properties"]["path"]["format"], "path");
    assert!(spec.output_schema.is_some());
}

#[test]
fn a_plugin_built_against_0_1_0_runs_with_the_host_interface_and_the_workspace() {
    let t = TestHost::new(&[KEPT_0_1_0]);
    t.file("notes.txt", "hello\nworld\n");
    let host = t.controller();
    let reports = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&reports);
    let mut request = CallRequest::new("contract_read", r#"{"path":"notes.txt"}"#);
    request.progress = Some(ProgressSink::new(move |p| {
        seen.lock().unwrap().push((p.done, p.total));
    }));
    let r = runtime().block_on(host.handle(request));
    assert_eq!(r.status, Status::Ok, "{r:#?}");
    let value = r.value.as_ref().unwrap();
    assert_eq!(value["bytes"], 12);
    assert_eq!(value["first_line"], "hello");
    assert_eq!(value["call_id"], r.call_id.as_str());
    assert!(!value["session_id"].as_str().unwrap().is_empty());
    assert_eq!(value["cancelled"], false);
    assert_eq!(r.content.as_deref(), Some("first line: hello"));
    let reports = reports.lock().unwrap();
    assert_eq!(reports.first(), Some(&(0, Some(2))), "{reports:?}");

    // Read back later, its call has no view: 0.1.0 has no `show` export.
    crate::harness::outcome_of(&host, r.call_id.as_str());
    let shown = runtime()
        .block_on(host.show_call(r.call_id.as_str()))
        .unwrap()
        .expect("the call is in the audit log");
    assert_eq!(shown.outcome.as_deref(), Some("ok"));
    assert!(shown.result.is_none(), "{shown:#?}");
    assert_eq!(
        shown.no_result.as_deref(),
        Some("its plugin does not show results")
    );
}

#[test]
fn a_plugin_built_against_0_1_0_reports_its_own_errors() {
    let t = TestHost::new(&[KEPT_0_1_0]);
    t.file("notes.txt", "hello\n");
    let host = t.controller();
    for (args, expected) in [
        (
            r#"{"path":"notes.txt","fail":true}"#,
            "the tool refused the arguments: asked to fail",
        ),
        (r#"{"path":"missing.txt"}"#, "not found: `missing.txt`"),
    ] {
        let r = runtime().block_on(host.handle(CallRequest::new("contract_read", args)));
        assert_eq!(r.code(), Some(ErrorCode::ToolFailed), "{r:#?}");
        let message = r.error.unwrap().message;
        assert!(message.starts_with(expected), "{args}: {message}");
    }
}

const KEPT_0_2_0: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/kept/contract-0.2.0.wasm");
const KEPT_0_2_0_SHA256: &str = "67370f605f6a3ca36f4ae86f46a62d4d33b6b1c9e9e7a923c5e3a42eac0f803d";

/// The kept 0.2.0 build of the `ledger` fixture: a keyed tool that writes
/// the workspace, with a preview and a view of its results.
#[test]
fn a_plugin_built_against_0_2_0_runs_keyed_and_shows_its_results() {
    let t = TestHost::new(&[KEPT_0_2_0]).sandbox(toolwarden::SandboxMode::WorkspaceWrite);
    let host = t.controller();
    let registry = host.registry();
    let tool = registry
        .get("ledger_append")
        .expect("the 0.2.0 tool is served");
    assert_eq!(
        tool.plugin().sha256(),
        KEPT_0_2_0_SHA256,
        "the kept binary was replaced"
    );
    assert_eq!(tool.plugin().contract(), toolwarden::Contract::V0_2);
    assert!(tool.spec().keyed, "its `keyed` export is read");
    assert!(tool.plugin().prompts().is_empty());
    assert!(
        host.offered_prompts(None, None, |p| p.spec().name.clone())
            .is_empty()
    );

    let session = toolwarden::SessionId::from("kept".to_owned());
    let append = || {
        let request =
            CallRequest::new("ledger_append", r#"{"entry":"one"}"#).in_session(session.clone());
        runtime().block_on(host.handle(request))
    };
    let first = append();
    assert_eq!(first.status, Status::Ok, "{first:#?}");
    assert_eq!(first.value.as_ref().unwrap()["lines"], 1);
    let again = append();
    assert_eq!(again.replayed_from.as_deref(), Some(first.call_id.as_str()));
    assert_eq!(
        std::fs::read_to_string(t.workspace.join("ledger.txt")).unwrap(),
        "one\n",
        "the repeat was answered, not run"
    );

    crate::harness::outcome_of(&host, first.call_id.as_str());
    let shown = runtime()
        .block_on(host.show_call(first.call_id.as_str()))
        .unwrap()
        .expect("the call is in the audit log");
    match shown.result {
        Some(toolwarden::presentation::Rendered::Shown { title, text, .. }) => {
            assert_eq!(title, "appended `one`: 1 lines");
            assert_eq!(text, "the view could see the ledger file: false");
        }
        other => panic!("the 0.2.0 `show` export was not used: {other:?}"),
    }
}
