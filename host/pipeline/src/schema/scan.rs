//! The first pass over a schema document: the allow-list of keywords,
//! the `$anchor`s, the `$ref`s and the `x-mcp-header` annotations, before
//! anything is built.

use super::SchemaError;
use super::node::{Options, Pattern};
use super::node::{err, pointer_push};
use super::subset::{
    ANNOTATION_KEYWORDS, FORMATS, HEADER_ANNOTATION, MAX_SCHEMA_DEPTH, VALIDATION_KEYWORDS,
};
use serde_json::Value;
use std::collections::{HashMap, HashSet};

/// First pass over the whole document: the allow-list, the `$anchor`s and
/// the `$ref`s, before anything is built.
#[derive(Default)]
pub(super) struct Scan {
    pub(super) anchors: HashMap<String, String>,
    /// `(pointer of the $ref keyword, its text)`.
    pub(super) refs: Vec<(String, String)>,
    /// `x-mcp-header` names seen so far, lower-cased (they are HTTP header
    /// names, so `Region` and `region` collide).
    pub(super) headers: HashSet<String>,
}

pub(super) fn type_name_known(name: &Value) -> bool {
    matches!(
        name.as_str(),
        Some("null" | "boolean" | "object" | "array" | "number" | "integer" | "string")
    )
}

impl Scan {
    pub(super) fn walk(
        &mut self,
        v: &Value,
        ptr: &str,
        depth: usize,
        options: &Options,
    ) -> Result<(), SchemaError> {
        if depth > MAX_SCHEMA_DEPTH {
            return Err(err(
                ptr,
                "",
                format!("the schema nests deeper than {MAX_SCHEMA_DEPTH} levels"),
            ));
        }
        let obj = match v {
            Value::Object(o) => o,
            Value::Bool(_) => return Ok(()),
            _ => return Err(err(ptr, "", "a schema must be a JSON object or a boolean")),
        };
        for (kw, val) in obj {
            let here = pointer_push(ptr, kw);
            match kw.as_str() {
                "type" => {
                    let names: Vec<&Value> = match val {
                        Value::Array(a) => a.iter().collect(),
                        one => vec![one],
                    };
                    if let Some(name) = names.into_iter().find(|n| !type_name_known(n)) {
                        return Err(err(
                            &here,
                            kw,
                            format!(
                                "unknown type {name}; use null, boolean, object, array, number, \
                                 integer or string"
                            ),
                        ));
                    }
                }
                "properties" | "patternProperties" | "dependentSchemas" | "$defs" => {
                    let subs = val
                        .as_object()
                        .ok_or_else(|| err(&here, kw, "must be an object of schemas"))?;
                    for (name, sub) in subs {
                        self.walk(sub, &pointer_push(&here, name), depth + 1, options)?;
                    }
                }
                "propertyNames" => {
                    self.walk(val, &here, depth + 1, options)?;
                    if let Some(at) = first_format(val, &here) {
                        return Err(err(
                            &at,
                            "format",
                            "`format` inside `propertyNames` would mark a property name, which \
                             no guard can check; mark the property's value instead",
                        ));
                    }
                }
                "additionalProperties" | "items" | "contains" | "not" | "if" | "then" | "else" => {
                    self.walk(val, &here, depth + 1, options)?
                }
                "prefixItems" | "allOf" | "anyOf" | "oneOf" => {
                    let list = val
                        .as_array()
                        .filter(|a| !a.is_empty())
                        .ok_or_else(|| err(&here, kw, "must be a non-empty array of schemas"))?;
                    for (i, sub) in list.iter().enumerate() {
                        self.walk(
                            sub,
                            &pointer_push(&here, &i.to_string()),
                            depth + 1,
                            options,
                        )?;
                    }
                }
                "pattern" => {
                    let text = val
                        .as_str()
                        .ok_or_else(|| err(&here, kw, "must be a string"))?;
                    Pattern::compile(text, &here, options)?;
                }
                "format" => {
                    if !val.as_str().is_some_and(|f| FORMATS.contains(&f)) {
                        return Err(err(
                            &here,
                            kw,
                            format!(
                                "format {val} is not enforced by the host; supported formats: {}",
                                FORMATS.join(", ")
                            ),
                        ));
                    }
                }
                "$ref" => {
                    let target = val
                        .as_str()
                        .ok_or_else(|| err(&here, kw, "must be a string"))?;
                    self.refs.push((here, target.to_owned()));
                }
                "$anchor" => {
                    let name = val.as_str().filter(|n| is_anchor_name(n)).ok_or_else(|| {
                        err(
                            &here,
                            kw,
                            "must be a name of letters, digits, `-`, `_` and `.` starting with a \
                             letter or `_`",
                        )
                    })?;
                    if self
                        .anchors
                        .insert(name.to_owned(), ptr.to_owned())
                        .is_some()
                    {
                        return Err(err(
                            &here,
                            kw,
                            format!("the anchor `{name}` is declared twice"),
                        ));
                    }
                }
                HEADER_ANNOTATION => self.header_annotation(obj, val, ptr, &here)?,
                "$schema" if !ptr.is_empty() => {
                    return Err(err(
                        &here,
                        kw,
                        "`$schema` is only read at the root of the schema",
                    ));
                }
                other
                    if VALIDATION_KEYWORDS.contains(&other)
                        || ANNOTATION_KEYWORDS.contains(&other) => {}
                other => {
                    return Err(err(
                        &here,
                        other,
                        format!(
                            "keyword `{other}` is not in the enforced subset; use only: {}",
                            VALIDATION_KEYWORDS.join(", ")
                        ),
                    ));
                }
            }
        }
        Ok(())
    }
}

impl Scan {
    /// SEP-2243's rules for `x-mcp-header`, checked at load like every other
    /// keyword: a client drops a tool whose annotation breaks them, and the
    /// HTTP transport compares each named header with its argument, so a
    /// malformed one would make the tool uncallable or the check vacuous.
    pub(super) fn header_annotation(
        &mut self,
        schema: &serde_json::Map<String, Value>,
        header: &Value,
        ptr: &str,
        here: &str,
    ) -> Result<(), SchemaError> {
        if !is_property_chain(ptr) {
            return Err(err(
                here,
                HEADER_ANNOTATION,
                "may only annotate a property reached from the root through `properties` alone",
            ));
        }
        let name = header
            .as_str()
            .filter(|h| !h.is_empty() && h.chars().all(is_token_char))
            .ok_or_else(|| {
                err(
                    here,
                    HEADER_ANNOTATION,
                    "must be a non-empty HTTP header name token (letters, digits and                      !#$%&'*+-.^_`|~; no spaces, colons or non-ASCII)",
                )
            })?;
        if !matches!(
            schema.get("type").and_then(Value::as_str),
            Some("string" | "integer" | "boolean")
        ) {
            return Err(err(
                here,
                HEADER_ANNOTATION,
                "may only annotate a property of type string, integer or boolean",
            ));
        }
        if !self.headers.insert(name.to_ascii_lowercase()) {
            return Err(err(
                here,
                HEADER_ANNOTATION,
                format!("the header `{name}` is named twice (header names ignore case)"),
            ));
        }
        Ok(())
    }
}

/// Whether the schema at `ptr` is a property of the root, or of a property
/// of it, and so on: `/properties/a/properties/b`.
pub(super) fn is_property_chain(ptr: &str) -> bool {
    let segments: Vec<&str> = ptr.split('/').skip(1).collect();
    !segments.is_empty()
        && segments.len().is_multiple_of(2)
        && segments.iter().step_by(2).all(|s| *s == "properties")
}

/// RFC 9110 `tchar`.
pub(super) fn is_token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)
}

pub(super) fn is_anchor_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// The pointer of the first `format` at or below `v`, if any.
pub(super) fn first_format(v: &Value, ptr: &str) -> Option<String> {
    let obj = v.as_object()?;
    if obj.contains_key("format") {
        return Some(pointer_push(ptr, "format"));
    }
    obj.iter().find_map(|(kw, val)| {
        let here = pointer_push(ptr, kw);
        match val {
            Value::Object(_) => first_format(val, &here),
            Value::Array(list) => list
                .iter()
                .enumerate()
                .find_map(|(i, sub)| first_format(sub, &pointer_push(&here, &i.to_string()))),
            _ => None,
        }
    })
}
