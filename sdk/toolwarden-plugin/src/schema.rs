//! Schemas derived with `schemars`, then fitted to the host's enforced subset.
//!
//! schemars describes Rust types faithfully, including facts the host does
//! not enforce (`format: int64`, `double`, ...). A schema keyword the host
//! does not enforce is a load error there, so this module rewrites such facts
//! into keywords it does (`minimum`/`maximum` for fixed-width integers) or
//! drops them (all but `path` and `uri`, which the host gives meaning to),
//! and closes every object with `additionalProperties: false`
//! so a model learns that unknown keys are refused.

use schemars::generate::{Contract, SchemaSettings};
use schemars::{JsonSchema, SchemaGenerator};
use serde_json::{Map, Value};

/// The schema of a tool's arguments: what deserializes into `A`.
pub fn input_schema<A: JsonSchema>() -> Value {
    derive::<A>(Contract::Deserialize)
}

/// The schema of a tool's result: what `R` serializes to.
pub fn output_schema<R: JsonSchema>() -> Value {
    derive::<R>(Contract::Serialize)
}

fn derive<T: JsonSchema>(contract: Contract) -> Value {
    let settings = SchemaSettings::draft2020_12().with(|s| {
        s.inline_subschemas = true;
        s.meta_schema = None;
        s.contract = contract;
    });
    let mut schema = SchemaGenerator::new(settings)
        .into_root_schema_for::<T>()
        .to_value();
    if let Some(root) = schema.as_object_mut() {
        // The tool's own title and description are what a model reads; the
        // Rust type name would only add noise.
        root.remove("title");
        if refers_to(&Value::Object(root.clone()), "#") {
            name_the_root(root, &T::schema_name());
        }
    }
    fit(&mut schema);
    schema
}

/// Whether any `$ref` in `schema` is `target`. Only a string under `$ref`
/// counts, so a property named `$ref` (whose value is a schema) cannot match.
fn refers_to(schema: &Value, target: &str) -> bool {
    match schema {
        Value::Object(map) => map
            .iter()
            .any(|(k, v)| (k == "$ref" && v == target) || refers_to(v, target)),
        Value::Array(items) => items.iter().any(|v| refers_to(v, target)),
        _ => false,
    }
}

fn retarget(schema: &mut Value, from: &str, to: &str) {
    match schema {
        Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                if k == "$ref" && v == from {
                    *v = Value::String(to.to_owned());
                } else {
                    retarget(v, from, to);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| retarget(v, from, to)),
        _ => {}
    }
}

/// A recursive type refers to itself as `#`, the document root; the host
/// resolves only `#/$defs/NAME`. The root's body is copied under that name
/// and every `#` points there, while the root itself stays the object
/// schema a tool's input must be.
fn name_the_root(root: &mut Map<String, Value>, name: &str) {
    let pointer = format!("#/$defs/{name}");
    let mut body = root.clone();
    body.remove("$defs");
    let mut body = Value::Object(body);
    retarget(&mut body, "#", &pointer);
    let mut whole = Value::Object(std::mem::take(root));
    retarget(&mut whole, "#", &pointer);
    if let Value::Object(map) = whole {
        *root = map;
    }
    if let Value::Object(defs) = root
        .entry("$defs")
        .or_insert_with(|| Value::Object(Map::new()))
    {
        defs.insert(name.to_owned(), body);
    }
}

/// Integer `format`s schemars emits, as the bounds the host can enforce.
fn integer_bounds(format: &str) -> Option<(i64, i64)> {
    Some(match format {
        "int8" => (i8::MIN.into(), i8::MAX.into()),
        "int16" => (i16::MIN.into(), i16::MAX.into()),
        "int32" => (i32::MIN.into(), i32::MAX.into()),
        "uint8" => (0, u8::MAX.into()),
        "uint16" => (0, u16::MAX.into()),
        "uint32" => (0, u32::MAX.into()),
        _ => return None,
    })
}

/// Rewrites one schema node and, keyword by keyword, its subschemas. Walking
/// by keyword (not by every nested object) matters: a property may be named
/// `format` or `properties`, and its name must never be taken for a keyword.
fn fit(schema: &mut Value) {
    let Some(node) = schema.as_object_mut() else {
        return;
    };
    if let Some(format) = node
        .get("format")
        .and_then(Value::as_str)
        .map(str::to_owned)
        && !matches!(format.as_str(), "path" | "uri")
    {
        node.remove("format");
        if let Some((min, max)) = integer_bounds(&format) {
            node.entry("minimum").or_insert(min.into());
            node.entry("maximum").or_insert(max.into());
        }
    }
    if node.contains_key("properties") && !node.contains_key("additionalProperties") {
        node.insert("additionalProperties".into(), Value::Bool(false));
    }
    for keyword in ["properties", "$defs"] {
        if let Some(Value::Object(children)) = node.get_mut(keyword) {
            children.values_mut().for_each(fit);
        }
    }
    for keyword in ["oneOf", "anyOf", "allOf", "prefixItems"] {
        if let Some(Value::Array(children)) = node.get_mut(keyword) {
            children.iter_mut().for_each(fit);
        }
    }
    for keyword in ["items", "additionalProperties", "not"] {
        if let Some(child) = node.get_mut(keyword) {
            fit(child);
        }
    }
    drop_empty_required(node);
}

/// schemars writes `required: []` for an object without required keys;
/// harmless, but noise in every tool list a model reads.
fn drop_empty_required(node: &mut Map<String, Value>) {
    if matches!(node.get("required"), Some(Value::Array(r)) if r.is_empty()) {
        node.remove("required");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::WorkspacePath;
    use serde::{Deserialize, Serialize};
    use serde_json::json;

    /// Arguments with every kind of field the fitting must handle.
    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Args {
        /// A small count.
        count: u8,
        offset: i32,
        big: i64,
        ratio: Option<f64>,
        path: WorkspacePath,
        mode: Mode,
        nested: Nested,
        tags: Vec<String>,
    }

    #[derive(Deserialize, Serialize, JsonSchema)]
    #[serde(rename_all = "lowercase")]
    enum Mode {
        Fast,
        Slow,
    }

    /// A struct whose field names are schema keywords.
    #[derive(Deserialize, Serialize, JsonSchema)]
    #[allow(dead_code)]
    struct Nested {
        format: String,
        properties: u32,
    }

    #[test]
    fn integer_formats_become_bounds_and_other_formats_go() {
        let schema = input_schema::<Args>();
        let props = &schema["properties"];
        assert_eq!(props["count"]["minimum"], json!(0));
        assert_eq!(props["count"]["maximum"], json!(255));
        assert_eq!(props["offset"]["minimum"], json!(i32::MIN));
        assert_eq!(props["offset"]["maximum"], json!(i32::MAX));
        assert_eq!(props["count"]["description"], json!("A small count."));
        for field in ["count", "offset", "big", "ratio"] {
            assert!(
                props[field].get("format").is_none(),
                "{field}: {}",
                props[field]
            );
        }
        assert_eq!(props["path"]["format"], json!("path"));
        assert_eq!(props["mode"]["enum"], json!(["fast", "slow"]));
    }

    #[test]
    fn every_object_is_closed_and_keyword_named_fields_survive() {
        let schema = input_schema::<Args>();
        assert_eq!(schema["additionalProperties"], json!(false));
        let nested = &schema["properties"]["nested"];
        assert_eq!(nested["additionalProperties"], json!(false));
        assert_eq!(nested["properties"]["format"]["type"], json!("string"));
        assert_eq!(nested["properties"]["properties"]["minimum"], json!(0));
        assert!(nested["properties"].get("additionalProperties").is_none());
        assert!(schema.get("$schema").is_none() && schema.get("title").is_none());
        let required = schema["required"].as_array().map(Vec::len);
        assert_eq!(required, Some(7), "all but the Option are required");
    }
}
