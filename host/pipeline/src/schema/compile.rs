//! Loads a JSON Schema document: refuses every keyword outside the enforced
//! subset ([`VALIDATION_KEYWORDS`], [`ANNOTATION_KEYWORDS`]) with the keyword
//! and its JSON pointer, so what a tool declares is exactly what the host
//! enforces; then builds the validator (the `jsonschema` crate, draft
//! 2020-12) and the tree of applicators that finds `format`-marked strings.
//!
//! The tree keeps only what leads from a value to a subschema (properties,
//! items, combinators, `$ref`), never a constraint: validation is the
//! crate's, and finding paths must not become a second validator that could
//! disagree with it.

use super::refs::check_ref_chains;
use super::{Format, Schema, SchemaError};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap, HashSet};

/// Keywords the validator enforces.
pub const VALIDATION_KEYWORDS: &[&str] = &[
    "type",
    "enum",
    "const",
    "multipleOf",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "pattern",
    "format",
    "properties",
    "patternProperties",
    "additionalProperties",
    "propertyNames",
    "required",
    "dependentRequired",
    "dependentSchemas",
    "minProperties",
    "maxProperties",
    "items",
    "prefixItems",
    "contains",
    "minContains",
    "maxContains",
    "minItems",
    "maxItems",
    "uniqueItems",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "if",
    "then",
    "else",
    "$ref",
    "$defs",
    "$anchor",
];

/// Keywords that only describe and never constrain. `$schema` is read only
/// at the root and never changes the draft: every schema is validated as
/// 2020-12.
pub const ANNOTATION_KEYWORDS: &[&str] = &[
    "title",
    "description",
    "default",
    "examples",
    "$schema",
    "$comment",
    "deprecated",
    "readOnly",
    "writeOnly",
];

/// SEP-2243: mirrors a property's value into an `Mcp-Param-{name}` HTTP
/// header, which the HTTP transport checks against the argument. An
/// annotation to validation, with rules of its own (see
/// `Scan::header_annotation`).
pub const HEADER_ANNOTATION: &str = "x-mcp-header";

/// `format` values the host understands. `path` marks a workspace-relative
/// path (the path guard checks it), `uri` an absolute URL (validated, and
/// checked against the call's network grant); any other format would be a
/// constraint the host does not enforce, so it is refused.
pub const FORMATS: &[&str] = &["path", "uri"];

/// A compiled regex may not exceed this, so a plugin cannot make the host
/// build a huge automaton at load time.
const MAX_REGEX_BYTES: usize = 1 << 20;
/// Backtracking steps one `pattern` match may take (patterns with
/// look-around or back-references backtrack). A match that needs more is a
/// violation, so a hostile pattern cannot stall a call.
const MAX_BACKTRACK: usize = 100_000;
/// Nesting depth of a schema document.
const MAX_SCHEMA_DEPTH: usize = 64;

/// Where a subschema applies, relative to the value its parent applies to.
/// `in_place` holds every subschema that applies to the same value
/// (`allOf`, `anyOf`, `oneOf`, `not`, `if`/`then`/`else`,
/// `dependentSchemas`): finding marked strings follows all of them, whether
/// or not the branch matched, so a string some branch calls a path is
/// always checked as one.
#[derive(Debug, Default)]
pub(super) struct Node {
    pub format: Option<Format>,
    pub properties: BTreeMap<String, Node>,
    pub pattern_properties: Vec<(Pattern, Node)>,
    pub additional: Option<Box<Node>>,
    pub prefix_items: Vec<Node>,
    pub items: Option<Box<Node>>,
    pub contains: Option<Box<Node>>,
    pub in_place: Vec<Node>,
    /// Index into [`Schema::targets`] of the schema `$ref` names.
    pub reference: Option<usize>,
}

/// A `patternProperties` regex, matched by the crate that validates, so
/// the path walk and validation agree on which names it covers.
#[derive(Debug)]
pub(super) struct Pattern(jsonschema::Validator);

impl Pattern {
    pub fn matches(&self, name: &str) -> bool {
        self.0.is_valid(&Value::String(name.to_owned()))
    }
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

type Options = jsonschema::ValidationOptions<'static>;

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

impl Node {
    /// Whether this node or one below it carries `format`.
    fn marks(&self, format: Format) -> bool {
        self.format == Some(format)
            || self.properties.values().any(|sub| sub.marks(format))
            || self.pattern_properties.iter().any(|(_, s)| s.marks(format))
            || self
                .additional
                .iter()
                .chain(&self.items)
                .chain(&self.contains)
                .any(|sub| sub.marks(format))
            || self
                .prefix_items
                .iter()
                .chain(&self.in_place)
                .any(|sub| sub.marks(format))
    }
}

/// First pass over the whole document: the allow-list, the `$anchor`s and
/// the `$ref`s, before anything is built.
#[derive(Default)]
struct Scan {
    anchors: HashMap<String, String>,
    /// `(pointer of the $ref keyword, its text)`.
    refs: Vec<(String, String)>,
    /// `x-mcp-header` names seen so far, lower-cased (they are HTTP header
    /// names, so `Region` and `region` collide).
    headers: HashSet<String>,
}

fn type_name_known(name: &Value) -> bool {
    matches!(
        name.as_str(),
        Some("null" | "boolean" | "object" | "array" | "number" | "integer" | "string")
    )
}

impl Scan {
    fn walk(
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
    fn header_annotation(
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
fn is_property_chain(ptr: &str) -> bool {
    let segments: Vec<&str> = ptr.split('/').skip(1).collect();
    !segments.is_empty()
        && segments.len().is_multiple_of(2)
        && segments.iter().step_by(2).all(|s| *s == "properties")
}

/// RFC 9110 `tchar`.
fn is_token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)
}

fn is_anchor_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// The pointer of the first `format` at or below `v`, if any.
fn first_format(v: &Value, ptr: &str) -> Option<String> {
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

impl Pattern {
    fn compile(text: &str, at: &str, options: &Options) -> Result<Pattern, SchemaError> {
        options
            .build(&serde_json::json!({ "pattern": text }))
            .map(Pattern)
            .map_err(|e| {
                err(
                    at,
                    "pattern",
                    format!("`{text}` is not a usable regular expression: {e}"),
                )
            })
    }
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
