//! Tool calls as model APIs emit them, and results as they expect them back:
//! OpenAI (`tool_calls` -> `role: tool` messages) and Anthropic (`tool_use`
//! blocks -> `tool_result` blocks). Only shapes; running them is the
//! controller's job.

use crate::content::{Block, ResourceContents};
use crate::outcome::CallResult;
use serde_json::{Value, json};

/// Which API a turn came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    OpenAi,
    Anthropic,
}

/// One call as the model asked for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelCall {
    /// The model's id for the call, echoed in the result.
    pub id: String,
    pub tool: String,
    /// Arguments as JSON text.
    pub args: String,
}

fn text(v: &Value, key: &str, at: usize) -> Result<String, String> {
    v.get(key)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| format!("call {at}: `{key}` must be a string"))
}

/// Reads a JSON list of tool calls in either shape (not mixed).
pub fn parse(input: &str) -> Result<(Shape, Vec<ModelCall>), String> {
    let list: Vec<Value> = serde_json::from_str(input)
        .map_err(|e| format!("the turn is not a JSON list of tool calls: {e}"))?;
    let mut shape = None;
    let mut calls = Vec::with_capacity(list.len());
    for (i, item) in list.iter().enumerate() {
        let (this, call) = match item.get("type").and_then(Value::as_str) {
            Some("function") => {
                let function = item
                    .get("function")
                    .ok_or_else(|| format!("call {i}: an OpenAI call needs `function`"))?;
                let args = match function.get("arguments") {
                    Some(Value::String(s)) => s.clone(),
                    Some(Value::Object(_)) => function["arguments"].to_string(),
                    None => "{}".to_owned(),
                    Some(_) => {
                        return Err(format!(
                            "call {i}: `function.arguments` must be a JSON string"
                        ));
                    }
                };
                (
                    Shape::OpenAi,
                    ModelCall {
                        id: text(item, "id", i)?,
                        tool: text(function, "name", i)?,
                        args,
                    },
                )
            }
            Some("tool_use") => {
                let input = item.get("input").cloned().unwrap_or_else(|| json!({}));
                (
                    Shape::Anthropic,
                    ModelCall {
                        id: text(item, "id", i)?,
                        tool: text(item, "name", i)?,
                        args: input.to_string(),
                    },
                )
            }
            _ => {
                return Err(format!(
                    "call {i}: expected {{\"type\": \"function\", ...}} (OpenAI) or {{\"type\": \"tool_use\", ...}} (Anthropic)"
                ));
            }
        };
        if shape.is_some_and(|s| s != this) {
            return Err(format!(
                "call {i}: a turn must not mix OpenAI and Anthropic calls"
            ));
        }
        shape = Some(this);
        calls.push(call);
    }
    Ok((shape.unwrap_or(Shape::OpenAi), calls))
}

/// What the model reads for one result.
fn content(result: &CallResult) -> String {
    match (&result.content, &result.error) {
        (Some(content), _) => content.clone(),
        (None, Some(error)) => format!("{}: {}", error.code, error.message),
        (None, None) => String::new(),
    }
}

/// Image types an Anthropic `tool_result` may carry.
const ANTHROPIC_IMAGES: [&str; 4] = ["image/jpeg", "image/png", "image/gif", "image/webp"];

/// A block as text: its own text, an embedded text resource's contents, or
/// the one-line description of what cannot be shown.
fn as_text(block: &Block) -> String {
    match block {
        Block::Text { text } => text.clone(),
        Block::Resource {
            uri,
            contents: ResourceContents::Text(text),
            ..
        } => format!("[resource {uri}]\n{text}"),
        Block::Image { .. }
        | Block::Audio { .. }
        | Block::ResourceLink { .. }
        | Block::Resource {
            contents: ResourceContents::Blob(_),
            ..
        } => block.describe(),
    }
}

/// OpenAI `role: tool` messages take text only: every block is written out
/// as text (images, audio and blobs as a one-line description).
fn openai_content(result: &CallResult) -> String {
    let mut text = content(result);
    for block in &result.blocks {
        text.push_str("\n\n");
        text.push_str(&as_text(block));
    }
    text
}

/// An Anthropic `tool_result` takes text, images (JPEG, PNG, GIF, WebP) and
/// PDF documents; audio, other images and blobs, and links become text.
fn anthropic_content(result: &CallResult) -> Value {
    if result.blocks.is_empty() {
        return Value::String(content(result));
    }
    let text = |t: String| json!({ "type": "text", "text": t });
    let base64 = |kind: &str, mime: &str, data: String| json!({ "type": kind, "source": { "type": "base64", "media_type": mime, "data": data } });
    let mut out = vec![text(content(result))];
    for block in &result.blocks {
        out.push(match block {
            Block::Image { mime_type, data } if ANTHROPIC_IMAGES.contains(&mime_type.as_str()) => {
                base64("image", mime_type, data.base64())
            }
            Block::Resource {
                mime_type: Some(mime),
                contents: ResourceContents::Blob(blob),
                ..
            } if mime == "application/pdf" => base64("document", mime, blob.base64()),
            other => text(as_text(other)),
        });
    }
    Value::Array(out)
}

/// The results as messages for the API the turn came from, in call order.
pub fn render(shape: Shape, calls: &[ModelCall], results: &[CallResult]) -> Value {
    let items = calls.iter().zip(results).map(|(call, result)| match shape {
        Shape::OpenAi => {
            json!({ "role": "tool", "tool_call_id": call.id, "content": openai_content(result) })
        }
        Shape::Anthropic => json!({
            "type": "tool_result",
            "tool_use_id": call.id,
            "content": anthropic_content(result),
            "is_error": !result.is_ok(),
        }),
    });
    Value::Array(items.collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_shapes_parse_and_mixing_them_is_refused() {
        let openai =
            r#"[{"id":"c1","type":"function","function":{"name":"calc","arguments":"{\"a\":1}"}}]"#;
        let (shape, calls) = parse(openai).unwrap();
        assert_eq!(shape, Shape::OpenAi);
        assert_eq!(
            calls,
            [ModelCall {
                id: "c1".into(),
                tool: "calc".into(),
                args: r#"{"a":1}"#.into()
            }]
        );
        let anthropic = r#"[{"type":"tool_use","id":"t1","name":"calc","input":{"a":1}}]"#;
        let (shape, calls) = parse(anthropic).unwrap();
        assert_eq!(
            (shape, calls[0].args.as_str()),
            (Shape::Anthropic, r#"{"a":1}"#)
        );
        let mixed = r#"[{"id":"c1","type":"function","function":{"name":"a"}},{"type":"tool_use","id":"t","name":"b"}]"#;
        assert!(parse(mixed).unwrap_err().contains("mix"));
        assert!(parse(r#"[{"type":"text"}]"#).is_err());
        assert!(parse("{}").is_err());
    }
}
