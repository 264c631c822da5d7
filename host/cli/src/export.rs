//! Tool definitions in the shapes model APIs take: OpenAI function calling
//! (plain and strict mode), Anthropic tool use, and MCP `tools/list`.
//!
//! Names need no mapping: the registry only accepts `[a-z][a-z0-9_]*` of at
//! most 64 characters, valid in every one of these APIs, so a name a model
//! sends back is the tool's own. Strict mode needs schema surgery (every
//! property required, optional ones nullable, closed objects); a schema that
//! cannot be expressed that way is reported per tool, never approximated.

use crate::spec::ToolSpec;
use serde_json::{Map, Value, json};

/// The API a tool list is meant for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    OpenAi,
    OpenAiStrict,
    Anthropic,
    Mcp,
}

impl std::str::FromStr for Format {
    type Err = String;

    fn from_str(s: &str) -> Result<Format, String> {
        match s {
            "openai" => Ok(Format::OpenAi),
            "openai-strict" => Ok(Format::OpenAiStrict),
            "anthropic" => Ok(Format::Anthropic),
            "mcp" => Ok(Format::Mcp),
            other => Err(format!(
                "unknown format `{other}`; use openai, openai-strict, anthropic or mcp"
            )),
        }
    }
}

/// A tool that could not be exported in a format, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unexportable {
    pub tool: String,
    pub reason: String,
}

/// The tools as `format` wants them, and the ones it cannot express.
pub fn export<'a>(
    format: Format,
    tools: impl Iterator<Item = &'a ToolSpec>,
) -> (Vec<Value>, Vec<Unexportable>) {
    let mut out = Vec::new();
    let mut refused = Vec::new();
    for spec in tools {
        match format {
            Format::OpenAi => out.push(openai(spec, spec.input_schema.clone(), false)),
            Format::OpenAiStrict => match strict(&spec.input_schema, "") {
                Ok(schema) => out.push(openai(spec, schema, true)),
                Err(reason) => refused.push(Unexportable {
                    tool: spec.name.clone(),
                    reason,
                }),
            },
            Format::Anthropic => out.push(json!({
                "name": spec.name,
                "description": spec.description,
                "input_schema": spec.input_schema,
            })),
            Format::Mcp => out.push(crate::mcp::tool_json(spec)),
        }
    }
    (out, refused)
}

fn openai(spec: &ToolSpec, parameters: Value, strict: bool) -> Value {
    json!({
        "type": "function",
        "function": {
            "name": spec.name,
            "description": spec.description,
            "parameters": parameters,
            "strict": strict,
        }
    })
}

/// Keywords OpenAI strict mode cannot take, with the reason to give.
const NOT_IN_STRICT: &[(&str, &str)] = &[
    ("oneOf", "`oneOf` is not supported in strict mode"),
    ("$ref", "`$ref` is not expanded here"),
    ("$defs", "`$defs` is not expanded here"),
    (
        "uniqueItems",
        "`uniqueItems` is not supported in strict mode",
    ),
];

/// Rewrites a schema for OpenAI strict mode: every object closed and every
/// property required, optional ones made nullable.
fn strict(schema: &Value, pointer: &str) -> Result<Value, String> {
    let Some(obj) = schema.as_object() else {
        return Err(format!("`{pointer}` is not an object schema"));
    };
    for (keyword, why) in NOT_IN_STRICT {
        if obj.contains_key(*keyword) {
            return Err(format!(
                "{why} (at `{}`)",
                if pointer.is_empty() { "/" } else { pointer }
            ));
        }
    }
    let mut out: Map<String, Value> = obj.clone();
    // Our workspace-path marker means nothing to OpenAI, whose strict mode
    // accepts only the formats it knows.
    if out.get("format") == Some(&json!("path")) {
        out.remove("format");
    }
    if let Some(items) = obj.get("items") {
        out.insert("items".into(), strict(items, &format!("{pointer}/items"))?);
    }
    if let Some(any) = obj.get("anyOf").and_then(Value::as_array) {
        let alternatives = any
            .iter()
            .enumerate()
            .map(|(i, s)| strict(s, &format!("{pointer}/anyOf/{i}")))
            .collect::<Result<Vec<_>, _>>()?;
        out.insert("anyOf".into(), Value::Array(alternatives));
    }
    let is_object = obj.get("type") == Some(&json!("object")) || obj.contains_key("properties");
    if !is_object {
        return Ok(Value::Object(out));
    }
    if obj
        .get("additionalProperties")
        .is_some_and(|a| a != &json!(false))
    {
        return Err(format!(
            "`{pointer}` allows additional properties, which strict mode cannot express"
        ));
    }
    let required: Vec<&str> = obj
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut properties = Map::new();
    for (name, sub) in obj
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        let mut converted = strict(sub, &format!("{pointer}/properties/{name}"))?;
        if !required.contains(&name.as_str()) {
            converted = nullable(converted);
        }
        properties.insert(name.clone(), converted);
    }
    out.insert(
        "required".into(),
        Value::Array(properties.keys().map(|k| json!(k)).collect()),
    );
    out.insert("properties".into(), Value::Object(properties));
    out.insert("additionalProperties".into(), json!(false));
    Ok(Value::Object(out))
}

/// Lets an optional property be `null`, so that it can be listed as required.
fn nullable(mut schema: Value) -> Value {
    if let Some(obj) = schema.as_object_mut() {
        match obj.get("type").cloned() {
            Some(Value::String(t)) => {
                obj.insert("type".into(), json!([t, "null"]));
                if let Some(Value::Array(options)) = obj.get_mut("enum") {
                    options.push(Value::Null);
                }
                return schema;
            }
            Some(Value::Array(mut types)) => {
                if !types.contains(&json!("null")) {
                    types.push(json!("null"));
                }
                obj.insert("type".into(), Value::Array(types));
                return schema;
            }
            _ => {}
        }
    }
    json!({ "anyOf": [schema, { "type": "null" }] })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strict_mode_requires_every_property_and_makes_optional_ones_nullable() {
        let schema = json!({
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "max_bytes": {"type": "integer", "minimum": 1},
                "mode": {"enum": ["a", "b"]},
                "tags": {"type": "array", "items": {"type": "object", "properties": {"k": {"type": "string"}}}}
            },
            "required": ["path"],
            "additionalProperties": false
        });
        let s = strict(&schema, "").unwrap();
        assert_eq!(s["required"], json!(["max_bytes", "mode", "path", "tags"]));
        assert_eq!(s["properties"]["path"]["type"], "string");
        assert_eq!(
            s["properties"]["max_bytes"]["type"],
            json!(["integer", "null"])
        );
        assert_eq!(
            s["properties"]["mode"],
            json!({"anyOf": [{"enum": ["a", "b"]}, {"type": "null"}]})
        );
        assert_eq!(s["properties"]["tags"]["type"], json!(["array", "null"]));
        let inner = &s["properties"]["tags"]["items"];
        assert_eq!(
            inner["additionalProperties"], false,
            "nested objects are closed too: {s}"
        );
        assert_eq!(inner["required"], json!(["k"]));
    }

    #[test]
    fn what_strict_mode_cannot_express_is_refused_with_the_reason() {
        assert!(
            strict(
                &json!({"type": "object", "properties": {"a": {"oneOf": [{"type": "string"}]}}}),
                ""
            )
            .unwrap_err()
            .contains("oneOf")
        );
        assert!(
            strict(&json!({"type": "object", "additionalProperties": true}), "")
                .unwrap_err()
                .contains("additional")
        );
    }
}
