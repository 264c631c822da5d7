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
        "if",
        "then",
        "not",
        "allOf",
        "patternProperties",
        "dependentRequired",
        "multipleOf",
    ] {
        let e = refused(json!({ kw: {} }));
        assert_eq!(e.keyword, kw);
    }
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
    assert_eq!(v[0].pointer, "/next/next/v");
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
    let pointers: Vec<_> = v.iter().map(|v| v.pointer.as_str()).collect();
    assert_eq!(
        pointers,
        [
            "", "/n", "/name", "/name", "/op", "/tags", "/tags", "/tags/2"
        ],
        "{v:?}"
    );
    assert!(
        v[0].message.contains("unexpected property `extra`"),
        "{}",
        v[0].message
    );
    let missing = s.violations(&json!({}));
    assert_eq!(missing.len(), 2);
    assert!(missing[0].message.contains("`op`"));
}

#[test]
fn integer_accepts_whole_floats_but_not_fractions() {
    let s = schema(json!({"type": "integer"}));
    assert!(s.violations(&json!(3)).is_empty());
    assert!(s.violations(&json!(3.0)).is_empty());
    assert_eq!(
        s.violations(&json!(3.5))[0].message,
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
    assert!(
        s.violations(&json!(1))
            .first()
            .unwrap()
            .message
            .contains("matched 2")
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
    assert!(v.len() <= MAX_VIOLATIONS + 1);
    assert!(describe("x", &v).contains("more"));
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
fn a_walk_deeper_than_its_bound_refuses_the_value_instead_of_overflowing() {
    let schema = Schema::compile(&json!({
        "type": "object",
        "properties": { "a": { "$ref": "#/$defs/n" } },
        "$defs": { "n": { "type": "object", "properties": { "a": { "$ref": "#/$defs/n" } } } },
    }))
    .unwrap();
    let nested = |levels: usize| (0..levels).fold(json!({}), |inner, _| json!({ "a": inner }));
    assert!(schema.violations(&nested(100)).is_empty());
    // Two frames a level (the property, then its `$ref`).
    let deep = nested(super::validate::MAX_WALK_DEPTH);
    let violations = schema.violations(&deep);
    assert_eq!(violations.len(), 1, "{violations:?}");
    assert!(
        violations[0].message.contains("nests deeper"),
        "{violations:?}"
    );
    assert!(schema.path_pointers(&deep).is_empty());
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
