//! JSON Schemas as toolwarden enforces them: the subset it accepts and how
//! a value is checked against one.
//!
//! Owns the enforced JSON Schema subset: [`Schema::compile`] runs once per
//! tool when its plugin loads and refuses any keyword it would not enforce;
//! [`Schema::violations`] checks a value. A plain library below the steps:
//! it knows nothing of calls or tools (the validation step applies a
//! tool's schema to a call), and never decides whether a call is allowed.

mod compile;
mod refs;
mod validate;

use serde_json::Value;
use std::fmt;

/// At most this many violations are reported for one value; the rest are
/// counted. Keeps an error message readable and bounded.
pub const MAX_VIOLATIONS: usize = 20;

/// A compiled schema of the enforced subset.
#[derive(Debug)]
pub struct Schema {
    root: compile::Node,
    defs: Vec<compile::Node>,
    /// Some node is `"format": "path"` (`"uri"`): most schemas have none,
    /// and then the path (URL) step has nothing to walk.
    has_paths: bool,
    has_uris: bool,
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
        self.root.types == Some(compile::T_OBJECT)
    }

    /// Every violation (up to [`MAX_VIOLATIONS`]), or none.
    pub fn violations(&self, value: &Value) -> Vec<Violation> {
        let mut out = Vec::new();
        let mut ptr = String::new();
        validate::check(self, &self.root, value, &mut ptr, &mut out, 0);
        out
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
                self,
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
pub fn describe(what: &str, violations: &[Violation]) -> String {
    let shown: Vec<String> = violations
        .iter()
        .take(MAX_VIOLATIONS)
        .map(|v| v.to_string())
        .collect();
    let more = violations.len().saturating_sub(MAX_VIOLATIONS);
    let mut text = format!(
        "{} problem{} with {what}: {}",
        violations.len(),
        if violations.len() == 1 { "" } else { "s" },
        shown.join("; ")
    );
    if more > 0 {
        text.push_str(&format!("; and {more} more"));
    }
    text
}

#[cfg(test)]
mod tests;
