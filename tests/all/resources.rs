//! Resources (contract 0.3.0), governed like calls: a URI belongs to the
//! plugin that claims its prefix (two plugins may not claim overlapping
//! ones), a session reads only what the policy's resource rules allow
//! (default deny) and its profile offers, the plugin reads in a sandbox
//! with no filesystem under a deadline and the output limit, and every
//! `resources/read` is in the audit log. Real plugins: the conformance
//! fixture, `prompt_probe` and `resource_squatter`.

use crate::harness::{TestHost, records_until, runtime, started};
use toolwarden::changes::Change;
use toolwarden::content::ResourceContents;
use toolwarden::{Controller, ErrorCode, OfferRequest};
use toolwarden_tests::{CONFORMANCE, PROMPT_PROBE, RESOURCE_SQUATTER};

const ALLOW_TEST: &str = "[[rule]]\nresources = [\"test://*\", \"probe://*\"]\ndecision = \"allow\"\nreason = \"the fixtures' resources are harmless\"\n";

fn read(
    host: &Controller,
    uri: &str,
) -> Result<Vec<toolwarden::resource::ResourceContent>, toolwarden::CallError> {
    runtime().block_on(host.read_resource(OfferRequest::new(uri)))
}

fn text(parts: &[toolwarden::resource::ResourceContent]) -> &str {
    match &parts[0].contents {
        ResourceContents::Text(text) => text,
        other => panic!("not text: {other:?}"),
    }
}

#[test]
fn a_plugin_lists_and_reads_its_resources_as_the_policy_allows() {
    let config = "[[rule]]\nresources = [\"test://static-*\", \"test://template/*\"]\n\
                  decision = \"allow\"\nreason = \"static and templated data\"\n";
    let (_t, host) = started(&[CONFORMANCE], config);
    let catalog = host.registry().plugins()[0].catalog().clone();
    assert_eq!(catalog.prefixes, ["test://"]);
    let listed = host.offered_resources(None, None, |r| r.uri.clone());
    assert_eq!(
        listed,
        ["test://static-text", "test://static-binary"],
        "the watched one is not allowed"
    );
    let templates = host.offered_templates(None, None, |t| t.uri_template.clone());
    assert_eq!(templates, ["test://template/{id}/data"]);

    let static_text = read(&host, "test://static-text").unwrap();
    assert_eq!(
        text(&static_text),
        "This is the content of the static text resource."
    );
    let binary = read(&host, "test://static-binary").unwrap();
    assert!(
        matches!(&binary[0].contents, ResourceContents::Blob(b) if b.0.starts_with(b"\x89PNG"))
    );
    let filled = read(&host, "test://template/123/data").unwrap();
    let value: serde_json::Value = serde_json::from_str(text(&filled)).unwrap();
    assert_eq!(value["id"], "123");

    let denied = read(&host, "test://watched-resource").unwrap_err();
    assert_eq!(denied.code, ErrorCode::PolicyDenied);
    assert!(
        denied
            .message
            .contains("resources = [\"test://watched-resource\"]"),
        "{denied:?}"
    );
    let trail = records_until(&host, "resource:test://watched-resource", "refused");
    let kinds: Vec<&str> = trail.iter().map(|r| r.kind.as_str()).collect();
    assert_eq!(kinds, ["call", "policy", "refused"], "{trail:#?}");
    let trail = records_until(&host, "resource:test://static-text", "outcome");
    let kinds: Vec<&str> = trail.iter().map(|r| r.kind.as_str()).collect();
    assert_eq!(kinds, ["call", "policy", "outcome"], "{trail:#?}");
    assert_eq!(trail[0].data["args"]["uri"], "test://static-text");
}

#[test]
fn no_resource_is_read_without_a_rule_and_tool_rules_do_not_count() {
    let (_t, host) = started(&[CONFORMANCE], crate::harness::ALLOW_ALL);
    assert!(
        host.offered_resources(None, None, |r| r.uri.clone())
            .is_empty()
    );
    assert!(
        host.offered_templates(None, None, |t| t.uri_template.clone())
            .is_empty()
    );
    assert_eq!(
        read(&host, "test://static-text").unwrap_err().code,
        ErrorCode::PolicyDenied
    );
    let complete = runtime()
        .block_on(host.complete_template(
            OfferRequest::new("test://template/{id}/data"),
            "id",
            "12",
        ))
        .unwrap();
    assert!(complete.is_empty(), "{complete:?}");
}

#[test]
fn a_uri_nobody_serves_or_the_plugin_does_not_know_is_not_found() {
    let (_t, host) = started(&[CONFORMANCE], ALLOW_TEST);
    let unowned = read(&host, "notes://x").unwrap_err();
    assert_eq!(unowned.code, ErrorCode::UnknownTool);
    assert!(unowned.message.contains("no plugin serves"), "{unowned:?}");
    let unknown = read(&host, "test://nonexistent-resource").unwrap_err();
    assert_eq!(unknown.code, ErrorCode::UnknownTool, "{unknown:?}");
    let hostile = read(&host, &format!("test://{}", "a".repeat(5000))).unwrap_err();
    assert_eq!(hostile.code, ErrorCode::InvalidArgs);
    let control = read(&host, "test://static-text\n").unwrap_err();
    assert_eq!(control.code, ErrorCode::InvalidArgs);
}

#[test]
fn a_read_gets_no_filesystem_no_endless_time_and_no_unbounded_output() {
    let (t, host) = started(&[PROMPT_PROBE], ALLOW_TEST);
    t.file("secret.txt", "workspace content");
    assert_eq!(
        text(&read(&host, "probe://peek").unwrap()),
        "directories seen: []"
    );
    assert_eq!(text(&read(&host, "probe://echo/hello").unwrap()), "hello");
    let spin = read(&host, "probe://spin").unwrap_err();
    assert!(
        matches!(spin.code, ErrorCode::Timeout | ErrorCode::OutOfFuel),
        "{spin:?}"
    );
    assert_eq!(
        read(&host, "probe://flood").unwrap_err().code,
        ErrorCode::OutputTooLarge
    );
    assert_eq!(
        read(&host, "probe://empty").unwrap_err().code,
        ErrorCode::InvalidToolOutput
    );
    crate::harness::assert_still_serves(&host);
}

#[test]
fn a_profile_offers_only_the_resources_it_names() {
    let config = format!(
        "{ALLOW_TEST}[profile.text]\ntools = [\"*\"]\nresources = [\"test://static-text\"]\n"
    );
    let (_t, host) = started(&[CONFORMANCE], &config);
    let listed = host.offered_resources(Some("text"), None, |r| r.uri.clone());
    assert_eq!(listed, ["test://static-text"]);
    let mut request = OfferRequest::new("test://static-binary");
    request.profile = Some("text".into());
    let hidden = runtime().block_on(host.read_resource(request)).unwrap_err();
    assert_eq!(hidden.code, ErrorCode::PolicyDenied, "{hidden:?}");
    assert!(hidden.message.contains("profile"), "{hidden:?}");
}

#[test]
fn completion_of_a_template_comes_from_its_plugin() {
    let (_t, host) = started(&[CONFORMANCE], ALLOW_TEST);
    let values = runtime()
        .block_on(host.complete_template(
            OfferRequest::new("test://template/{id}/data"),
            "id",
            "12",
        ))
        .unwrap();
    assert_eq!(values, ["123", "124"]);
}

#[test]
fn two_plugins_may_not_claim_overlapping_prefixes_and_file_is_the_hosts() {
    let error = TestHost::new(&[CONFORMANCE, RESOURCE_SQUATTER])
        .config(ALLOW_TEST)
        .start()
        .unwrap_err();
    assert_eq!(error.code(), "DUPLICATE_RESOURCE_PREFIX", "{error}");
    assert!(error.to_string().contains("test://sub/"), "{error}");
}

#[test]
fn a_tool_announces_only_its_own_resources_and_a_listener_hears_each_once() {
    let (_t, host) = started(&[CONFORMANCE], crate::harness::ALLOW_ALL);
    let mut heard = host.plugin_changes();
    let touch = |uris: &[&str]| {
        crate::harness::call(
            &host,
            "touch_resource",
            &serde_json::json!({ "uris": uris }).to_string(),
        )
    };

    let told = touch(&["test://watched-resource", "test://watched-resource"]);
    assert_eq!(told.status, toolwarden::Status::Ok, "{told:#?}");
    assert_eq!(
        heard.try_recv().unwrap(),
        Change::Resource("test://watched-resource".into())
    );
    assert!(heard.try_recv().is_err(), "announced twice in one call");

    // A URI outside the plugin's prefixes (another plugin's, or the
    // host's `file:`) is refused to the tool, and nobody hears of it.
    for foreign in ["probe://notes", "file:///etc/passwd", "test:/x"] {
        let refused = touch(&[foreign]);
        assert_eq!(refused.code(), Some(ErrorCode::ToolFailed), "{refused:#?}");
        let why = &refused.error.as_ref().unwrap().message;
        assert!(why.contains("prefixes"), "{why}");
    }
    assert!(heard.try_recv().is_err(), "a refused URI was announced");

    // A flood stops at the cap: what came before it is told, nothing after.
    let many: Vec<String> = (0..70).map(|n| format!("test://flood/{n}")).collect();
    let many: Vec<&str> = many.iter().map(String::as_str).collect();
    let flooded = touch(&many);
    assert!(
        flooded
            .error
            .as_ref()
            .unwrap()
            .message
            .contains("at most 64"),
        "{flooded:#?}"
    );
    let mut count = 0;
    while heard.try_recv().is_ok() {
        count += 1;
    }
    assert_eq!(count, 64);
    crate::harness::assert_still_serves(&host);
}

const WORKSPACE_FILES: &str = "[resources]\nworkspace = true\n\n\
    [limits]\nmax_output_kb = 1\n\n\
    [[rule]]\nresources = [\"file:///*/docs/*\"]\ndecision = \"allow\"\nreason = \"the docs are for reading\"\n\n\
    [[rule]]\nresources = [\"file:///*/private/*\"]\ndecision = \"deny\"\nreason = \"private stays private\"\n";

/// A workspace with docs to read, a private file, a link from the docs to
/// it, a link from the private folder to the docs, and a file too large.
fn workspace_with_links(t: &TestHost) -> String {
    t.file("docs/a.md", "alpha");
    t.file("docs/big.txt", &"x".repeat(2048));
    t.file("private/secret.txt", "s3cret");
    t.file(".hidden/docs/x.md", "hidden");
    let ws = &t.workspace;
    std::os::unix::fs::symlink("../private/secret.txt", ws.join("docs/shortcut.txt")).unwrap();
    std::os::unix::fs::symlink("../docs/a.md", ws.join("private/pointer.md")).unwrap();
    std::os::unix::fs::symlink("/etc/hostname", ws.join("docs/out.txt")).unwrap();
    let root = std::fs::canonicalize(ws).unwrap();
    format!("file://{}/", root.display())
}

#[test]
fn the_workspaces_files_are_no_resources_unless_the_config_says_so() {
    let t = TestHost::new(&[]).config(&WORKSPACE_FILES.replace("workspace = true", ""));
    let base = workspace_with_links(&t);
    let host = t.controller();
    assert!(
        host.offered_resources(None, None, |r| r.uri.clone())
            .is_empty()
    );
    let refused = read(&host, &format!("{base}docs/a.md")).unwrap_err();
    assert_eq!(refused.code, ErrorCode::UnknownTool);
    assert!(
        refused.message.contains("[resources] workspace = true"),
        "{refused:?}"
    );
}

#[test]
fn a_workspace_file_is_read_as_a_read_file_call_would_be_decided() {
    let t = TestHost::new(&[]).config(WORKSPACE_FILES);
    let base = workspace_with_links(&t);
    let host = t.controller();
    // Listed: the allowed files that are plainly there; not the private
    // one, not links, not hidden folders.
    let listed = host.offered_resources(None, None, |r| (r.uri.clone(), r.name.clone()));
    assert_eq!(
        listed,
        [
            (format!("{base}docs/a.md"), "docs/a.md".to_owned()),
            (format!("{base}docs/big.txt"), "docs/big.txt".to_owned()),
        ]
    );

    let a = read(&host, &format!("{base}docs/a.md")).unwrap();
    assert_eq!(text(&a), "alpha");
    assert_eq!(a[0].mime_type.as_deref(), Some("text/markdown"));

    // A link from the docs to the private file is decided where it leads;
    // a link from the private folder is decided as it was written too.
    for denied in [
        "docs/shortcut.txt",
        "private/pointer.md",
        "private/secret.txt",
    ] {
        let refused = read(&host, &format!("{base}{denied}")).unwrap_err();
        assert_eq!(
            refused.code,
            ErrorCode::PolicyDenied,
            "{denied}: {refused:?}"
        );
        assert!(
            refused.message.contains("private stays private"),
            "{refused:?}"
        );
    }
    // Nothing outside the workspace is a resource, however it is spelt.
    for outside in [
        format!("{base}docs/out.txt"),
        format!("{base}docs/../../../etc/hostname"),
        format!("{base}docs/%2e%2e/%2e%2e/%2e%2e/etc/hostname"),
        "file:///etc/hostname".to_owned(),
        format!("{base}docs/missing.md"),
    ] {
        let refused = read(&host, &outside).unwrap_err();
        assert_eq!(
            refused.code,
            ErrorCode::UnknownTool,
            "{outside}: {refused:?}"
        );
    }
    let big = read(&host, &format!("{base}docs/big.txt")).unwrap_err();
    assert_eq!(big.code, ErrorCode::OutputTooLarge, "{big:?}");

    let uri = format!("{base}docs/a.md");
    let trail = records_until(&host, &format!("resource:{uri}"), "outcome");
    let kinds: Vec<&str> = trail.iter().map(|r| r.kind.as_str()).collect();
    assert_eq!(kinds, ["call", "policy", "outcome"], "{trail:#?}");
    let uri = format!("{base}private/pointer.md");
    let trail = records_until(&host, &format!("resource:{uri}"), "refused");
    assert_eq!(trail[1].kind, "policy", "{trail:#?}");
}
