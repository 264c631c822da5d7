use super::*;
use serde_json::json;

fn schema(doc: Value) -> Schema {
    Schema::compile(&doc).unwrap_or_else(|e| panic!("{e}"))
}

fn refused(doc: Value) -> SchemaError {
    Schema::compile(&doc).expect_err("schema should be refused")
}

#[test]
fn unsupported_keywords_are_refused_with_pointer() {
    let e = refused(
        json!({"type": "object", "properties": {"a": {"type": "string", "contentEncoding": "base64"}}}),
    );
    assert_eq!(e.keyword, "contentEncoding");
    assert_eq!(e.pointer, "/properties/a/contentEncoding");
    for kw in [
        "unevaluatedProperties",
        "unevaluatedItems",
        "$id",
        "$dynamicRef",
        "$dynamicAnchor",
        "contentMediaType",
        "definitions",
        "dependencies",
    ] {
        let e = refused(json!({ kw: {} }));
        assert_eq!(e.keyword, kw);
        assert!(e.message.contains("not in the enforced subset"), "{e}");
    }
    let nested = refused(json!({"properties": {"a": {"$schema": "x"}}}));
    assert_eq!(nested.pointer, "/properties/a/$schema");
}

#[test]
fn a_path_marked_property_name_is_refused() {
    let e = refused(json!({"propertyNames": {"anyOf": [{"format": "path"}]}}));
    assert_eq!(e.pointer, "/propertyNames/anyOf/0/format");
}

#[test]
fn shapes_the_meta_schema_refuses_name_their_keyword() {
    let e = refused(json!({"type": "object", "required": 5}));
    assert_eq!(
        (e.pointer.as_str(), e.keyword.as_str()),
        ("/required", "required")
    );
    assert!(e.message.contains("draft 2020-12"), "{e}");
    assert_eq!(refused(json!({"minItems": -1})).keyword, "minItems");
}

#[test]
fn the_widened_subset_is_enforced() {
    let cases = [
        (
            json!({"allOf": [{"minimum": 2}, {"maximum": 4}]}),
            json!(3),
            json!(5),
        ),
        (json!({"not": {"type": "string"}}), json!(1), json!("a")),
        (
            json!({"if": {"minimum": 10}, "then": {"multipleOf": 5}, "else": {"maximum": 3}}),
            json!(15),
            json!(12),
        ),
        (
            json!({"dependentRequired": {"a": ["b"]}}),
            json!({"a": 1, "b": 2}),
            json!({"a": 1}),
        ),
        (
            json!({"dependentSchemas": {"a": {"required": ["c"]}}}),
            json!({"a": 1, "c": 2}),
            json!({"a": 1}),
        ),
        (
            json!({"prefixItems": [{"type": "string"}], "items": {"type": "integer"}}),
            json!(["x", 1, 2]),
            json!(["x", "y"]),
        ),
        (
            json!({"contains": {"type": "integer"}, "minContains": 2}),
            json!(["x", 1, 2]),
            json!(["x", 1]),
        ),
        (
            json!({"minProperties": 1, "maxProperties": 2}),
            json!({"a": 1}),
            json!({}),
        ),
        (
            json!({"patternProperties": {"^n_": {"type": "integer"}}}),
            json!({"n_a": 1, "s": "x"}),
            json!({"n_a": "x"}),
        ),
        (
            json!({"propertyNames": {"maxLength": 3}}),
            json!({"abc": 1}),
            json!({"abcd": 1}),
        ),
        (json!({"multipleOf": 0.5}), json!(2.5), json!(2.2)),
        (
            json!({"$defs": {"s": {"$anchor": "small", "maximum": 3}}, "items": {"$ref": "#small"}}),
            json!([1, 2]),
            json!([1, 4]),
        ),
        (
            json!({"properties": {"self": {"$ref": "#"}}, "required": ["v"]}),
            json!({"v": 1, "self": {"v": 2}}),
            json!({"v": 1, "self": {}}),
        ),
    ];
    for (doc, good, bad) in cases {
        let s = schema(doc.clone());
        assert!(s.violations(&good).is_empty(), "{doc} should accept {good}");
        let found = s.violations(&bad);
        assert!(!found.is_empty(), "{doc} should refuse {bad}");
        assert!(!found.iter().next().unwrap().message.is_empty());
    }
}

#[test]
fn numbers_compare_by_value_as_the_spec_says() {
    let e = schema(json!({"enum": [1, "a"]}));
    assert!(e.violations(&json!(1.0)).is_empty());
    assert!(
        schema(json!({"const": 2.0}))
            .violations(&json!(2))
            .is_empty()
    );
    let unique = schema(json!({"uniqueItems": true}));
    assert!(!unique.violations(&json!([1, 1.0])).is_empty());
    assert!(unique.violations(&json!([1, 2])).is_empty());
    // Beyond 2^53 a bound held as f64 would round: 2^53 + 1 == 2^53.
    let bound = schema(json!({"maximum": 9_007_199_254_740_992_u64}));
    assert!(
        bound
            .violations(&json!(9_007_199_254_740_992_u64))
            .is_empty()
    );
    assert!(
        !bound
            .violations(&json!(9_007_199_254_740_993_u64))
            .is_empty(),
        "2^53 + 1 is over a maximum of 2^53"
    );
}

#[test]
fn patterns_are_ecma_262_regular_expressions() {
    // Look-ahead is ECMA-262, not Rust's `regex` syntax.
    let s = schema(json!({"type": "string", "pattern": "^(?!admin$)[a-z]+$"}));
    assert!(s.violations(&json!("alice")).is_empty());
    assert!(!s.violations(&json!("admin")).is_empty());
    // Unanchored, as the spec says: a match anywhere is enough.
    assert!(
        schema(json!({"pattern": "b"}))
            .violations(&json!("abc"))
            .is_empty()
    );
}

#[test]
fn unknown_formats_are_refused_because_they_would_not_be_enforced() {
    assert_eq!(
        refused(json!({"type": "string", "format": "email"})).keyword,
        "format"
    );
    schema(json!({"type": "string", "format": "path"}));
}

#[test]
fn bad_regex_and_refs_are_refused() {
    assert_eq!(refused(json!({"pattern": "("})).keyword, "pattern");
    assert_eq!(refused(json!({"$ref": "http://x/y"})).keyword, "$ref");
    assert_eq!(refused(json!({"$ref": "#/$defs/missing"})).keyword, "$ref");
    let e = refused(
        json!({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"anyOf": [{"$ref": "#/$defs/a"}]}}}),
    );
    assert!(e.message.contains("cycle"), "{e}");
}

#[test]
fn recursive_refs_through_properties_are_fine() {
    let s = schema(json!({
        "$defs": {"node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"}, "v": {"type": "integer"}}}},
        "$ref": "#/$defs/node"
    }));
    assert!(
        s.violations(&json!({"next": {"next": {"v": 1}}}))
            .is_empty()
    );
    let v = s.violations(&json!({"next": {"next": {"v": "x"}}}));
    assert_eq!(v.iter().next().unwrap().pointer, "/next/next/v");
}

#[test]
fn every_violation_is_reported_with_its_pointer() {
    let s = schema(json!({
        "type": "object",
        "properties": {
            "op": {"enum": ["add", "sub"]},
            "n": {"type": "integer", "minimum": 0, "maximum": 10},
            "name": {"type": "string", "minLength": 2, "maxLength": 3, "pattern": "^[a-z]+$"},
            "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2, "uniqueItems": true}
        },
        "required": ["op", "n"],
        "additionalProperties": false
    }));
    assert!(
        s.violations(&json!({"op": "add", "n": 3, "name": "ab", "tags": ["x"]}))
            .is_empty()
    );
    let v = s.violations(
        &json!({"op": "mul", "n": 11, "name": "ABCD", "tags": ["a", "a", 3], "extra": 1}),
    );
    let mut pointers: Vec<_> = v.iter().map(|v| v.pointer.as_str()).collect();
    pointers.sort_unstable();
    assert_eq!(
        pointers,
        [
            "", "/n", "/name", "/name", "/op", "/tags", "/tags", "/tags/2"
        ],
        "{v:?}"
    );
    assert!(
        v.iter().any(|v| v
            .message
            .contains("unexpected property `extra`; allowed: `n`, `name`, `op`, `tags`")),
        "{v:?}"
    );
    let missing = s.violations(&json!({}));
    assert_eq!(missing.total(), 2);
    let messages: Vec<_> = missing.iter().map(|v| v.message.as_str()).collect();
    assert!(messages.iter().any(|m| m.contains("`op`")), "{messages:?}");
    assert!(messages.iter().any(|m| m.contains("`n`")), "{messages:?}");
}

#[test]
fn integer_accepts_whole_floats_but_not_fractions() {
    let s = schema(json!({"type": "integer"}));
    assert!(s.violations(&json!(3)).is_empty());
    assert!(s.violations(&json!(3.0)).is_empty());
    assert_eq!(
        s.violations(&json!(3.5)).iter().next().unwrap().message,
        "must be integer, got number"
    );
}

#[test]
fn string_length_counts_characters_not_bytes() {
    let s = schema(json!({"type": "string", "maxLength": 2}));
    assert!(s.violations(&json!("日本")).is_empty());
    assert!(!s.violations(&json!("日本語")).is_empty());
}

#[test]
fn one_of_needs_exactly_one_match() {
    let s = schema(json!({"oneOf": [{"type": "integer"}, {"type": "number"}]}));
    assert!(s.violations(&json!(1.5)).is_empty());
    let both = s.violations(&json!(1));
    let message = &both.iter().next().unwrap().message;
    assert!(
        message.contains("exactly one of 2") && message.contains("more than one"),
        "{message}"
    );
    let any = schema(json!({"anyOf": [{"type": "string"}, {"type": "null"}]}));
    assert!(any.violations(&json!(null)).is_empty());
    assert!(!any.violations(&json!(1)).is_empty());
}

#[test]
fn violations_are_bounded() {
    let s = schema(json!({"type": "array", "items": {"type": "string"}}));
    let many: Vec<i32> = (0..1000).collect();
    let v = s.violations(&json!(many));
    assert_eq!(v.iter().count(), MAX_VIOLATIONS);
    assert_eq!(v.total(), 1000);
    let text = describe("x", &v);
    assert!(text.starts_with("1000 problems with x"), "{text}");
    assert!(
        text.ends_with(&format!("; and {} more", 1000 - MAX_VIOLATIONS)),
        "{text}"
    );
}

#[test]
fn path_pointers_find_every_path_argument() {
    let s = schema(json!({
        "$defs": {"p": {"type": "string", "format": "path"}},
        "type": "object",
        "properties": {
            "from": {"$ref": "#/$defs/p"},
            "to": {"type": "array", "items": {"$ref": "#/$defs/p"}},
            "note": {"type": "string"}
        }
    }));
    let found = s.path_pointers(&json!({"from": "a", "to": ["b", "c"], "note": "d"}));
    assert_eq!(found, ["/from", "/to/0", "/to/1"]);
}

#[test]
fn path_pointers_follow_every_applicator_a_path_can_hide_behind() {
    let s = schema(json!({
        "$defs": {"p": {"$anchor": "p", "type": "string", "format": "path"}},
        "type": "object",
        "properties": {
            "pair": {"prefixItems": [{"type": "string"}, {"$ref": "#p"}]},
            "either": {"anyOf": [{"type": "integer"}, {"$ref": "#/$defs/p"}]},
            "cond": {"if": {"type": "string"}, "then": {"format": "path"}},
            "all": {"allOf": [{"type": "string"}, {"format": "path"}]},
            "tagged": {
                "patternProperties": {"^file_": {"$ref": "#p"}},
                "additionalProperties": {"type": "string"}
            },
            "rest": {"additionalProperties": {"format": "path"}, "properties": {"plain": {}}}
        }
    }));
    let mut found = s.path_pointers(&json!({
        "pair": ["label", "a.txt"],
        "either": "b.txt",
        "cond": "c.txt",
        "all": "d.txt",
        "tagged": {"file_x": "e.txt", "note": "not a path"},
        "rest": {"plain": "not a path", "other": "f.txt"}
    }));
    found.sort_unstable();
    assert_eq!(
        found,
        [
            "/all",
            "/cond",
            "/either",
            "/pair/1",
            "/rest/other",
            "/tagged/file_x"
        ]
    );
}

#[test]
fn a_walk_deeper_than_its_bound_refuses_the_value_instead_of_overflowing() {
    let schema = Schema::compile(&json!({
        "type": "object",
        "properties": { "a": { "$ref": "#/$defs/n" } },
        "$defs": { "n": { "type": "object", "properties": { "a": { "$ref": "#/$defs/n" } } } },
    }))
    .unwrap();
    let nested = |levels: usize| (0..levels).fold(json!({}), |inner, _| json!({ "a": inner }));
    let limit = super::validate::MAX_WALK_DEPTH;
    // At the bound, on a thread with a small stack: the deepest value the
    // host validates fits in 256 KiB.
    let at_bound = nested(limit);
    let fits = std::thread::scope(|scope| {
        std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn_scoped(scope, || schema.violations(&at_bound).is_empty())
            .map(|t| t.join().unwrap_or(false))
            .unwrap_or(false)
    });
    assert!(fits);
    let deep = nested(2 * limit);
    let violations = schema.violations(&deep);
    assert_eq!(violations.total(), 1, "{violations:?}");
    assert!(
        violations
            .iter()
            .next()
            .unwrap()
            .message
            .contains("nests deeper"),
        "{violations:?}"
    );
}

#[test]
fn a_long_ref_chain_is_refused_at_compile_time_without_recursion() {
    let mut defs = serde_json::Map::new();
    for i in 0..200_000 {
        defs.insert(
            format!("d{i}"),
            json!({ "$ref": format!("#/$defs/d{}", i + 1) }),
        );
    }
    defs.insert("d200000".into(), json!({ "type": "string" }));
    let err = Schema::compile(&json!({ "type": "object", "$defs": defs })).unwrap_err();
    assert!(err.message.contains("more than 32"), "{err:?}");
    let mut short = serde_json::Map::new();
    for i in 0..31 {
        short.insert(
            format!("d{i}"),
            json!({ "$ref": format!("#/$defs/d{}", i + 1) }),
        );
    }
    short.insert("d31".into(), json!({ "type": "string" }));
    let ok = json!({ "type": "object", "properties": { "x": { "$ref": "#/$defs/d0" } }, "$defs": short });
    assert!(Schema::compile(&ok).is_ok());
}

#[test]
fn header_annotations_follow_sep_2243_or_the_schema_is_refused() {
    let ok = json!({"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "priority": {"type": "integer", "x-mcp-header": "Priority"},
        "nested": {"type": "object", "properties": {
            "flag": {"type": "boolean", "x-mcp-header": "X-Flag_1.v~"}
        }}
    }});
    schema(ok);
    let bad = [
        (
            json!({"type": "object", "x-mcp-header": "Root"}),
            "/x-mcp-header",
            "property",
        ),
        (
            json!({"properties": {"a": {"type": "string", "x-mcp-header": ""}}}),
            "/properties/a/x-mcp-header",
            "token",
        ),
        (
            json!({"properties": {"a": {"type": "string", "x-mcp-header": "My Region"}}}),
            "/properties/a/x-mcp-header",
            "token",
        ),
        (
            json!({"properties": {"a": {"type": "string", "x-mcp-header": "Region:Primary"}}}),
            "/properties/a/x-mcp-header",
            "token",
        ),
        (
            json!({"properties": {"a": {"type": "string", "x-mcp-header": "Région"}}}),
            "/properties/a/x-mcp-header",
            "token",
        ),
        (
            json!({"properties": {"a": {"type": "string", "x-mcp-header": 7}}}),
            "/properties/a/x-mcp-header",
            "token",
        ),
        (
            json!({"properties": {"a": {"type": "number", "x-mcp-header": "Score"}}}),
            "/properties/a/x-mcp-header",
            "string, integer or boolean",
        ),
        (
            json!({"properties": {"a": {"type": "object", "x-mcp-header": "Data"}}}),
            "/properties/a/x-mcp-header",
            "string, integer or boolean",
        ),
        (
            json!({"properties": {"a": {"x-mcp-header": "Untyped"}}}),
            "/properties/a/x-mcp-header",
            "string, integer or boolean",
        ),
        (
            json!({"properties": {
                "a": {"type": "string", "x-mcp-header": "MyField"},
                "b": {"type": "string", "x-mcp-header": "myfield"}
            }}),
            "/properties/b/x-mcp-header",
            "named twice",
        ),
        (
            json!({"$defs": {"d": {"type": "string", "x-mcp-header": "Hidden"}}}),
            "/$defs/d/x-mcp-header",
            "property",
        ),
        (
            json!({"properties": {"a": {"anyOf": [{"type": "string", "x-mcp-header": "Branch"}]}}}),
            "/properties/a/anyOf/0/x-mcp-header",
            "property",
        ),
        (
            json!({"properties": {"a": {"type": "array", "items": {"type": "string", "x-mcp-header": "Item"}}}}),
            "/properties/a/items/x-mcp-header",
            "property",
        ),
    ];
    for (doc, pointer, says) in bad {
        let e = refused(doc.clone());
        assert_eq!(e.keyword, "x-mcp-header", "{doc}: {e}");
        assert_eq!(e.pointer, pointer, "{doc}: {e}");
        assert!(e.message.contains(says), "{doc}: {e}");
    }
}
