//! A plugin offers and withdraws its own tools while it runs (contract
//! 0.3.0, `changes.offer-tools`): a withdrawn tool is listed to nobody and
//! refused as unknown, listeners hear that the tool list changed, a plugin
//! cannot touch another's tools, offering never widens a profile, and what
//! a plugin withdrew survives a reload that leaves its file alone.

use crate::harness::{ALLOW_ALL, TestHost, assert_still_serves, call, records_until};
use toolwarden::changes::Change;
use toolwarden::{CallRequest, Controller, ErrorCode, Status};
use toolwarden_tests::{CALC, CONFORMANCE};

const DYNAMIC: &str = "test_dynamic_tool";

const WITH_PROFILE: &str = r#"
[profile.narrow]
tools = ["test_trigger_tool_change", "calc"]

[[rule]]
tools = ["*"]
decision = "allow"
reason = "tests allow everything"
"#;

fn listed(host: &Controller, profile: Option<&str>) -> Vec<String> {
    host.offered_tools(profile, |tool| tool.spec().name.clone())
}

fn trigger(host: &Controller) -> String {
    let done = call(host, "test_trigger_tool_change", "{}");
    assert_eq!(done.status, Status::Ok, "{done:#?}");
    done.content.unwrap_or_default()
}

#[test]
fn a_plugin_withdraws_and_offers_its_own_tools_and_listeners_hear_each_change() {
    let t = TestHost::new(&[CONFORMANCE, CALC]).config(WITH_PROFILE);
    let host = t.controller();
    let mut heard = host.plugin_changes();
    assert!(listed(&host, None).contains(&DYNAMIC.to_owned()));

    assert_eq!(trigger(&host), format!("withdrew {DYNAMIC}"));
    assert_eq!(heard.try_recv().unwrap(), Change::Tools);
    assert!(!listed(&host, None).contains(&DYNAMIC.to_owned()));
    let trail = records_until(&host, "test_trigger_tool_change", "outcome");
    let offered: Vec<_> = trail.iter().filter(|r| r.kind == "tools_offered").collect();
    assert_eq!(offered.len(), 1, "{trail:#?}");
    assert_eq!(offered[0].data["withdrawn"], serde_json::json!([DYNAMIC]));
    assert_eq!(offered[0].data["offered"], serde_json::json!([]));
    let refused = call(&host, DYNAMIC, "{}");
    assert_eq!(refused.code(), Some(ErrorCode::UnknownTool), "{refused:#?}");
    let why = &refused.error.as_ref().unwrap().message;
    assert!(why.contains("withdrawn by its plugin"), "{why}");

    // Withdrawing what is withdrawn changes nothing, nobody hears it, and
    // its trail records no change.
    let again = call(
        &host,
        "offer_tools",
        &serde_json::json!({ "names": [DYNAMIC], "offered": false }).to_string(),
    );
    assert_eq!(again.status, Status::Ok, "{again:#?}");
    assert!(
        heard.try_recv().is_err(),
        "a change that changed nothing was told"
    );

    // Another plugin's tool, or a name nobody declared: refused to the
    // tool, and nothing of the request applies.
    for foreign in ["calc", "no_such_tool"] {
        let refused = call(
            &host,
            "offer_tools",
            &serde_json::json!({ "names": [foreign, "touch_resource"], "offered": false })
                .to_string(),
        );
        assert_eq!(refused.code(), Some(ErrorCode::ToolFailed), "{refused:#?}");
        let why = &refused.error.as_ref().unwrap().message;
        assert!(why.contains("not one of this plugin's tools"), "{why}");
    }
    assert!(heard.try_recv().is_err());
    assert!(listed(&host, None).contains(&"touch_resource".to_owned()));
    assert!(listed(&host, None).contains(&"calc".to_owned()));
    assert_still_serves(&host);

    // Offered again, it is listed and runs; a profile that does not name it
    // still does not show it.
    assert_eq!(trigger(&host), format!("offered {DYNAMIC}"));
    assert_eq!(heard.try_recv().unwrap(), Change::Tools);
    assert!(listed(&host, None).contains(&DYNAMIC.to_owned()));
    assert_eq!(call(&host, DYNAMIC, "{}").status, Status::Ok);
    assert_eq!(
        listed(&host, Some("narrow")),
        ["calc", "test_trigger_tool_change"]
    );
    let outside = crate::harness::runtime()
        .block_on(host.handle(CallRequest::new(DYNAMIC, "{}").with_profile("narrow")));
    assert_eq!(outside.code(), Some(ErrorCode::UnknownTool), "{outside:#?}");
}

#[test]
fn what_a_plugin_withdrew_survives_a_reload_that_leaves_its_file_alone() {
    let t = TestHost::new(&[CONFORMANCE]).config(ALLOW_ALL);
    let host = t.controller();
    assert_eq!(trigger(&host), format!("withdrew {DYNAMIC}"));
    t.add_plugin(CALC);
    assert!(host.reload().unwrap(), "a new plugin changes the tools");
    let now = listed(&host, None);
    assert!(now.contains(&"calc".to_owned()), "{now:?}");
    assert!(!now.contains(&DYNAMIC.to_owned()), "{now:?}");
}

/// A call of the old build that ends after a reload which kept its file
/// (here: the old build's record of what it offers, as such a call holds
/// it) withdraws from the new build too: the reload shares that record.
#[test]
fn a_withdrawal_that_ends_after_a_reload_reaches_the_new_build() {
    let t = TestHost::new(&[CONFORMANCE]).config(ALLOW_ALL);
    let host = t.controller();
    let before = host.registry();
    let old_build = &before.plugins()[0];
    t.add_plugin(CALC);
    assert!(host.reload().unwrap(), "a new plugin changes the tools");
    assert!(listed(&host, None).contains(&DYNAMIC.to_owned()));
    let changed = old_build
        .offers()
        .apply([(DYNAMIC.to_owned(), false)].into_iter().collect());
    assert_eq!(changed.withdrawn, [DYNAMIC]);
    let now = listed(&host, None);
    assert!(!now.contains(&DYNAMIC.to_owned()), "{now:?}");
    assert!(now.contains(&"calc".to_owned()), "{now:?}");
}
