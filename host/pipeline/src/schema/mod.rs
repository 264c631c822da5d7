//! JSON Schemas as toolwarden enforces them: the subset it accepts and how
//! a value is checked against one.
//!
//! Owns the enforced JSON Schema subset: [`Schema::compile`] runs once per
//! tool when its plugin loads and refuses any keyword it would not enforce;
//! [`Schema::violations`] checks a value. A plain library below the steps:
//! it knows nothing of calls or tools (the validation step applies a
//! tool's schema to a call), and never decides whether a call is allowed.

mod compile;
mod node;
mod refs;
mod scan;
mod subset;
mod validate;

use serde_json::Value;
use std::fmt;

/// At most this many violations are reported for one value; the rest are
/// counted. Keeps an error message readable and bounded.
pub const MAX_VIOLATIONS: usize = 20;

/// A compiled schema of the enforced subset: the validator (the
/// `jsonschema` crate, draft 2020-12) and the applicator tree that finds
/// `format`-marked strings.
#[derive(Debug)]
pub struct Schema {
    validator: jsonschema::Validator,
    /// The document as the validator has it, for wording violations (which
    /// properties a refused name could have been, how many alternatives).
    doc: Value,
    root: node::Node,
    /// The schemas `$ref`s name, by [`node::Node::reference`].
    targets: Vec<node::Node>,
    /// Some node is `"format": "path"` (`"uri"`): most schemas have none,
    /// and then the path (URL) step has nothing to walk.
    has_paths: bool,
    has_uris: bool,
    /// Some `$ref` may lead back into the schema, so how deep validation
    /// goes depends on the value, not only on the schema.
    recursive: bool,
    is_object: bool,
}

/// The violations of one value: the first [`MAX_VIOLATIONS`] with their
/// messages, and how many there were in all.
#[derive(Debug, Default)]
pub struct Violations {
    listed: Vec<Violation>,
    total: usize,
}

impl Violations {
    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    /// How many violations the value has, listed or not.
    pub fn total(&self) -> usize {
        self.total
    }

    pub fn iter(&self) -> std::slice::Iter<'_, Violation> {
        self.listed.iter()
    }
}

/// The `format`s the host gives meaning to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// A workspace-relative path.
    Path,
    /// An absolute URL.
    Uri,
}

/// Why a schema was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchemaError {
    /// JSON pointer into the schema document.
    pub pointer: String,
    pub keyword: String,
    pub message: String,
}

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = if self.pointer.is_empty() {
            "/"
        } else {
            &self.pointer
        };
        write!(f, "schema at `{at}`: {}", self.message)
    }
}

/// One way a value breaks a schema.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// JSON pointer into the value (`""` is the whole value).
    pub pointer: String,
    pub message: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = if self.pointer.is_empty() {
            "/"
        } else {
            &self.pointer
        };
        write!(f, "`{at}` {}", self.message)
    }
}

impl Schema {
    pub fn compile(doc: &Value) -> Result<Schema, SchemaError> {
        compile::compile(doc)
    }

    /// Whether the root declares `"type": "object"` (required of input schemas).
    pub fn is_object_schema(&self) -> bool {
        self.is_object
    }

    /// The value's violations, or none.
    pub fn violations(&self, value: &Value) -> Violations {
        validate::check(self, value)
    }
}

impl Schema {
    /// JSON pointers of the strings in `value` that the schema marks with
    /// `"format": "path"` (workspace paths, checked by the path guard).
    pub fn path_pointers(&self, value: &Value) -> Vec<String> {
        self.pointers(Format::Path, self.has_paths, value)
    }

    /// JSON pointers of the strings in `value` that the schema marks with
    /// `"format": "uri"` (URLs, checked against the call's network grant).
    pub fn uri_pointers(&self, value: &Value) -> Vec<String> {
        self.pointers(Format::Uri, self.has_uris, value)
    }

    fn pointers(&self, format: Format, any: bool, value: &Value) -> Vec<String> {
        let mut out = Vec::new();
        if any {
            validate::marked(
                format,
                &self.targets,
                &self.root,
                value,
                &mut String::new(),
                &mut out,
                0,
            );
        }
        out
    }
}

/// Joins violations of `what` (e.g. "the arguments") into one message a
/// model can act on.
pub fn describe(what: &str, violations: &Violations) -> String {
    let shown: Vec<String> = violations.iter().map(|v| v.to_string()).collect();
    let more = violations.total.saturating_sub(shown.len());
    let mut text = format!(
        "{} problem{} with {what}: {}",
        violations.total,
        if violations.total == 1 { "" } else { "s" },
        shown.join("; ")
    );
    if more > 0 {
        text.push_str(&format!("; and {more} more"));
    }
    text
}

#[cfg(test)]
mod tests;
