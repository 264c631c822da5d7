//! Our types in MCP's shapes: tool specs to `Tool`, results to
//! `CallToolResult`.

use crate::outcome::CallResult;
use crate::spec::{Effect, ToolSpec};
use rmcp::model::{CallToolResult, ContentBlock, MetaObject, Tool, ToolAnnotations};
use serde_json::{Map, Value, json};
use std::sync::Arc;

fn object(value: &Value) -> Arc<Map<String, Value>> {
    Arc::new(value.as_object().cloned().unwrap_or_default())
}

/// A tool as MCP lists it. Annotations follow the declared effects; a tool
/// that does not declare `read-only` is assumed destructive (MCP's default).
pub(super) fn tool(spec: &ToolSpec) -> Tool {
    let read_only = spec.effects.contains(Effect::ReadOnly);
    let annotations = ToolAnnotations::with_title(spec.title.clone())
        .read_only(read_only)
        .destructive(!read_only)
        .idempotent(spec.effects.contains(Effect::Idempotent))
        .open_world(spec.effects.contains(Effect::OpenWorld) || spec.network.is_some());
    let mut tool = Tool::new(
        spec.name.clone(),
        spec.description.clone(),
        object(&spec.input_schema),
    )
    .with_title(spec.title.clone())
    .with_annotations(annotations);
    if let Some(output) = &spec.output_schema {
        tool = tool.with_raw_output_schema(object(output));
    }
    tool
}

/// A result as MCP returns it. Success: the model-facing text plus the
/// canonical value as `structuredContent`. Anything else: `isError`, text
/// that starts with the code and says what happened, and the machine-readable
/// details in `_meta.toolwarden`. Takes the result whole: its value and text
/// move into the answer.
pub(super) fn result(r: CallResult) -> CallToolResult {
    let meta = json!({
        "call_id": r.call_id,
        "status": r.status.as_str(),
        "code": r.error.as_ref().map(|e| e.code.as_str()),
        "approval_id": r.approval_id,
    });
    let mut meta_object = Map::new();
    meta_object.insert("toolwarden".into(), meta);
    let mut out = match (r.value, &r.error) {
        (Some(value), None) => {
            // Not `CallToolResult::structured`, which writes the value out
            // as text that would be replaced at once.
            let text = r.content.unwrap_or_else(|| value.to_string());
            let mut ok = CallToolResult::success(vec![ContentBlock::text(text)]);
            ok.structured_content = Some(value);
            ok
        }
        (_, Some(error)) => CallToolResult::error(vec![ContentBlock::text(format!(
            "{}: {}",
            error.code, error.message
        ))]),
        (None, None) => CallToolResult::error(vec![ContentBlock::text(
            "HOST_ERROR: the call ended without a result",
        )]),
    };
    out.meta = Some(MetaObject(meta_object));
    out
}
