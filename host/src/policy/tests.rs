use super::*;
use crate::spec::{Effects, FsNeed, Risk};

fn spec(name: &str) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        title: name.into(),
        description: "d".into(),
        input_schema: serde_json::json!({"type": "object"}),
        output_schema: None,
        effects: Effects::default(),
        risk: Risk::Normal,
        filesystem: FsNeed::None,
        timeout_ms: None,
    }
}

fn rule(tools: &[&str], verdict: Verdict) -> RuleDef {
    RuleDef {
        line: None,
        tools: tools.iter().map(|t| t.to_string()).collect(),
        verdict,
        reason: format!("{verdict:?} {tools:?}"),
    }
}

fn policy(rules: Vec<RuleDef>) -> Policy {
    Policy::compile(rules).unwrap_or_else(|e| panic!("{}", e.message))
}

#[test]
fn no_rules_means_deny_with_a_reason_naming_the_fix() {
    let d = Policy::default().evaluate(&spec("calc"));
    assert_eq!(d.verdict, Verdict::Deny);
    assert!(d.matched.is_empty());
    assert!(d.reason.contains("tools = [\"calc\"]"), "{}", d.reason);
}

#[test]
fn most_restrictive_match_wins_in_any_order() {
    let rules = [
        rule(&["*"], Verdict::Allow),
        rule(&["write_*"], Verdict::Ask),
        rule(&["write_secret"], Verdict::Deny),
    ];
    for order in [[0, 1, 2], [2, 1, 0], [1, 2, 0]] {
        let p = policy(order.iter().map(|&i| rules[i].clone()).collect());
        assert_eq!(p.evaluate(&spec("read_file")).verdict, Verdict::Allow);
        assert_eq!(p.evaluate(&spec("write_file")).verdict, Verdict::Ask);
        assert_eq!(p.evaluate(&spec("write_secret")).verdict, Verdict::Deny);
        assert_eq!(p.evaluate(&spec("write_secret")).matched.len(), 3);
    }
}

#[test]
fn globs_match_whole_names() {
    let p = policy(vec![rule(&["read_*"], Verdict::Allow)]);
    assert_eq!(p.evaluate(&spec("read_file")).verdict, Verdict::Allow);
    assert_eq!(p.evaluate(&spec("xread_file")).verdict, Verdict::Deny);
}

#[test]
fn conflicting_identical_rules_are_a_config_error() {
    let mut second = rule(&["b", "a"], Verdict::Deny);
    second.line = Some(9);
    let e = Policy::compile(vec![rule(&["a", "b"], Verdict::Allow), second]).unwrap_err();
    assert_eq!(e.line, Some(9));
    assert!(
        e.message.contains("`deny` instead of `allow`"),
        "{}",
        e.message
    );
    // Same matchers, same decision: redundant but harmless.
    policy(vec![
        rule(&["a"], Verdict::Allow),
        rule(&["a"], Verdict::Allow),
    ]);
}

#[test]
fn bad_globs_empty_tools_and_empty_reasons_are_refused() {
    assert!(
        Policy::compile(vec![rule(&["[a"], Verdict::Allow)])
            .unwrap_err()
            .message
            .contains("glob")
    );
    assert!(
        Policy::compile(vec![rule(&[], Verdict::Allow)])
            .unwrap_err()
            .message
            .contains("empty")
    );
    let mut silent = rule(&["a"], Verdict::Allow);
    silent.reason = " ".into();
    assert!(
        Policy::compile(vec![silent])
            .unwrap_err()
            .message
            .contains("reason")
    );
}
