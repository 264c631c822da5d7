use super::*;
use crate::spec::{Effect, Effects, FsNeed, Risk};
use serde_json::json;

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
        network: None,
        keyed: false,
    }
}

fn rule(tools: &[&str], verdict: Verdict) -> RuleDef {
    RuleDef {
        tools: Some(tools.iter().map(|t| t.to_string()).collect()),
        verdict,
        reason: format!("{verdict:?} {tools:?}"),
        ..RuleDef::default()
    }
}

fn decide(p: &Policy, spec: &ToolSpec, args: serde_json::Value) -> Verdict {
    p.evaluate(spec, "fs.wasm", Some(&args)).verdict
}

fn policy(rules: Vec<RuleDef>) -> Policy {
    Policy::compile(rules, Default::default()).unwrap_or_else(|e| panic!("{}", e.message))
}

#[test]
fn no_rules_means_deny_with_a_reason_naming_the_fix() {
    let d = Policy::default().evaluate(&spec("calc"), "calc.wasm", None);
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
        assert_eq!(decide(&p, &spec("read_file"), json!({})), Verdict::Allow);
        assert_eq!(decide(&p, &spec("write_file"), json!({})), Verdict::Ask);
        assert_eq!(decide(&p, &spec("write_secret"), json!({})), Verdict::Deny);
        assert_eq!(
            p.evaluate(&spec("write_secret"), "x.wasm", None)
                .matched
                .len(),
            3
        );
    }
}

#[test]
fn globs_match_whole_names() {
    let p = policy(vec![rule(&["read_*"], Verdict::Allow)]);
    assert_eq!(decide(&p, &spec("read_file"), json!({})), Verdict::Allow);
    assert_eq!(decide(&p, &spec("xread_file"), json!({})), Verdict::Deny);
}

#[test]
fn conflicting_identical_rules_are_a_config_error() {
    let mut second = rule(&["b", "a"], Verdict::Deny);
    second.line = Some(9);
    let e = Policy::compile(
        vec![rule(&["a", "b"], Verdict::Allow), second],
        Default::default(),
    )
    .unwrap_err();
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
        Policy::compile(vec![rule(&["[a"], Verdict::Allow)], Default::default())
            .unwrap_err()
            .message
            .contains("glob")
    );
    assert!(
        Policy::compile(vec![rule(&[], Verdict::Allow)], Default::default())
            .unwrap_err()
            .message
            .contains("empty")
    );
    let mut silent = rule(&["a"], Verdict::Allow);
    silent.reason = " ".into();
    assert!(
        Policy::compile(vec![silent], Default::default())
            .unwrap_err()
            .message
            .contains("reason")
    );
}

fn with_when(tools: &[&str], verdict: Verdict, when: &[(&str, ArgPattern)]) -> RuleDef {
    let mut def = rule(tools, verdict);
    def.when = when
        .iter()
        .map(|(p, m)| (p.to_string(), m.clone()))
        .collect();
    def
}

fn glob(g: &str) -> ArgPattern {
    ArgPattern::Glob(g.into())
}

#[test]
fn argument_globs_match_normalized_paths() {
    let p = policy(vec![
        with_when(
            &["write_file"],
            Verdict::Allow,
            &[("/path", glob("src/**"))],
        ),
        with_when(
            &["write_file"],
            Verdict::Deny,
            &[("/path", glob("src/secrets/**"))],
        ),
    ]);
    let w = spec("write_file");
    assert_eq!(
        decide(&p, &w, json!({"path": "src/main.rs"})),
        Verdict::Allow
    );
    assert_eq!(
        decide(&p, &w, json!({"path": "./src//lib/./x.rs"})),
        Verdict::Allow
    );
    assert_eq!(
        decide(&p, &w, json!({"path": "src/secrets/key"})),
        Verdict::Deny
    );
    assert_eq!(
        decide(&p, &w, json!({"path": "src/../src/secrets/key"})),
        Verdict::Deny,
        "`..` cannot dodge a deny"
    );
    assert_eq!(
        decide(&p, &w, json!({"path": "src/../etc/passwd"})),
        Verdict::Deny,
        "nor reach an allow"
    );
    assert_eq!(decide(&p, &w, json!({"path": "README.md"})), Verdict::Deny);
    assert_eq!(
        decide(&p, &w, json!({"path": 7})),
        Verdict::Deny,
        "a glob never matches a non-string"
    );
    assert_eq!(
        decide(&p, &w, json!({})),
        Verdict::Deny,
        "a missing argument matches no glob"
    );
}

#[test]
fn not_and_exact_matchers() {
    let not_src = ArgPattern::Not(Box::new(glob("src/**")));
    let p = policy(vec![
        rule(&["write_file"], Verdict::Allow),
        with_when(&["write_file"], Verdict::Deny, &[("/path", not_src)]),
        with_when(
            &["write_file"],
            Verdict::Ask,
            &[
                ("/force", ArgPattern::Exact(json!(true))),
                ("/path", glob("src/**")),
            ],
        ),
    ]);
    let w = spec("write_file");
    assert_eq!(decide(&p, &w, json!({"path": "docs/a.md"})), Verdict::Deny);
    assert_eq!(decide(&p, &w, json!({"path": "src/a.rs"})), Verdict::Allow);
    assert_eq!(
        decide(&p, &w, json!({"path": "src/a.rs", "force": true})),
        Verdict::Ask
    );
    assert_eq!(
        decide(&p, &w, json!({"path": "src/a.rs", "force": false})),
        Verdict::Allow
    );
    let n = policy(vec![
        with_when(
            &["calc"],
            Verdict::Deny,
            &[("/a", ArgPattern::Exact(json!(3)))],
        ),
        rule(&["calc"], Verdict::Allow),
    ]);
    assert_eq!(
        decide(&n, &spec("calc"), json!({"a": 3.0})),
        Verdict::Deny,
        "numbers compare by value"
    );
}

#[test]
fn risk_effects_filesystem_and_plugin_matchers() {
    let mut writer = spec("write_file");
    writer.effects = [Effect::MutatesWorkspace, Effect::Idempotent]
        .into_iter()
        .collect();
    writer.filesystem = FsNeed::WorkspaceWrite;
    let any = |def: RuleDef| policy(vec![RuleDef { tools: None, ..def }]);
    let base = || RuleDef {
        verdict: Verdict::Allow,
        reason: "r".into(),
        ..RuleDef::default()
    };
    let by_effect = any(RuleDef {
        effects: Some(vec![Effect::MutatesWorkspace]),
        ..base()
    });
    assert_eq!(decide(&by_effect, &writer, json!({})), Verdict::Allow);
    assert_eq!(decide(&by_effect, &spec("calc"), json!({})), Verdict::Deny);
    let both = any(RuleDef {
        effects: Some(vec![Effect::MutatesWorkspace, Effect::Exclusive]),
        ..base()
    });
    assert_eq!(
        decide(&both, &writer, json!({})),
        Verdict::Deny,
        "every listed effect must be declared"
    );
    let by_fs = any(RuleDef {
        filesystem: Some(vec![FsNeed::None, FsNeed::ReadOnly]),
        ..base()
    });
    assert_eq!(decide(&by_fs, &writer, json!({})), Verdict::Deny);
    assert_eq!(decide(&by_fs, &spec("calc"), json!({})), Verdict::Allow);
    let by_risk = any(RuleDef {
        risk: Some(vec![Risk::Safe]),
        ..base()
    });
    assert_eq!(
        decide(&by_risk, &spec("calc"), json!({})),
        Verdict::Deny,
        "calc here is normal risk"
    );
    let by_plugin = any(RuleDef {
        plugin: Some(vec!["fs*.wasm".into()]),
        ..base()
    });
    assert_eq!(decide(&by_plugin, &writer, json!({})), Verdict::Allow);
    assert_eq!(
        by_plugin
            .evaluate(&writer, "other.wasm", Some(&json!({})))
            .verdict,
        Verdict::Deny
    );
}

#[test]
fn a_dangerous_tool_needs_a_rule_that_names_it() {
    let mut rm = spec("delete_tree");
    rm.risk = Risk::Dangerous;
    let by_glob = policy(vec![rule(&["*"], Verdict::Allow)]);
    let d = by_glob.evaluate(&rm, "fs.wasm", Some(&json!({})));
    assert_eq!(d.verdict, Verdict::Deny);
    assert!(d.reason.contains("names it exactly"), "{}", d.reason);
    let explained = by_glob.explain(
        &rm,
        "fs.wasm",
        Some(&json!({})),
        None,
        (Caller::Agent, Who::Known(None)),
    );
    assert!(
        explained.rules[0]
            .note
            .as_deref()
            .unwrap()
            .contains("dangerous")
    );
    let by_name = policy(vec![
        rule(&["*"], Verdict::Allow),
        rule(&["delete_tree"], Verdict::Ask),
    ]);
    assert_eq!(decide(&by_name, &rm, json!({})), Verdict::Ask);
}

#[test]
fn listing_without_arguments_says_when_they_matter() {
    let p = policy(vec![
        rule(&["write_file"], Verdict::Allow),
        with_when(
            &["write_file"],
            Verdict::Deny,
            &[("/path", glob(".git/**"))],
        ),
    ]);
    let d = p.evaluate(&spec("write_file"), "fs.wasm", None);
    assert_eq!(d.verdict, Verdict::Allow);
    assert!(d.depends_on_args);
    assert!(!p.evaluate(&spec("calc"), "calc.wasm", None).depends_on_args);
}

#[test]
fn rules_that_differ_only_in_when_do_not_conflict() {
    policy(vec![
        rule(&["a"], Verdict::Allow),
        with_when(&["a"], Verdict::Deny, &[("/p", glob("x"))]),
    ]);
    let e = Policy::compile(
        vec![
            with_when(&["a"], Verdict::Allow, &[("/p", glob("x"))]),
            with_when(&["a"], Verdict::Deny, &[("/p", glob("x"))]),
        ],
        Default::default(),
    )
    .unwrap_err();
    assert!(e.message.contains("exactly what"), "{}", e.message);
    let bad = with_when(&["a"], Verdict::Deny, &[("path", glob("x"))]);
    assert!(
        Policy::compile(vec![bad], Default::default())
            .unwrap_err()
            .message
            .contains("JSON pointer")
    );
}

fn fetcher(origins: &[&str]) -> ToolSpec {
    ToolSpec {
        effects: [Effect::OpenWorld].into_iter().collect(),
        network: Some(crate::spec::NetworkNeed {
            origins: origins.iter().map(|o| o.parse().unwrap()).collect(),
            credentials: vec![],
        }),
        ..spec("fetch")
    }
}

fn allowance(toml: &str) -> crate::egress::Allowance {
    let section: crate::egress::NetworkSection = toml::from_str(toml).unwrap();
    section
        .resolve()
        .unwrap_or_else(|e| panic!("{}", e.message))
        .allowance
}

fn with_network(verdict: Verdict, matcher: NetMatch) -> RuleDef {
    RuleDef {
        network: Some(matcher),
        ..rule(&["fetch"], verdict)
    }
}

fn origins(list: &[&str]) -> NetMatch {
    NetMatch::Origins(list.iter().map(|o| o.parse().unwrap()).collect())
}

#[test]
fn a_call_is_granted_what_the_tool_declares_narrowed_to_what_the_operator_allows() {
    let allowed = allowance(
        "allow = [\"https://en.wikipedia.org\", \"https://api.github.com\"]\n\
         [plugin.\"fs.wasm\"]\nallow = [{ origin = \"http://127.0.0.1:*\", private = true }]\n",
    );
    let p = Policy::compile(vec![], allowed).unwrap();
    let tool = fetcher(&["https://*.wikipedia.org", "http://*:*"]);
    assert_eq!(
        p.network(&tool, "fs.wasm").to_string(),
        "https://en.wikipedia.org, http://127.0.0.1:* (private addresses too)"
    );
    assert_eq!(
        p.network(&tool, "other.wasm").to_string(),
        "https://en.wikipedia.org"
    );
    assert_eq!(p.network(&spec("calc"), "fs.wasm").to_string(), "none");
    assert_eq!(
        p.network(&fetcher(&["https://example.org"]), "fs.wasm")
            .to_string(),
        "none",
        "a declared origin nobody allows is not granted"
    );
    let unallowed: Vec<String> = p
        .unallowed(
            &fetcher(&["https://example.org", "https://api.github.com"]),
            "x.wasm",
        )
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(unallowed, ["https://example.org"]);
}

#[test]
fn network_matchers_are_strict_for_allow_and_wide_for_deny() {
    let allowed = allowance("allow = [\"https://api.github.com\", \"https://docs.rs\"]");
    let tool = fetcher(&["https://*"]);
    let p = Policy::compile(
        vec![with_network(
            Verdict::Allow,
            origins(&["https://*.github.com"]),
        )],
        allowed.clone(),
    )
    .unwrap();
    assert_eq!(
        p.evaluate(&tool, "f.wasm", None).verdict,
        Verdict::Deny,
        "an allow rule matches only when every granted origin is inside it"
    );
    let p = Policy::compile(
        vec![with_network(
            Verdict::Allow,
            origins(&["https://*.github.com", "https://docs.rs"]),
        )],
        allowed.clone(),
    )
    .unwrap();
    assert_eq!(p.evaluate(&tool, "f.wasm", None).verdict, Verdict::Allow);
    let p = Policy::compile(
        vec![
            rule(&["fetch"], Verdict::Allow),
            with_network(Verdict::Deny, origins(&["https://*.github.com"])),
        ],
        allowed.clone(),
    )
    .unwrap();
    assert_eq!(
        p.evaluate(&tool, "f.wasm", None).verdict,
        Verdict::Deny,
        "a deny rule matches when any granted origin overlaps it"
    );
    let p = Policy::compile(
        vec![
            rule(&["*"], Verdict::Allow),
            RuleDef {
                network: Some(NetMatch::Reaches(true)),
                ..rule(&["*"], Verdict::Ask)
            },
        ],
        allowed,
    )
    .unwrap();
    assert_eq!(p.evaluate(&tool, "f.wasm", None).verdict, Verdict::Ask);
    assert_eq!(
        p.evaluate(&spec("calc"), "f.wasm", None).verdict,
        Verdict::Allow
    );
    let explained = p.explain(
        &spec("calc"),
        "f.wasm",
        None,
        None,
        (Caller::Agent, Who::Known(None)),
    );
    assert!(
        explained.rules[1]
            .note
            .as_deref()
            .unwrap_or("")
            .contains("`network`"),
        "{:?}",
        explained.rules[1]
    );
}

#[test]
fn url_globs_match_urls_as_browsers_read_them() {
    let docs = || {
        with_when(
            &["fetch"],
            Verdict::Allow,
            &[("/url", glob("https://docs.rs/**"))],
        )
    };
    let deny = with_when(
        &["fetch"],
        Verdict::Deny,
        &[("/url", glob("https://*.evil.org/**"))],
    );
    let p = policy(vec![docs(), deny]);
    let tool = spec("fetch");
    for (url, want) in [
        ("https://docs.rs/serde/latest", Verdict::Allow),
        ("HTTPS://DOCS.RS/serde", Verdict::Allow),
        ("https://docs.rs:443/a/../b", Verdict::Allow),
        ("https://docs.rs.evil.com/x", Verdict::Deny),
        ("https://docs.rs@evil.com/x", Verdict::Deny),
        ("https://docs.rs\\@evil.com/x", Verdict::Allow),
        ("http://docs.rs/x", Verdict::Deny),
        ("not a url", Verdict::Deny),
        ("https://a.evil.org/x", Verdict::Deny),
        ("https://docs.rs./serde", Verdict::Allow),
        ("https://docs.rs/%73erde", Verdict::Allow),
        ("https://a.evil.org../x", Verdict::Deny),
        ("https://docs.rs:8443/x", Verdict::Deny),
    ] {
        assert_eq!(decide(&p, &tool, json!({ "url": url })), want, "{url}");
    }
    let explained = p.explain(
        &tool,
        "fetch.wasm",
        Some(&json!({ "url": "HTTPS://Docs.RS.:8443/%73" })),
        None,
        (Caller::Agent, Who::Known(None)),
    );
    let note = explained.rules[0].note.clone().unwrap_or_default();
    assert!(
        note.contains("read as `https://docs.rs:8443/s`"),
        "explain shows the URL as it is matched: {note}"
    );
}

#[test]
fn network_matchers_are_part_of_what_a_rule_matches() {
    let a = with_network(Verdict::Allow, NetMatch::Reaches(true));
    let b = with_network(Verdict::Deny, NetMatch::Reaches(false));
    assert!(Policy::compile(vec![a.clone(), b], Default::default()).is_ok());
    let c = with_network(Verdict::Deny, NetMatch::Reaches(true));
    assert!(Policy::compile(vec![a.clone(), c], Default::default()).is_err());
    let fingerprint = |rules| {
        Policy::compile(rules, Default::default())
            .unwrap()
            .fingerprint()
    };
    assert_ne!(
        fingerprint(vec![a]),
        fingerprint(vec![with_network(
            Verdict::Allow,
            origins(&["https://a.org"])
        )])
    );
}

#[test]
fn nested_and_parent_match_on_who_made_the_call() {
    let rule = |extra: &str| {
        let text = format!("tools = [\"calc\"]\n{extra}\ndecision = \"allow\"\nreason = \"r\"");
        let section: RuleSection = toml::from_str(&text).unwrap();
        policy(vec![section.resolve(1).unwrap()])
    };
    let calc = spec("calc");
    let verdict = |policy: &Policy, caller| {
        policy
            .explain(
                &calc,
                "c.wasm",
                Some(&json!({})),
                None,
                (caller, Who::Known(None)),
            )
            .decision
            .verdict
    };
    let agents_only = rule("nested = false");
    assert_eq!(verdict(&agents_only, Caller::Agent), Verdict::Allow);
    assert_eq!(verdict(&agents_only, Caller::Tool("relay")), Verdict::Deny);
    let nested_only = rule("nested = true");
    assert_eq!(verdict(&nested_only, Caller::Agent), Verdict::Deny);
    assert_eq!(verdict(&nested_only, Caller::Tool("relay")), Verdict::Allow);
    let by_relay = rule("parent = [\"rel*\"]");
    assert_eq!(verdict(&by_relay, Caller::Tool("relay")), Verdict::Allow);
    assert_eq!(
        verdict(&by_relay, Caller::Tool("compose_run")),
        Verdict::Deny
    );
    assert_eq!(verdict(&by_relay, Caller::Agent), Verdict::Deny);
    let unknown = by_relay.explain(&calc, "c.wasm", None, None, (Caller::Unknown, Who::Unknown));
    assert!(
        unknown.rules[0].needs_args,
        "without a call, a caller rule may apply"
    );

    // A rule without these matchers keeps the fingerprint approvals bind.
    assert_ne!(rule("").fingerprint(), nested_only.fingerprint());
    assert!(!rule("").rules[0].fingerprint().contains("nested"));
    assert!(!rule("").rules[0].fingerprint().contains("parent"));

    let contradiction: RuleSection =
        toml::from_str("nested = false\nparent = [\"x\"]\ndecision = \"allow\"\nreason = \"r\"")
            .unwrap();
    let error =
        Policy::compile(vec![contradiction.resolve(3).unwrap()], Default::default()).unwrap_err();
    assert!(
        error.message.contains("nested = false"),
        "{}",
        error.message
    );
}

#[test]
fn a_suggested_rule_is_toml_that_parses_when_pasted() {
    for decision in ["allow", "ask"] {
        let text = super::suggested_rule("read_file", decision);
        let table: toml::Table = toml::from_str(&text).expect("pasteable TOML");
        let rule = &table["rule"][0];
        assert_eq!(rule["tools"][0].as_str(), Some("read_file"));
        assert_eq!(rule["decision"].as_str(), Some(decision));
        assert!(rule["reason"].as_str().is_some_and(|r| !r.is_empty()));
        assert!(text.lines().count() == 4, "one key per line: {text}");
    }
}

#[test]
fn a_decision_checks_only_the_rules_that_may_match_its_tool_and_decides_the_same() {
    // A thousand rules for other tools, some with `when`, a few that match
    // every tool, and rules whose globs overlap.
    let mut rules: Vec<RuleDef> = (0..1000)
        .map(|i| {
            let name = format!("other_{i}");
            if i % 2 == 0 {
                with_when(&[&name], Verdict::Deny, &[("/path", glob("secret/**"))])
            } else {
                rule(&[&name], Verdict::Allow)
            }
        })
        .collect();
    rules.push(rule(&["read_*"], Verdict::Allow));
    rules.push(rule(&["read_fil?", "write_*"], Verdict::Ask));
    rules.push(with_when(
        &["*"],
        Verdict::Deny,
        &[("/path", glob("**/.env"))],
    ));
    rules.push(RuleDef {
        risk: Some(vec![Risk::Dangerous]),
        ..rule(&["unused"], Verdict::Deny)
    });
    rules.push(RuleDef {
        tools: None,
        risk: Some(vec![Risk::Safe]),
        verdict: Verdict::Allow,
        reason: "safe tools".into(),
        ..RuleDef::default()
    });
    let p = policy(rules);
    let safe = ToolSpec {
        risk: Risk::Safe,
        ..spec("calc")
    };
    for (tool, args) in [
        (spec("read_file"), json!({"path": "a.txt"})),
        (spec("read_file"), json!({"path": "x/.env"})),
        (spec("write_file"), json!({"path": "a.txt"})),
        (spec("other_4"), json!({"path": "secret/key"})),
        (spec("other_7"), json!({})),
        (spec("nobody"), json!({})),
        (safe, json!({})),
    ] {
        let fast = p.evaluate(&tool, "fs.wasm", Some(&args));
        let every = p.explain(
            &tool,
            "fs.wasm",
            Some(&args),
            None,
            (Caller::Agent, Who::Known(None)),
        );
        assert_eq!(
            (fast.verdict, &fast.matched, &fast.reason),
            (
                every.decision.verdict,
                &every.decision.matched,
                &every.decision.reason
            ),
            "{} {args}",
            tool.name
        );
        assert_eq!(every.rules.len(), 1005, "explain still shows every rule");
    }
    assert_eq!(
        p.index.candidates("read_file"),
        vec![1000, 1001, 1002, 1004]
    );
    assert_eq!(p.index.candidates("other_7"), vec![7, 1002, 1004]);
    assert_eq!(p.index.candidates("calc"), vec![1002, 1004]);
}

#[test]
fn caller_rules_match_on_who_the_agent_is() {
    use crate::caller::{Caller as Identity, Proof};
    let text = r#"
        tools = ["calc"]
        caller = { subject = ["alice", "bo*"], groups = "oncall" }
        decision = "allow"
        reason = "on-call people"
    "#;
    let section: RuleSection = toml::from_str(text).unwrap();
    let p = policy(vec![section.resolve(1).unwrap()]);
    let calc = spec("calc");
    let person = |subject: &str, groups: serde_json::Value, proof: Proof| Identity {
        subject: subject.into(),
        proof,
        scopes: vec![],
        claims: [("groups".to_owned(), groups)].into(),
    };
    let token = || Proof::AccessToken {
        issuer: "https://login.example.org".into(),
    };
    let decided = |who: Who<'_>| {
        p.explain(
            &calc,
            "c.wasm",
            Some(&json!({})),
            None,
            (Caller::Agent, who),
        )
    };
    let alice = person("alice", json!(["sre", "oncall"]), token());
    let bob = person("bob", json!("oncall"), Proof::SharedToken);
    let off_duty = person("alice", json!(["sre"]), token());
    let mallory = person("mallory", json!(["oncall"]), token());
    assert_eq!(
        decided(Who::Known(Some(&alice))).decision.verdict,
        Verdict::Allow
    );
    assert_eq!(
        decided(Who::Known(Some(&bob))).decision.verdict,
        Verdict::Allow
    );
    for nobody in [Some(&off_duty), Some(&mallory), None] {
        let explained = decided(Who::Known(nobody));
        assert_eq!(explained.decision.verdict, Verdict::Deny, "{nobody:?}");
        let note = explained.rules[0].note.clone().unwrap_or_default();
        assert!(note.contains("`caller` wants"), "{note}");
    }
    // Listing tools, who calls is not known yet: the rule may apply.
    let listed = p.evaluate(&calc, "c.wasm", None);
    assert!(listed.depends_on_args, "{listed:?}");

    // `caller` is part of what two rules are told apart by, and of the
    // fingerprint approvals bind.
    let other: RuleSection = toml::from_str(&text.replace("bo*", "carol")).unwrap();
    let without: RuleSection =
        toml::from_str("tools = [\"calc\"]\ndecision = \"allow\"\nreason = \"on-call people\"")
            .unwrap();
    let fingerprint =
        |section: RuleSection| policy(vec![section.resolve(1).unwrap()]).fingerprint();
    let mine: RuleSection = toml::from_str(text).unwrap();
    let mine = fingerprint(mine);
    assert_ne!(mine, fingerprint(other));
    assert_ne!(mine, fingerprint(without));

    for bad in [
        "caller = {}",
        "caller = { subject = [] }",
        "caller = { subject = 3 }",
        "caller = { subject = [\"[\"] }",
    ] {
        let text = format!("tools = [\"calc\"]\n{bad}\ndecision = \"allow\"\nreason = \"r\"");
        let section: RuleSection = toml::from_str(&text).unwrap();
        let compiled = section
            .resolve(1)
            .map_err(|e| e.message)
            .and_then(|def| Policy::compile(vec![def], Default::default()).map_err(|e| e.message));
        assert!(compiled.is_err(), "{bad} is refused");
    }
}

#[test]
fn who_approves_is_the_strictest_matching_ask_rules_and_part_of_the_fingerprint() {
    let section = |text: &str| -> RuleDef {
        toml::from_str::<RuleSection>(text)
            .unwrap()
            .resolve(1)
            .unwrap()
    };
    let quorum = "tools = [\"calc\"]\ndecision = \"ask\"\napprovers = 3\nreason = \"three people\"";
    let others = "tools = [\"c*\"]\ndecision = \"ask\"\nself_approval = false\nreason = \"others\"";
    let plain = "tools = [\"calc\"]\ndecision = \"ask\"\nreason = \"three people\"";
    let both = policy(vec![section(quorum), section(others)]);
    let decided = both.evaluate(&spec("calc"), "calc.wasm", None);
    assert_eq!(
        decided.approvers,
        crate::policy::Approvers {
            quorum: 3,
            self_approval: false
        }
    );
    assert_eq!(
        both.evaluate(&spec("cat"), "calc.wasm", None)
            .approvers
            .quorum,
        1,
        "only the rules that match count"
    );
    // An allow or deny wins over ask: no one approves, so no one is needed.
    let denied = policy(vec![section(quorum), rule(&["ca*"], Verdict::Deny)]);
    assert!(
        denied
            .evaluate(&spec("calc"), "calc.wasm", None)
            .approvers
            .is_default()
    );
    assert_ne!(
        policy(vec![section(quorum)]).fingerprint(),
        policy(vec![section(plain)]).fingerprint(),
        "an approval asked under one quorum does not fit another"
    );
}

#[test]
fn prompt_rules_decide_prompts_alone_by_name_plugin_and_caller() {
    use crate::caller::{Caller as Identity, Proof};
    let p = policy(vec![
        rule(&["*"], Verdict::Allow),
        text(
            "prompts = [\"review_*\"]\nplugin = [\"review.wasm\"]\ndecision = \"allow\"\nreason = \"r\"",
        ),
        text("prompts = [\"review_secrets\"]\ndecision = \"deny\"\nreason = \"no\""),
        text(
            "prompts = [\"oncall_*\"]\ncaller = { subject = \"alice\" }\ndecision = \"allow\"\nreason = \"a\"",
        ),
    ]);
    let decide = |prompt: &str, plugin: &str, who: Who<'_>| {
        p.decide_offered(Offered::Prompt, prompt, plugin, who)
    };
    let anyone = Who::Known(None);
    let allowed = decide("review_diff", "review.wasm", anyone);
    assert_eq!(allowed.verdict, Verdict::Allow);
    assert_eq!(
        allowed.matched.as_slice(),
        [2],
        "the tools rule is not about prompts"
    );
    assert_eq!(
        decide("review_diff", "other.wasm", anyone).verdict,
        Verdict::Deny
    );
    assert_eq!(
        decide("review_secrets", "review.wasm", anyone).verdict,
        Verdict::Deny
    );
    let default = decide("summarize", "review.wasm", anyone);
    assert!(default.matched.is_empty() && default.reason.contains("prompts = [\"summarize\"]"));
    let alice = Identity {
        subject: "alice".into(),
        proof: Proof::SharedToken,
        scopes: vec![],
        claims: Default::default(),
    };
    assert_eq!(
        decide("oncall_page", "x.wasm", Who::Known(Some(&alice))).verdict,
        Verdict::Allow
    );
    assert_eq!(
        decide("oncall_page", "x.wasm", anyone).verdict,
        Verdict::Deny
    );
    let listing = decide("oncall_page", "x.wasm", Who::Unknown);
    assert_eq!(
        listing.verdict,
        Verdict::Deny,
        "a list never offers what may be refused"
    );
    assert!(listing.depends_on_args);
    // And no prompt rule decides a call.
    assert_eq!(
        p.evaluate(&spec("review_diff"), "review.wasm", None)
            .matched
            .as_slice(),
        [1]
    );
}

#[test]
fn a_prompt_rule_changes_the_fingerprint() {
    let with = |prompts: &str| {
        let section: RuleSection = toml::from_str(&format!(
            "prompts = [\"{prompts}\"]\ndecision = \"allow\"\nreason = \"r\""
        ))
        .unwrap();
        policy(vec![section.resolve(1).unwrap()]).fingerprint()
    };
    assert_ne!(with("a"), with("b"));
    assert_ne!(
        with("a"),
        policy(vec![rule(&["*"], Verdict::Allow)]).fingerprint()
    );
}

/// A rule as written in the config file.
fn text(rule: &str) -> RuleDef {
    let section: RuleSection = toml::from_str(rule).unwrap();
    section.resolve(1).unwrap()
}

#[test]
fn resource_rules_decide_reads_by_uri_and_never_prompts_or_calls() {
    let p = policy(vec![
        text("resources = [\"notes://*\"]\ndecision = \"allow\"\nreason = \"notes\""),
        text("resources = [\"notes://private/*\"]\ndecision = \"deny\"\nreason = \"private\""),
        text("prompts = [\"notes://*\"]\ndecision = \"allow\"\nreason = \"a prompt rule\""),
    ]);
    let anyone = Who::Known(None);
    let read = |uri: &str| p.decide_offered(Offered::Resource, uri, "n.wasm", anyone);
    assert_eq!(read("notes://today").verdict, Verdict::Allow);
    assert_eq!(
        read("notes://a/b/c").verdict,
        Verdict::Allow,
        "`*` crosses `/` in a URI"
    );
    assert_eq!(read("notes://private/diary").verdict, Verdict::Deny);
    assert_eq!(read("other://x").verdict, Verdict::Deny);
    assert!(
        read("other://x")
            .reason
            .contains("resources = [\"other://x\"]")
    );
    assert_eq!(
        p.decide_offered(Offered::Prompt, "notes://today", "n.wasm", anyone)
            .matched
            .as_slice(),
        [3],
        "a resource rule decides no prompt"
    );
    assert!(
        p.evaluate(&spec("notes"), "n.wasm", None)
            .matched
            .is_empty()
    );
    let both = "prompts = [\"a\"]\nresources = [\"b://*\"]\ndecision = \"allow\"\nreason = \"r\"";
    let section: RuleSection = toml::from_str(both).unwrap();
    let error = Policy::compile(vec![section.resolve(1).unwrap()], Default::default()).unwrap_err();
    assert!(error.message.contains("not several"), "{}", error.message);
}

#[test]
fn sampling_grants_take_the_lowest_cap_of_every_matching_allow_rule() {
    use crate::sampling::SamplingGrant;
    let p = policy(vec![
        text("sampling = [\"sum*\"]\ndecision = \"allow\"\nmax_tokens = 100000\nreason = \"r\""),
        text("sampling = [\"summarize\"]\ndecision = \"allow\"\nmax_requests = 1\nreason = \"r\""),
        text("sampling = [\"sum_secret\"]\ndecision = \"deny\"\nreason = \"no\""),
        text("tools = [\"*\"]\ndecision = \"allow\"\nreason = \"calls\""),
    ]);
    let anyone = Who::Known(None);
    // One rule may raise a default; another narrows what it left.
    assert_eq!(
        p.sampling_grant("summarize", "w.wasm", anyone),
        Ok(SamplingGrant {
            max_requests: 1,
            max_tokens: 100_000,
            max_session_tokens: SamplingGrant::DEFAULT.max_session_tokens,
            ask: false,
        })
    );
    assert_eq!(
        p.sampling_grant("sum_all", "w.wasm", anyone)
            .map(|g| g.max_requests),
        Ok(SamplingGrant::DEFAULT.max_requests)
    );
    let denied = p
        .sampling_grant("sum_secret", "w.wasm", anyone)
        .unwrap_err();
    assert!(denied.contains("no"), "{denied}");
    // A rule about calls grants no sampling.
    let none = p.sampling_grant("calc", "w.wasm", anyone).unwrap_err();
    assert!(none.contains("sampling = [\"calc\"]"), "{none}");
}
