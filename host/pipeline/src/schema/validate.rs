//! Checks a JSON value against a compiled [`Schema`] with the `jsonschema`
//! crate and words each violation for a model to act on, with its JSON
//! pointer; finds the strings a schema marks with a `format`.

use super::node::Node;
use super::{Format, MAX_VIOLATIONS, Schema, Violation, Violations};
use jsonschema::error::{TypeKind, ValidationError, ValidationErrorKind};
use serde_json::Value;
use std::fmt::Write;

/// How deeply a value may nest under a schema whose `$ref`s lead back into
/// itself. Validation takes stack frames per level on whatever thread runs
/// it (the HTTP server's among them); values parsed from JSON text never
/// nest deeper than this (serde_json's limit), so only a value built in
/// Rust can reach it, and it is refused instead of overflowing the stack.
pub const MAX_WALK_DEPTH: usize = 128;

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Object(_) => "object",
        Value::Array(_) => "array",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
    }
}

fn short(v: &Value) -> String {
    let text = v.to_string();
    match text.char_indices().nth(40) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

/// Deeper than `limit`, walking with a stack of its own.
fn nests_deeper(v: &Value, limit: usize) -> bool {
    let mut stack = vec![(v, 0usize)];
    while let Some((v, depth)) = stack.pop() {
        if depth > limit {
            return true;
        }
        match v {
            Value::Array(items) => stack.extend(items.iter().map(|i| (i, depth + 1))),
            Value::Object(map) => stack.extend(map.values().map(|i| (i, depth + 1))),
            _ => {}
        }
    }
    false
}

pub(super) fn check(schema: &Schema, value: &Value) -> Violations {
    if schema.recursive && nests_deeper(value, MAX_WALK_DEPTH) {
        return Violations {
            listed: vec![Violation {
                pointer: String::new(),
                message: format!(
                    "nests deeper than the {MAX_WALK_DEPTH} levels the host validates under a \
                     recursive schema"
                ),
            }],
            total: 1,
        };
    }
    if schema.validator.is_valid(value) {
        return Violations::default();
    }
    let mut out = Violations::default();
    for error in schema.validator.iter_errors(value) {
        for violation in worded(&error, &schema.doc) {
            out.total += 1;
            if out.listed.len() < MAX_VIOLATIONS {
                out.listed.push(violation);
            }
        }
    }
    out
}

/// The schema object holding the keyword an error comes from.
fn parent_of<'a>(error: &ValidationError<'_>, doc: &'a Value) -> Option<&'a Value> {
    let path = error.schema_path().as_str();
    let parent = path.rsplit_once('/').map_or("", |(parent, _)| parent);
    doc.pointer(parent)
}

fn alternatives(error: &ValidationError<'_>) -> usize {
    match error.kind() {
        ValidationErrorKind::AnyOf { context }
        | ValidationErrorKind::OneOfNotValid { context }
        | ValidationErrorKind::OneOfMultipleValid { context } => context.len(),
        _ => 0,
    }
}

/// One error as messages in the host's words (an `additionalProperties`
/// error names every unexpected property; each becomes its own violation).
fn worded(error: &ValidationError<'_>, doc: &Value) -> Vec<Violation> {
    let pointer = error.instance_path().as_str().to_owned();
    let got = error.instance();
    let one = |message: String| {
        vec![Violation {
            pointer: pointer.clone(),
            message,
        }]
    };
    match error.kind() {
        ValidationErrorKind::Type { kind } => {
            let expected = match kind {
                TypeKind::Single(t) => t.to_string(),
                TypeKind::Multiple(set) => set
                    .iter()
                    .map(|t| t.to_string())
                    .collect::<Vec<_>>()
                    .join(" or "),
            };
            one(format!("must be {expected}, got {}", type_name(got)))
        }
        ValidationErrorKind::Required { property } => one(format!(
            "is missing the required property `{}`",
            property.as_str().unwrap_or_default()
        )),
        ValidationErrorKind::AdditionalProperties { unexpected } => {
            let allowed = allowed_properties(error, doc);
            unexpected
                .iter()
                .map(|key| Violation {
                    pointer: pointer.clone(),
                    message: format!("has an unexpected property `{key}`; allowed: {allowed}"),
                })
                .collect()
        }
        ValidationErrorKind::Enum { options } => {
            let listed: Vec<String> = options
                .as_array()
                .map(|o| o.iter().map(short).collect())
                .unwrap_or_default();
            one(format!(
                "must be one of {}, got {}",
                listed.join(", "),
                short(got)
            ))
        }
        ValidationErrorKind::Constant { expected_value } => one(format!(
            "must be {}, got {}",
            short(expected_value),
            short(got)
        )),
        ValidationErrorKind::Minimum { limit } => {
            one(format!("must be at least {limit}, got {}", short(got)))
        }
        ValidationErrorKind::Maximum { limit } => {
            one(format!("must be at most {limit}, got {}", short(got)))
        }
        ValidationErrorKind::ExclusiveMinimum { limit } => {
            one(format!("must be greater than {limit}, got {}", short(got)))
        }
        ValidationErrorKind::ExclusiveMaximum { limit } => {
            one(format!("must be less than {limit}, got {}", short(got)))
        }
        ValidationErrorKind::MultipleOf { multiple_of } => one(format!(
            "must be a multiple of {multiple_of}, got {}",
            short(got)
        )),
        ValidationErrorKind::MinLength { limit }
        | ValidationErrorKind::MaxLength { limit }
        | ValidationErrorKind::MinItems { limit }
        | ValidationErrorKind::MaxItems { limit }
        | ValidationErrorKind::MinProperties { limit }
        | ValidationErrorKind::MaxProperties { limit } => {
            one(size_message(error.kind(), *limit, got))
        }
        ValidationErrorKind::Pattern { pattern } => {
            one(format!("must match the pattern `{pattern}`"))
        }
        ValidationErrorKind::BacktrackLimitExceeded { .. }
        | ValidationErrorKind::RegexEngineFailure { .. } => {
            one("could not be matched against its pattern within the host's matching budget".into())
        }
        ValidationErrorKind::Format { format } if format == "uri" => {
            one("must be an absolute URL such as `https://example.org/page`".into())
        }
        ValidationErrorKind::Format { format } => one(format!("must be a valid `{format}`")),
        ValidationErrorKind::UniqueItems => one("must not repeat items".into()),
        ValidationErrorKind::Contains => {
            let (min, max) = contains_bounds(error, doc);
            one(match (min, max) {
                (Some(min), Some(max)) => {
                    format!("must have between {min} and {max} items matching `contains`")
                }
                (Some(min), None) => format!("must have at least {min} items matching `contains`"),
                (None, Some(max)) => format!("must have at most {max} items matching `contains`"),
                (None, None) => "must have an item matching `contains`".into(),
            })
        }
        ValidationErrorKind::PropertyNames { error } => {
            let inner = worded(error, doc);
            let reason = inner
                .first()
                .map_or_else(String::new, |v| format!(": {}", v.message));
            one(format!(
                "has a property name {} that is not allowed{reason}",
                short(error.instance())
            ))
        }
        ValidationErrorKind::AnyOf { .. } => one(format!(
            "must match at least one of {} alternatives (anyOf)",
            alternatives(error)
        )),
        ValidationErrorKind::OneOfNotValid { .. } => one(format!(
            "must match exactly one of {} alternatives (oneOf), matched 0",
            alternatives(error)
        )),
        ValidationErrorKind::OneOfMultipleValid { context } => one(format!(
            "must match exactly one of {} alternatives (oneOf), matched more than one",
            context.len()
        )),
        ValidationErrorKind::Not { .. } => one("must not match the schema under `not`".into()),
        ValidationErrorKind::FalseSchema => one("is not allowed here".into()),
        _ => {
            let path = error.schema_path().as_str();
            one(format!(
                "breaks `{}`",
                path.rsplit('/').next().unwrap_or(path)
            ))
        }
    }
}

/// The words of a size bound: "must be at least 3 characters long, got 1",
/// "must have at most 2 items, got 5", "... properties, got 0".
fn size_message(kind: &ValidationErrorKind, limit: u64, got: &Value) -> String {
    use ValidationErrorKind as K;
    let bound = match kind {
        K::MinLength { .. } | K::MinItems { .. } | K::MinProperties { .. } => "at least",
        _ => "at most",
    };
    match (kind, got) {
        (K::MinLength { .. } | K::MaxLength { .. }, Value::String(s)) => format!(
            "must be {bound} {limit} characters long, got {}",
            s.chars().count()
        ),
        (_, Value::Array(list)) => format!("must have {bound} {limit} items, got {}", list.len()),
        (_, Value::Object(map)) => {
            format!("must have {bound} {limit} properties, got {}", map.len())
        }
        _ => format!("must be {bound} {limit} in size"),
    }
}

/// `properties` beside the `additionalProperties` that refused a name, for
/// the message: which names the tool does take.
fn allowed_properties(error: &ValidationError<'_>, doc: &Value) -> String {
    let names: Vec<String> = parent_of(error, doc)
        .and_then(|parent| parent.get("properties"))
        .and_then(Value::as_object)
        .map(|m| m.keys().map(|k| format!("`{k}`")).collect())
        .unwrap_or_default();
    if names.is_empty() {
        "none".to_owned()
    } else {
        names.join(", ")
    }
}

fn contains_bounds(error: &ValidationError<'_>, doc: &Value) -> (Option<u64>, Option<u64>) {
    let parent = parent_of(error, doc);
    let bound = |kw| parent.and_then(|p| p.get(kw)).and_then(Value::as_u64);
    (bound("minContains"), bound("maxContains"))
}

/// Collects the pointers of strings marked with `format` in a value that
/// already passed validation. Follows every applicator, matched or not
/// (see [`Node`]), so a string any branch marks is found.
pub(super) fn marked(
    format: Format,
    targets: &[Node],
    node: &Node,
    v: &Value,
    ptr: &mut String,
    out: &mut Vec<String>,
    depth: usize,
) {
    // Validation refuses a value this deep before any path is looked for.
    if depth > 4 * MAX_WALK_DEPTH {
        return;
    }
    if let Some(target) = node.reference.and_then(|i| targets.get(i)) {
        marked(format, targets, target, v, ptr, out, depth + 1);
    }
    if node.format == Some(format) && v.is_string() && !out.contains(ptr) {
        out.push(ptr.clone());
    }
    match v {
        Value::Object(map) => {
            for (key, value) in map {
                let len = push_token(ptr, key);
                let named = node.properties.get(key);
                let mut matched = named.is_some();
                if let Some(sub) = named {
                    marked(format, targets, sub, value, ptr, out, depth + 1);
                }
                for (pattern, sub) in &node.pattern_properties {
                    if pattern.matches(key) {
                        matched = true;
                        marked(format, targets, sub, value, ptr, out, depth + 1);
                    }
                }
                if let (false, Some(sub)) = (matched, &node.additional) {
                    marked(format, targets, sub, value, ptr, out, depth + 1);
                }
                ptr.truncate(len);
            }
        }
        Value::Array(list) => {
            for (i, item) in list.iter().enumerate() {
                let len = push_index(ptr, i);
                let positional = node.prefix_items.get(i);
                if let Some(sub) = positional {
                    marked(format, targets, sub, item, ptr, out, depth + 1);
                } else if let Some(sub) = &node.items {
                    marked(format, targets, sub, item, ptr, out, depth + 1);
                }
                if let Some(sub) = &node.contains {
                    marked(format, targets, sub, item, ptr, out, depth + 1);
                }
                ptr.truncate(len);
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => {}
    }
    for sub in &node.in_place {
        marked(format, targets, sub, v, ptr, out, depth + 1);
    }
}

/// Appends `/token`, escaped as JSON pointers require, and returns the
/// length to truncate back to.
fn push_token(ptr: &mut String, token: &str) -> usize {
    let len = ptr.len();
    ptr.push('/');
    for c in token.chars() {
        match c {
            '~' => ptr.push_str("~0"),
            '/' => ptr.push_str("~1"),
            c => ptr.push(c),
        }
    }
    len
}

/// Appends `/index` for an array item.
fn push_index(ptr: &mut String, index: usize) -> usize {
    let len = ptr.len();
    // Writing into a `String` cannot fail.
    let _ = write!(ptr, "/{index}");
    len
}
