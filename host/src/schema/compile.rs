//! Turns a JSON Schema document into a [`Schema`] tree, refusing every keyword
//! outside the enforced subset. The subset is listed in [`VALIDATION_KEYWORDS`]
//! and [`ANNOTATION_KEYWORDS`]; a schema that uses anything else is rejected
//! with the keyword and its JSON pointer, so what a tool declares is exactly
//! what the host enforces.

use super::refs::check_ref_chains;
use super::{Format, Schema, SchemaError};
use regex::{Regex, RegexBuilder};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashMap};

/// Keywords the validator enforces.
pub const VALIDATION_KEYWORDS: &[&str] = &[
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "enum",
    "const",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "pattern",
    "minItems",
    "maxItems",
    "uniqueItems",
    "oneOf",
    "anyOf",
    "$ref",
    "$defs",
    "format",
];

/// Keywords that only describe and never constrain.
pub const ANNOTATION_KEYWORDS: &[&str] = &[
    "title",
    "description",
    "default",
    "examples",
    "$schema",
    "$comment",
    "deprecated",
];

/// `format` values the host understands. `path` marks a workspace-relative
/// path (the path guard checks it), `uri` an absolute URL (validated, and
/// checked against the call's network grant); any other format would be a
/// constraint the host does not enforce, so it is refused.
pub const FORMATS: &[&str] = &["path", "uri"];

/// A compiled regex may not exceed this, so a plugin cannot make the host
/// build a huge automaton at load time.
const MAX_REGEX_BYTES: usize = 1 << 20;
/// Nesting depth of a schema document.
const MAX_SCHEMA_DEPTH: usize = 64;

pub(super) const T_NULL: u8 = 1;
pub(super) const T_BOOLEAN: u8 = 2;
pub(super) const T_OBJECT: u8 = 4;
pub(super) const T_ARRAY: u8 = 8;
pub(super) const T_NUMBER: u8 = 16;
pub(super) const T_INTEGER: u8 = 32;
pub(super) const T_STRING: u8 = 64;

#[derive(Debug)]
pub(super) enum Additional {
    Allowed,
    Denied,
    Schema(Box<Node>),
}

#[derive(Debug)]
pub(super) struct Node {
    pub types: Option<u8>,
    pub enumeration: Option<Vec<Value>>,
    pub constant: Option<Value>,
    pub minimum: Option<f64>,
    pub maximum: Option<f64>,
    pub exclusive_minimum: Option<f64>,
    pub exclusive_maximum: Option<f64>,
    pub min_length: Option<u64>,
    pub max_length: Option<u64>,
    pub pattern: Option<Regex>,
    pub properties: BTreeMap<String, Node>,
    pub required: Vec<String>,
    pub additional: Additional,
    pub items: Option<Box<Node>>,
    pub min_items: Option<u64>,
    pub max_items: Option<u64>,
    pub unique_items: bool,
    pub one_of: Vec<Node>,
    pub any_of: Vec<Node>,
    pub reference: Option<usize>,
    pub format: Option<Format>,
}

struct Compiler {
    def_index: HashMap<String, usize>,
}

pub(super) fn pointer_push(ptr: &str, token: &str) -> String {
    format!("{ptr}/{}", token.replace('~', "~0").replace('/', "~1"))
}

pub(super) fn err(pointer: &str, keyword: &str, message: impl Into<String>) -> SchemaError {
    SchemaError {
        pointer: pointer.to_owned(),
        keyword: keyword.to_owned(),
        message: message.into(),
    }
}

pub(super) fn compile(doc: &Value) -> Result<Schema, SchemaError> {
    let root = doc
        .as_object()
        .ok_or_else(|| err("", "", "a schema must be a JSON object"))?;
    let mut compiler = Compiler {
        def_index: HashMap::new(),
    };
    let defs = match root.get("$defs") {
        None => Map::new(),
        Some(Value::Object(defs)) => defs.clone(),
        Some(_) => return Err(err("/$defs", "$defs", "must be an object of schemas")),
    };
    for (i, name) in defs.keys().enumerate() {
        compiler.def_index.insert(name.clone(), i);
    }
    let mut compiled_defs = Vec::with_capacity(defs.len());
    for (name, def) in &defs {
        let ptr = pointer_push("/$defs", name);
        compiled_defs.push(compiler.node(def, &ptr, 1)?);
    }
    let root_node = compiler.node(doc, "", 0)?;
    check_ref_chains(&root_node, &compiled_defs, &defs)?;
    let marked = |format| {
        std::iter::once(&root_node)
            .chain(&compiled_defs)
            .any(|node| node.marks(format))
    };
    let has_paths = marked(Format::Path);
    let has_uris = marked(Format::Uri);
    Ok(Schema {
        root: root_node,
        defs: compiled_defs,
        has_paths,
        has_uris,
    })
}

impl Node {
    /// Whether this node or one below it carries `format`.
    fn marks(&self, format: Format) -> bool {
        self.format == Some(format)
            || self.properties.values().any(|sub| sub.marks(format))
            || matches!(&self.additional, Additional::Schema(sub) if sub.marks(format))
            || self.items.as_deref().is_some_and(|sub| sub.marks(format))
            || self
                .one_of
                .iter()
                .chain(&self.any_of)
                .any(|sub| sub.marks(format))
    }
}

fn number(v: &Value, ptr: &str, kw: &str) -> Result<f64, SchemaError> {
    v.as_f64()
        .ok_or_else(|| err(ptr, kw, format!("`{kw}` must be a number")))
}

fn count(v: &Value, ptr: &str, kw: &str) -> Result<u64, SchemaError> {
    v.as_u64()
        .ok_or_else(|| err(ptr, kw, format!("`{kw}` must be a non-negative integer")))
}

fn type_bit(name: &str) -> Option<u8> {
    Some(match name {
        "null" => T_NULL,
        "boolean" => T_BOOLEAN,
        "object" => T_OBJECT,
        "array" => T_ARRAY,
        "number" => T_NUMBER,
        "integer" => T_INTEGER,
        "string" => T_STRING,
        _ => return None,
    })
}

impl Compiler {
    fn node(&mut self, v: &Value, ptr: &str, depth: usize) -> Result<Node, SchemaError> {
        if depth > MAX_SCHEMA_DEPTH {
            return Err(err(
                ptr,
                "",
                format!("the schema nests deeper than {MAX_SCHEMA_DEPTH} levels"),
            ));
        }
        let obj = match v {
            Value::Object(o) => o,
            Value::Bool(true) => &Map::new(),
            Value::Bool(false) => {
                return Err(err(
                    ptr,
                    "",
                    "the schema `false` is not supported; omit the property",
                ));
            }
            _ => return Err(err(ptr, "", "a schema must be a JSON object")),
        };
        let mut node = Node {
            types: None,
            enumeration: None,
            constant: None,
            minimum: None,
            maximum: None,
            exclusive_minimum: None,
            exclusive_maximum: None,
            min_length: None,
            max_length: None,
            pattern: None,
            properties: BTreeMap::new(),
            required: Vec::new(),
            additional: Additional::Allowed,
            items: None,
            min_items: None,
            max_items: None,
            unique_items: false,
            one_of: Vec::new(),
            any_of: Vec::new(),
            reference: None,
            format: None,
        };
        for (kw, val) in obj {
            let here = pointer_push(ptr, kw);
            match kw.as_str() {
                "type" => {
                    let names: Vec<&Value> = match val {
                        Value::Array(a) => a.iter().collect(),
                        one => vec![one],
                    };
                    let mut bits = 0;
                    for name in names {
                        let bit = name.as_str().and_then(type_bit).ok_or_else(|| {
                            err(&here, kw, format!("unknown type {name}; use null, boolean, object, array, number, integer or string"))
                        })?;
                        bits |= bit;
                    }
                    node.types = Some(bits);
                }
                "properties" => {
                    let props = val
                        .as_object()
                        .ok_or_else(|| err(&here, kw, "must be an object"))?;
                    for (name, sub) in props {
                        let sub = self.node(sub, &pointer_push(&here, name), depth + 1)?;
                        node.properties.insert(name.clone(), sub);
                    }
                }
                "required" => {
                    let list = val
                        .as_array()
                        .ok_or_else(|| err(&here, kw, "must be an array of names"))?;
                    for name in list {
                        let name = name
                            .as_str()
                            .ok_or_else(|| err(&here, kw, "must be an array of names"))?;
                        node.required.push(name.to_owned());
                    }
                }
                "additionalProperties" => {
                    node.additional = match val {
                        Value::Bool(true) => Additional::Allowed,
                        Value::Bool(false) => Additional::Denied,
                        sub => Additional::Schema(Box::new(self.node(sub, &here, depth + 1)?)),
                    }
                }
                "items" => node.items = Some(Box::new(self.node(val, &here, depth + 1)?)),
                "enum" => {
                    let list = val
                        .as_array()
                        .filter(|a| !a.is_empty())
                        .ok_or_else(|| err(&here, kw, "must be a non-empty array of values"))?;
                    node.enumeration = Some(list.clone());
                }
                "const" => node.constant = Some(val.clone()),
                "minimum" => node.minimum = Some(number(val, &here, kw)?),
                "maximum" => node.maximum = Some(number(val, &here, kw)?),
                "exclusiveMinimum" => node.exclusive_minimum = Some(number(val, &here, kw)?),
                "exclusiveMaximum" => node.exclusive_maximum = Some(number(val, &here, kw)?),
                "minLength" => node.min_length = Some(count(val, &here, kw)?),
                "maxLength" => node.max_length = Some(count(val, &here, kw)?),
                "minItems" => node.min_items = Some(count(val, &here, kw)?),
                "maxItems" => node.max_items = Some(count(val, &here, kw)?),
                "uniqueItems" => {
                    node.unique_items = val
                        .as_bool()
                        .ok_or_else(|| err(&here, kw, "must be true or false"))?
                }
                "pattern" => {
                    let text = val
                        .as_str()
                        .ok_or_else(|| err(&here, kw, "must be a string"))?;
                    let regex = RegexBuilder::new(text)
                        .size_limit(MAX_REGEX_BYTES)
                        .build()
                        .map_err(|e| {
                            err(&here, kw, format!("not a usable regular expression: {e}"))
                        })?;
                    node.pattern = Some(regex);
                }
                "oneOf" | "anyOf" => {
                    let list = val
                        .as_array()
                        .filter(|a| !a.is_empty())
                        .ok_or_else(|| err(&here, kw, "must be a non-empty array of schemas"))?;
                    let mut subs = Vec::with_capacity(list.len());
                    for (i, sub) in list.iter().enumerate() {
                        subs.push(self.node(
                            sub,
                            &pointer_push(&here, &i.to_string()),
                            depth + 1,
                        )?);
                    }
                    if kw == "oneOf" {
                        node.one_of = subs;
                    } else {
                        node.any_of = subs;
                    }
                }
                "$ref" => {
                    let target = val
                        .as_str()
                        .ok_or_else(|| err(&here, kw, "must be a string"))?;
                    let name = target.strip_prefix("#/$defs/").ok_or_else(|| {
                        err(&here, kw, format!("`{target}`: only references of the form `#/$defs/NAME` within the same schema are supported"))
                    })?;
                    let index = self.def_index.get(name).ok_or_else(|| {
                        err(&here, kw, format!("`{target}` names no entry of `$defs`"))
                    })?;
                    node.reference = Some(*index);
                }
                "$defs" if ptr.is_empty() => {}
                "$defs" => {
                    return Err(err(
                        &here,
                        kw,
                        "`$defs` is only supported at the root of the schema",
                    ));
                }
                "format" => match val.as_str() {
                    Some("path") => node.format = Some(Format::Path),
                    Some("uri") => node.format = Some(Format::Uri),
                    _ => {
                        return Err(err(
                            &here,
                            kw,
                            format!(
                                "format {val} is not enforced by the host; supported formats: {}",
                                FORMATS.join(", ")
                            ),
                        ));
                    }
                },
                other if ANNOTATION_KEYWORDS.contains(&other) => {}
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
        Ok(node)
    }
}
