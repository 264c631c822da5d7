//! The enforced subset of JSON Schema: the keywords the validator
//! enforces, the annotations it accepts and ignores, and the formats the
//! host checks itself. Everything else is refused when a plugin loads.

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

/// Nesting depth of a schema document.
pub(super) const MAX_SCHEMA_DEPTH: usize = 64;
