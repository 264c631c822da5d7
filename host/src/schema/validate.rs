//! Checks a JSON value against a compiled [`Schema`], collecting every
//! violation with its JSON pointer.

use super::compile::{
    Additional, Node, T_ARRAY, T_BOOLEAN, T_INTEGER, T_NULL, T_NUMBER, T_OBJECT, T_STRING,
};
use super::{Format, MAX_VIOLATIONS, Schema, Violation};
use serde_json::Value;
use std::fmt::Write;

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

fn is_integer(v: &Value) -> bool {
    match v {
        Value::Number(n) => {
            n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        _ => false,
    }
}

fn type_matches(bits: u8, v: &Value) -> bool {
    match v {
        Value::Null => bits & T_NULL != 0,
        Value::Bool(_) => bits & T_BOOLEAN != 0,
        Value::Object(_) => bits & T_OBJECT != 0,
        Value::Array(_) => bits & T_ARRAY != 0,
        Value::Number(_) => bits & T_NUMBER != 0 || (bits & T_INTEGER != 0 && is_integer(v)),
        Value::String(_) => bits & T_STRING != 0,
    }
}

fn expected(bits: u8) -> String {
    let names = [
        (T_NULL, "null"),
        (T_BOOLEAN, "boolean"),
        (T_OBJECT, "object"),
        (T_ARRAY, "array"),
        (T_NUMBER, "number"),
        (T_INTEGER, "integer"),
        (T_STRING, "string"),
    ];
    let listed: Vec<_> = names
        .iter()
        .filter(|(b, _)| bits & b != 0)
        .map(|(_, n)| *n)
        .collect();
    listed.join(" or ")
}

fn short(v: &Value) -> String {
    let text = v.to_string();
    match text.char_indices().nth(40) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

/// Appends `/token`, escaped as JSON pointers require, and returns the
/// length to truncate back to. Escapes in place: every property of every
/// call passes here, and its pointer is only read when it breaks a rule.
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

fn violate(out: &mut Vec<Violation>, ptr: &str, message: String) {
    if out.len() <= MAX_VIOLATIONS {
        out.push(Violation {
            pointer: ptr.to_owned(),
            message,
        });
    }
}

/// Schema nodes one walk may be inside at once (`$ref` links, `anyOf` and
/// `oneOf` branches and the value's own nesting together). Each is a frame
/// on the stack of whatever thread validates (the HTTP server's are
/// small); load-time bounds on `$ref` chains and schema depth keep honest
/// schemas far below it, and a walk that reaches it refuses the value
/// instead of overflowing.
pub const MAX_WALK_DEPTH: usize = 1024;

pub(super) fn check(
    schema: &Schema,
    node: &Node,
    v: &Value,
    ptr: &mut String,
    out: &mut Vec<Violation>,
    depth: usize,
) {
    if depth > MAX_WALK_DEPTH {
        out.push(Violation {
            pointer: ptr.clone(),
            message: format!(
                "nests deeper than the {MAX_WALK_DEPTH} schema levels the host validates"
            ),
        });
        return;
    }
    if let Some(index) = node.reference {
        check(schema, &schema.defs[index], v, ptr, out, depth + 1);
    }
    if let Some(bits) = node.types
        && !type_matches(bits, v)
    {
        violate(
            out,
            ptr,
            format!("must be {}, got {}", expected(bits), type_name(v)),
        );
        return;
    }
    if let Some(options) = &node.enumeration
        && !options.contains(v)
    {
        let listed: Vec<_> = options.iter().map(short).collect();
        violate(
            out,
            ptr,
            format!("must be one of {}, got {}", listed.join(", "), short(v)),
        );
    }
    if let Some(c) = &node.constant
        && c != v
    {
        violate(out, ptr, format!("must be {}, got {}", short(c), short(v)));
    }
    match v {
        Value::Number(n) => {
            let x = n.as_f64().unwrap_or(f64::NAN);
            if let Some(min) = node.minimum
                && x < min
            {
                violate(out, ptr, format!("must be at least {min}, got {n}"));
            }
            if let Some(max) = node.maximum
                && x > max
            {
                violate(out, ptr, format!("must be at most {max}, got {n}"));
            }
            if let Some(min) = node.exclusive_minimum
                && x <= min
            {
                violate(out, ptr, format!("must be greater than {min}, got {n}"));
            }
            if let Some(max) = node.exclusive_maximum
                && x >= max
            {
                violate(out, ptr, format!("must be less than {max}, got {n}"));
            }
        }
        Value::String(s) => {
            let needs_len = node.min_length.is_some() || node.max_length.is_some();
            let len = if needs_len {
                s.chars().count() as u64
            } else {
                0
            };
            if let Some(min) = node.min_length
                && len < min
            {
                violate(
                    out,
                    ptr,
                    format!("must be at least {min} characters long, got {len}"),
                );
            }
            if let Some(max) = node.max_length
                && len > max
            {
                violate(
                    out,
                    ptr,
                    format!("must be at most {max} characters long, got {len}"),
                );
            }
            if let Some(re) = &node.pattern
                && !re.is_match(s)
            {
                violate(
                    out,
                    ptr,
                    format!("must match the pattern `{}`", re.as_str()),
                );
            }
            if node.format == Some(Format::Uri) && url::Url::parse(s).is_err() {
                violate(
                    out,
                    ptr,
                    "must be an absolute URL such as `https://example.org/page`".into(),
                );
            }
        }
        Value::Array(items) => {
            if let Some(min) = node.min_items
                && (items.len() as u64) < min
            {
                violate(
                    out,
                    ptr,
                    format!("must have at least {min} items, got {}", items.len()),
                );
            }
            if let Some(max) = node.max_items
                && (items.len() as u64) > max
            {
                violate(
                    out,
                    ptr,
                    format!("must have at most {max} items, got {}", items.len()),
                );
            }
            if node.unique_items {
                for (i, item) in items.iter().enumerate() {
                    if items[..i].contains(item) {
                        violate(
                            out,
                            ptr,
                            format!("must not repeat items; item {i} repeats an earlier one"),
                        );
                        break;
                    }
                }
            }
            if let Some(item_schema) = &node.items {
                for (i, item) in items.iter().enumerate() {
                    let len = push_index(ptr, i);
                    check(schema, item_schema, item, ptr, out, depth + 1);
                    ptr.truncate(len);
                }
            }
        }
        Value::Object(map) => {
            for name in &node.required {
                if !map.contains_key(name) {
                    violate(
                        out,
                        ptr,
                        format!("is missing the required property `{name}`"),
                    );
                }
            }
            for (key, value) in map {
                let len = push_token(ptr, key);
                match (node.properties.get(key), &node.additional) {
                    (Some(sub), _) => check(schema, sub, value, ptr, out, depth + 1),
                    (None, Additional::Allowed) => {}
                    (None, Additional::Schema(sub)) => {
                        check(schema, sub, value, ptr, out, depth + 1)
                    }
                    (None, Additional::Denied) => {
                        ptr.truncate(len);
                        let allowed: Vec<_> =
                            node.properties.keys().map(|k| format!("`{k}`")).collect();
                        violate(
                            out,
                            ptr,
                            format!(
                                "has an unexpected property `{key}`; allowed: {}",
                                if allowed.is_empty() {
                                    "none".to_owned()
                                } else {
                                    allowed.join(", ")
                                }
                            ),
                        );
                    }
                }
                ptr.truncate(len);
            }
        }
        Value::Null | Value::Bool(_) => {}
    }
    if !node.any_of.is_empty() {
        let matched = node.any_of.iter().any(|sub| {
            let mut scratch = Vec::new();
            check(schema, sub, v, &mut ptr.clone(), &mut scratch, depth + 1);
            scratch.is_empty()
        });
        if !matched {
            violate(
                out,
                ptr,
                format!(
                    "must match at least one of {} alternatives (anyOf)",
                    node.any_of.len()
                ),
            );
        }
    }
    if !node.one_of.is_empty() {
        let matched = node
            .one_of
            .iter()
            .filter(|sub| {
                let mut scratch = Vec::new();
                check(schema, sub, v, &mut ptr.clone(), &mut scratch, depth + 1);
                scratch.is_empty()
            })
            .count();
        if matched != 1 {
            violate(
                out,
                ptr,
                format!(
                    "must match exactly one of {} alternatives (oneOf), matched {matched}",
                    node.one_of.len()
                ),
            );
        }
    }
}

/// Collects the pointers of strings marked with `format` in a value that
/// already passed validation.
pub(super) fn marked(
    format: Format,
    schema: &Schema,
    node: &Node,
    v: &Value,
    ptr: &mut String,
    out: &mut Vec<String>,
    depth: usize,
) {
    // Validation refuses a value this deep before any path is looked for.
    if depth > MAX_WALK_DEPTH {
        return;
    }
    if let Some(index) = node.reference {
        marked(format, schema, &schema.defs[index], v, ptr, out, depth + 1);
    }
    if node.format == Some(format) && v.is_string() && !out.contains(ptr) {
        out.push(ptr.clone());
    }
    match v {
        Value::Object(map) => {
            for (key, value) in map {
                let sub = match (node.properties.get(key), &node.additional) {
                    (Some(sub), _) => sub,
                    (None, Additional::Schema(sub)) => sub,
                    (None, Additional::Allowed | Additional::Denied) => continue,
                };
                let len = push_token(ptr, key);
                marked(format, schema, sub, value, ptr, out, depth + 1);
                ptr.truncate(len);
            }
        }
        Value::Array(items) => {
            if let Some(sub) = &node.items {
                for (i, item) in items.iter().enumerate() {
                    let len = push_index(ptr, i);
                    marked(format, schema, sub, item, ptr, out, depth + 1);
                    ptr.truncate(len);
                }
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => {}
    }
    for sub in node.any_of.iter().chain(&node.one_of) {
        marked(format, schema, sub, v, ptr, out, depth + 1);
    }
}
