//! The tree of applicators a compiled schema keeps to find the strings
//! marked with a `format`: only what leads from a value to a subschema,
//! never a constraint (validation is the `jsonschema` crate's).

use super::{Format, SchemaError};
use serde_json::Value;
use std::collections::BTreeMap;

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
pub(super) struct Pattern(pub(super) jsonschema::Validator);

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

impl Node {
    /// Whether this node or one below it carries `format`.
    pub(super) fn marks(&self, format: Format) -> bool {
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

/// How every regex and validator of a schema is built.
pub(super) type Options = jsonschema::ValidationOptions<'static>;

impl Pattern {
    pub(super) fn compile(text: &str, at: &str, options: &Options) -> Result<Pattern, SchemaError> {
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
