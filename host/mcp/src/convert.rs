//! Our types in MCP's shapes: tool specs to `Tool`, results to
//! `CallToolResult`.

use crate::content::{Block, ResourceContents};
use crate::outcome::CallResult;
use crate::spec::{Effect, ToolSpec};
use rmcp::model::{
    CallToolResult, ContentBlock, MetaObject, Resource, ResourceContents as McpContents, Tool,
    ToolAnnotations,
};
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

/// A content block as MCP carries it: one to one.
pub(super) fn block(block: Block) -> ContentBlock {
    match block {
        Block::Text { text } => ContentBlock::text(text),
        Block::Image { mime_type, data } => ContentBlock::image(data.base64(), mime_type),
        Block::Audio { mime_type, data } => ContentBlock::audio(data.base64(), mime_type),
        Block::ResourceLink {
            uri,
            name,
            mime_type,
            description,
        } => {
            let mut link = Resource::new(uri, name);
            link.mime_type = mime_type;
            link.description = description;
            ContentBlock::resource_link(link)
        }
        Block::Resource {
            uri,
            mime_type,
            contents,
        } => ContentBlock::resource(resource_contents(uri, mime_type, contents)),
    }
}

/// A resource's contents as MCP carries them (embedded or read).
pub(super) fn resource_contents(
    uri: String,
    mime_type: Option<String>,
    contents: ResourceContents,
) -> McpContents {
    match contents {
        ResourceContents::Text(text) => McpContents::TextResourceContents {
            uri,
            mime_type,
            text,
            meta: None,
        },
        ResourceContents::Blob(blob) => McpContents::BlobResourceContents {
            uri,
            mime_type,
            blob: blob.base64(),
            meta: None,
        },
    }
}

/// A result as MCP returns it. Success: the model-facing text, then the
/// tool's content blocks, plus the canonical value as `structuredContent`. Anything else: `isError`, text
/// that starts with the code and says what happened, and the machine-readable
/// details in `_meta.toolwarden`. Takes the result whole: its value and text
/// move into the answer.
pub(super) fn result(r: CallResult) -> CallToolResult {
    let mut meta = json!({
        "call_id": r.call_id,
        "status": r.status.as_str(),
        "code": r.error.as_ref().map(|e| e.code.as_str()),
        "approval_id": r.approval_id,
    });
    if let Some(original) = &r.replayed_from {
        meta["replayed_from"] = json!(original);
    }
    if !r.children.is_empty() {
        meta["children"] = json!(r.children);
    }
    let mut meta_object = Map::new();
    meta_object.insert("toolwarden".into(), meta);
    let mut out = match (r.value, &r.error) {
        (Some(value), None) => {
            // Not `CallToolResult::structured`, which writes the value out
            // as text that would be replaced at once.
            let text = r.content.unwrap_or_else(|| value.to_string());
            let content = std::iter::once(ContentBlock::text(text))
                .chain(r.blocks.into_iter().map(block))
                .collect();
            let mut ok = CallToolResult::success(content);
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

/// A refused or failed request for a prompt or a resource as a JSON-RPC
/// error whose message starts with the host's code: what the client asked
/// for that it cannot have is `invalid params` (`-32602`), anything else
/// `internal` (`-32603`). `data` holds the code and the URI asked for, if
/// any (SEP-2164).
pub(super) fn refusal(error: crate::outcome::CallError, uri: Option<&str>) -> rmcp::ErrorData {
    use crate::outcome::ErrorCode;
    let message = format!("{}: {}", error.code, error.message);
    let mut data = json!({ "toolwarden": { "code": error.code.as_str() } });
    if let Some(uri) = uri {
        data["uri"] = json!(uri);
    }
    match error.code {
        ErrorCode::UnknownTool | ErrorCode::InvalidArgs | ErrorCode::PolicyDenied => {
            rmcp::ErrorData::invalid_params(message, Some(data))
        }
        _ => rmcp::ErrorData::internal_error(message, Some(data)),
    }
}
