//! Loads a JSON Schema document: refuses every keyword outside the enforced
//! subset ([`super::subset`]) with the keyword
//! and its JSON pointer, so what a tool declares is exactly what the host
//! enforces; then builds the validator (the `jsonschema` crate, draft
//! 2020-12) and the tree of applicators that finds `format`-marked strings.
//!
//! The tree keeps only what leads from a value to a subschema (properties,
//! items, combinators, `$ref`), never a constraint: validation is the
//! crate's, and finding paths must not become a second validator that could
//! disagree with it.

use super::node::{Node, Options, Pattern, err, pointer_push};
use super::refs::check_ref_chains;
use super::scan::Scan;
use super::{Format, Schema, SchemaError};
use serde_json::Value;
use std::collections::HashMap;

/// A compiled regex may not exceed this, so a plugin cannot make the host
/// build a huge automaton at load time.
const MAX_REGEX_BYTES: usize = 1 << 20;
/// Backtracking steps one `pattern` match may take (patterns with
/// look-around or back-references backtrack). A match that needs more is a
/// violation, so a hostile pattern cannot stall a call.
const MAX_BACKTRACK: usize = 100_000;

fn options() -> Options {
    jsonschema::draft202012::options()
        .should_validate_formats(true)
        .should_ignore_unknown_formats(false)
        .with_format("path", |_: &str| true)
        .with_format("uri", |s: &str| url::Url::parse(s).is_ok())
        .with_pattern_options(
            jsonschema::PatternOptions::fancy_regex()
                .size_limit(MAX_REGEX_BYTES)
                .backtrack_limit(MAX_BACKTRACK),
        )
        .offline()
}

pub(super) fn compile(doc: &Value) -> Result<Schema, SchemaError> {
    let root = doc
        .as_object()
        .ok_or_else(|| err("", "", "a schema must be a JSON object"))?;
    let options = options();
    let mut scan = Scan::default();
    scan.walk(doc, "", 0, &options)?;
    let mut targets = Targets::resolve(doc, &scan, &options)?;
    let root_node = targets.node(doc, "")?;
    // Every `$ref` is built and its chain checked, reached from the root or
    // not, so a schema the host accepts has no cycle anywhere.
    for (_, text) in &scan.refs {
        targets.target(text);
    }
    let mut built = Vec::new();
    while let Some((pointer, index)) = targets.pending.pop() {
        let value = doc.pointer(&pointer).unwrap_or(&Value::Bool(true));
        let node = targets.node(value, &pointer)?;
        if built.len() <= index {
            built.resize_with(index + 1, || None);
        }
        built[index] = Some(node);
    }
    let targets_built: Vec<Node> = built.into_iter().map(Option::unwrap_or_default).collect();
    check_ref_chains(&root_node, &targets_built, &targets.pointers())?;

    // The root `$schema` is an annotation here: the draft is always 2020-12.
    let mut for_crate = root.clone();
    for_crate.remove("$schema");
    let for_crate = Value::Object(for_crate);
    let validator = options.build(&for_crate).map_err(|e| {
        let at = e.instance_path().as_str();
        let keyword = at.rsplit('/').next().unwrap_or_default();
        err(
            at,
            keyword,
            format!("not a valid draft 2020-12 schema: {e}"),
        )
    })?;
    let marked = |format| {
        std::iter::once(&root_node)
            .chain(&targets_built)
            .any(|node| node.marks(format))
    };
    let has_paths = marked(Format::Path);
    let has_uris = marked(Format::Uri);
    let is_object = match root.get("type") {
        Some(Value::String(t)) => t == "object",
        Some(Value::Array(ts)) => ts.len() == 1 && ts[0] == "object",
        _ => false,
    };
    Ok(Schema {
        validator,
        doc: for_crate,
        root: root_node,
        targets: targets_built,
        has_paths,
        has_uris,
        recursive: !targets.index.is_empty(),
        is_object,
    })
}

/// The schemas `$ref`s name, each built once (by its JSON pointer) however
/// often it is named, without recursion: a chain of references of any
/// length costs heap, never the thread's stack.
struct Targets<'o> {
    options: &'o Options,
    /// `$ref` text -> JSON pointer of the schema it names.
    resolved: HashMap<String, String>,
    /// JSON pointer -> index in the built targets.
    index: HashMap<String, usize>,
    pending: Vec<(String, usize)>,
}

impl<'o> Targets<'o> {
    fn resolve(doc: &Value, scan: &Scan, options: &'o Options) -> Result<Targets<'o>, SchemaError> {
        let mut resolved = HashMap::new();
        for (at, text) in &scan.refs {
            let fragment = text.strip_prefix('#').ok_or_else(|| {
                err(
                    at,
                    "$ref",
                    format!(
                        "`{text}`: only references within the same schema are supported \
                         (`#`, `#/$defs/NAME`, `#ANCHOR`)"
                    ),
                )
            })?;
            let pointer = if fragment.is_empty() || fragment.starts_with('/') {
                let decoded = percent_encoding::percent_decode_str(fragment)
                    .decode_utf8()
                    .map_err(|_| err(at, "$ref", format!("`{text}` is not valid UTF-8")))?
                    .into_owned();
                if doc.pointer(&decoded).is_none() {
                    return Err(err(
                        at,
                        "$ref",
                        format!("`{text}` names nothing in this schema"),
                    ));
                }
                decoded
            } else {
                scan.anchors.get(fragment).cloned().ok_or_else(|| {
                    err(
                        at,
                        "$ref",
                        format!("`{text}` names no `$anchor` of this schema"),
                    )
                })?
            };
            resolved.insert(text.clone(), pointer);
        }
        Ok(Targets {
            options,
            resolved,
            index: HashMap::new(),
            pending: Vec::new(),
        })
    }

    /// JSON pointers of the built targets, by index.
    fn pointers(&self) -> Vec<String> {
        let mut out = vec![String::new(); self.index.len()];
        for (pointer, &i) in &self.index {
            out[i].clone_from(pointer);
        }
        out
    }

    fn target(&mut self, text: &str) -> usize {
        let pointer = self.resolved.get(text).cloned().unwrap_or_default();
        let next = self.index.len();
        *self.index.entry(pointer.clone()).or_insert_with(|| {
            self.pending.push((pointer, next));
            next
        })
    }

    fn node<'v>(&mut self, v: &'v Value, ptr: &str) -> Result<Node, SchemaError> {
        let mut node = Node::default();
        let Value::Object(obj) = v else {
            return Ok(node);
        };
        let sub =
            |this: &mut Targets<'o>, val: &Value, kw: &str| this.node(val, &pointer_push(ptr, kw));
        let list =
            |this: &mut Targets<'o>, val: &Value, kw: &str| -> Result<Vec<Node>, SchemaError> {
                let here = pointer_push(ptr, kw);
                let items = val.as_array().map(Vec::as_slice).unwrap_or_default();
                items
                    .iter()
                    .enumerate()
                    .map(|(i, s)| this.node(s, &pointer_push(&here, &i.to_string())))
                    .collect()
            };
        let map = |val: &'v Value| val.as_object().into_iter().flatten();
        for (kw, val) in obj {
            match kw.as_str() {
                "format" => {
                    node.format = match val.as_str() {
                        Some("path") => Some(Format::Path),
                        Some("uri") => Some(Format::Uri),
                        _ => None,
                    }
                }
                "properties" => {
                    let here = pointer_push(ptr, kw);
                    for (name, s) in map(val) {
                        let built = self.node(s, &pointer_push(&here, name))?;
                        node.properties.insert(name.clone(), built);
                    }
                }
                "patternProperties" => {
                    let here = pointer_push(ptr, kw);
                    for (pattern, s) in map(val) {
                        let built = self.node(s, &pointer_push(&here, pattern))?;
                        node.pattern_properties
                            .push((Pattern::compile(pattern, &here, self.options)?, built));
                    }
                }
                "dependentSchemas" => {
                    let here = pointer_push(ptr, kw);
                    for (name, s) in map(val) {
                        node.in_place
                            .push(self.node(s, &pointer_push(&here, name))?);
                    }
                }
                "additionalProperties" => node.additional = Some(Box::new(sub(self, val, kw)?)),
                "items" => node.items = Some(Box::new(sub(self, val, kw)?)),
                "contains" => node.contains = Some(Box::new(sub(self, val, kw)?)),
                "not" | "if" | "then" | "else" => node.in_place.push(sub(self, val, kw)?),
                "prefixItems" => node.prefix_items = list(self, val, kw)?,
                "allOf" | "anyOf" | "oneOf" => node.in_place.extend(list(self, val, kw)?),
                "$ref" => node.reference = val.as_str().map(|text| self.target(text)),
                _ => {}
            }
        }
        Ok(node)
    }
}
