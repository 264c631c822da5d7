//! The form of a question: a flat JSON Schema object in the subset MCP
//! elicitation allows (strings, numbers, booleans, enums, multi-selects),
//! checked before anyone is shown it; no field or title a plugin writes may
//! pass for the host's own approval prompt. Only checks: never asks.

use serde_json::{Map, Value};

/// Most fields one form may have.
pub const MAX_FIELDS: usize = 32;

/// Field names and titles only the host's own approval prompt may use, so
/// that no plugin can ask a question that looks like it (a field named so,
/// or a title that starts so, is the plugin's defect).
pub const RESERVED_PREFIX: &str = "toolwarden";

const COMMON: &[&str] = &["type", "title", "description", "default"];

/// Checks a form against the subset MCP elicitation allows: says what is
/// wrong, starting with "is" or "has".
pub(super) fn check_form(form: &Value) -> Result<(), String> {
    let map = form.as_object().ok_or("is not a JSON object")?;
    plain_text(form)?;
    only_keys(
        map,
        &[
            "type",
            "properties",
            "required",
            "title",
            "description",
            "$schema",
        ],
        "",
    )?;
    if map.get("type") != Some(&Value::String("object".into())) {
        return Err("has no `type: \"object\"`".into());
    }
    let properties = map
        .get("properties")
        .and_then(Value::as_object)
        .ok_or("has no `properties` object")?;
    if properties.len() > MAX_FIELDS {
        return Err(format!(
            "has {} fields, more than {MAX_FIELDS}",
            properties.len()
        ));
    }
    for (name, field) in properties {
        if reserved(name) {
            return Err(format!(
                "has a field `{name}`: names that start with `{RESERVED_PREFIX}` are the host's"
            ));
        }
        check_field(name, field)?;
    }
    if let Some(required) = map.get("required") {
        let names = required
            .as_array()
            .ok_or("has a `required` that is not a list")?;
        for name in names {
            let name = name
                .as_str()
                .ok_or("has a `required` entry that is not text")?;
            if !properties.contains_key(name) {
                return Err(format!("requires `{name}`, which is not one of its fields"));
            }
        }
    }
    for key in ["title", "description", "$schema"] {
        if map.get(key).is_some_and(|v| !v.is_string()) {
            return Err(format!("has a `{key}` that is not text"));
        }
    }
    Ok(())
}

fn check_field(name: &str, field: &Value) -> Result<(), String> {
    let at = format!("field `{name}`");
    let map = field
        .as_object()
        .ok_or_else(|| format!("has {at} that is not an object"))?;
    for key in ["title", "description"] {
        if map.get(key).is_some_and(|v| !v.is_string()) {
            return Err(format!("has {at} whose `{key}` is not text"));
        }
    }
    let kind = map.get("type").and_then(Value::as_str).unwrap_or("");
    match kind {
        "string" => {
            let mut allowed = COMMON.to_vec();
            allowed.extend([
                "minLength",
                "maxLength",
                "format",
                "enum",
                "enumNames",
                "oneOf",
            ]);
            only_keys(map, &allowed, &at)?;
            if let Some(format) = map.get("format")
                && !matches!(
                    format.as_str(),
                    Some("email" | "uri" | "date" | "date-time")
                )
            {
                return Err(format!(
                    "has {at} with a `format` other than email, uri, date or date-time"
                ));
            }
            for key in ["minLength", "maxLength"] {
                if map.get(key).is_some_and(|v| v.as_u64().is_none()) {
                    return Err(format!("has {at} whose `{key}` is not a whole number"));
                }
            }
            if let Some(choices) = map.get("enum") {
                strings(choices).map_err(|e| format!("has {at} whose `enum` {e}"))?;
            }
            if let Some(names) = map.get("enumNames") {
                let n = strings(names).map_err(|e| format!("has {at} whose `enumNames` {e}"))?;
                if map.get("enum").and_then(Value::as_array).map(Vec::len) != Some(n) {
                    return Err(format!(
                        "has {at} whose `enumNames` does not match its `enum`"
                    ));
                }
            }
            if let Some(choices) = map.get("oneOf") {
                titled(choices).map_err(|e| format!("has {at} whose `oneOf` {e}"))?;
            }
            default_is(map, Value::is_string, &at)
        }
        "number" | "integer" => {
            let mut allowed = COMMON.to_vec();
            allowed.extend(["minimum", "maximum"]);
            only_keys(map, &allowed, &at)?;
            for key in ["minimum", "maximum"] {
                if map.get(key).is_some_and(|v| !v.is_number()) {
                    return Err(format!("has {at} whose `{key}` is not a number"));
                }
            }
            default_is(map, Value::is_number, &at)
        }
        "boolean" => {
            only_keys(map, COMMON, &at)?;
            default_is(map, Value::is_boolean, &at)
        }
        "array" => {
            let mut allowed = COMMON.to_vec();
            allowed.extend(["items", "minItems", "maxItems"]);
            only_keys(map, &allowed, &at)?;
            for key in ["minItems", "maxItems"] {
                if map.get(key).is_some_and(|v| v.as_u64().is_none()) {
                    return Err(format!("has {at} whose `{key}` is not a whole number"));
                }
            }
            let items = map
                .get("items")
                .and_then(Value::as_object)
                .ok_or_else(|| format!("has {at}, a multi-select, without an `items` object"))?;
            if let Some(choices) = items.get("anyOf") {
                only_keys(items, &["anyOf"], &at)?;
                titled(choices).map_err(|e| format!("has {at} whose `items.anyOf` {e}"))?;
            } else {
                only_keys(items, &["type", "enum"], &at)?;
                if items.get("type") != Some(&Value::String("string".into())) {
                    return Err(format!("has {at} whose items are not `type: \"string\"`"));
                }
                let choices = items
                    .get("enum")
                    .ok_or_else(|| format!("has {at} whose items have no `enum`"))?;
                strings(choices).map_err(|e| format!("has {at} whose `items.enum` {e}"))?;
            }
            default_is(
                map,
                |v| v.as_array().is_some_and(|a| a.iter().all(Value::is_string)),
                &at,
            )
        }
        _ => Err(format!(
            "has {at} whose `type` is not string, number, integer, boolean or array"
        )),
    }
}

fn reserved(text: &str) -> bool {
    text.trim_start()
        .get(..RESERVED_PREFIX.len())
        .is_some_and(|head| head.eq_ignore_ascii_case(RESERVED_PREFIX))
}

/// Every text of a form is plain: no control characters but newlines and
/// tabs (a terminal escape could redraw the prompt), no bidi overrides,
/// and no title that claims to be the host's.
fn plain_text(form: &Value) -> Result<(), String> {
    fn walk(value: &Value, key: Option<&str>) -> Result<(), String> {
        match value {
            Value::String(text) => {
                if crate::presentation::has_hidden(text) {
                    return Err("has text with control characters or direction overrides".into());
                }
                if key == Some("title") && reserved(text) {
                    return Err(format!(
                        "has the title `{text}`: titles that start with `{RESERVED_PREFIX}` are \
                         the host's"
                    ));
                }
                Ok(())
            }
            Value::Array(items) => items.iter().try_for_each(|v| walk(v, key)),
            Value::Object(map) => map.iter().try_for_each(|(k, v)| {
                if crate::presentation::has_control(k) {
                    return Err("has a key with control characters".into());
                }
                walk(v, Some(k))
            }),
            Value::Null | Value::Bool(_) | Value::Number(_) => Ok(()),
        }
    }
    walk(form, None)
}

fn only_keys(map: &Map<String, Value>, allowed: &[&str], at: &str) -> Result<(), String> {
    match map.keys().find(|k| !allowed.contains(&k.as_str())) {
        None => Ok(()),
        Some(key) if at.is_empty() => Err(format!(
            "has `{key}`, which a form may not use (allowed: {})",
            allowed.join(", ")
        )),
        Some(key) => Err(format!(
            "has {at} with `{key}`, which a form field of its kind may not use (allowed: {})",
            allowed.join(", ")
        )),
    }
}

fn default_is(map: &Map<String, Value>, fits: fn(&Value) -> bool, at: &str) -> Result<(), String> {
    match map.get("default") {
        Some(value) if !fits(value) => Err(format!("has {at} whose `default` is not of its type")),
        _ => Ok(()),
    }
}

/// A non-empty list of text; its length.
fn strings(value: &Value) -> Result<usize, &'static str> {
    let list = value
        .as_array()
        .filter(|l| !l.is_empty() && l.iter().all(Value::is_string))
        .ok_or("is not a non-empty list of text")?;
    Ok(list.len())
}

/// A non-empty list of `{const, title}` choices.
fn titled(value: &Value) -> Result<(), &'static str> {
    let fine = value.as_array().is_some_and(|list| {
        !list.is_empty()
            && list.iter().all(|choice| {
                choice.as_object().is_some_and(|c| {
                    c.get("const").is_some_and(Value::is_string)
                        && c.get("title").is_none_or(Value::is_string)
                        && c.keys().all(|k| k == "const" || k == "title")
                })
            })
    });
    if fine {
        Ok(())
    } else {
        Err("is not a non-empty list of `{const, title}` choices")
    }
}
