//! Checks what a tool returned and renders it for the model.
//!
//! Pipeline step `RawOutput -> CheckedOutput`: the tool's own error becomes
//! TOOL_FAILED; an output over the size cap (value, text and every content
//! block's bytes together) is OUTPUT_TOO_LARGE (never silently cut, so a
//! model never mistakes part of a result for the whole); a value that is
//! not JSON or breaks the output schema, or a content block clients could
//! not take (a MIME type that is none, a relative URI), is
//! INVALID_TOOL_OUTPUT. It never runs or retries a tool.

use crate::content::Block;
use crate::outcome::{CallError, ErrorCode};
use crate::registry::Tool;
use crate::sandbox::{RawOutput, ToolFailure};
use crate::schema::describe;
use serde_json::Value;

/// Content blocks one result may carry: far more than a result shows a
/// model, few enough that every client can take them.
pub const MAX_CONTENT_BLOCKS: usize = 256;

/// A result that passed every output check. Only [`check`] makes one (and
/// [`CheckedOutput::replay`], from one it made before). Serializes as a
/// [`RecordedOutput`] reads back.
#[derive(Debug, serde::Serialize)]
pub struct CheckedOutput {
    value: Value,
    content: String,
    blocks: Vec<Block>,
}

/// A checked output as the idempotency records keep it.
#[derive(serde::Deserialize)]
pub struct RecordedOutput {
    value: Value,
    content: String,
    blocks: Vec<Block>,
}

impl CheckedOutput {
    /// An output [`check`] passed when the call first ran, answered again.
    pub fn replay(recorded: RecordedOutput) -> CheckedOutput {
        CheckedOutput {
            value: recorded.value,
            content: recorded.content,
            blocks: recorded.blocks,
        }
    }

    /// The canonical value (valid against the tool's output schema), what
    /// the model reads (the tool's text, or the value as JSON), and the
    /// content blocks that follow it.
    pub fn into_parts(self) -> (Value, String, Vec<Block>) {
        (self.value, self.content, self.blocks)
    }

    /// Appends what the model would have been shown for each child call,
    /// in the order the tool made them, after the tool's own content: the
    /// parent's result is the one answer the agent gets for the whole
    /// tree. What would take the whole past `max_bytes` is left out, and
    /// a line says so.
    pub fn with_children(mut self, children: Vec<ChildContent>, max_bytes: usize) -> CheckedOutput {
        let mut size = self.value.to_string().len()
            + self.content.len()
            + self.blocks.iter().map(Block::size).sum::<usize>();
        for child in children {
            let heading = format!("[{} ({})]", child.tool, child.call_id);
            let child_size = heading.len()
                + 1
                + child.text.len()
                + child.blocks.iter().map(Block::size).sum::<usize>();
            if size + child_size > max_bytes {
                self.blocks.push(Block::Text {
                    text: format!(
                        "{heading} {child_size} bytes of this call's content left out: \
                         with them the result would pass the {max_bytes}-byte limit"
                    ),
                });
                continue;
            }
            size += child_size;
            self.blocks.push(Block::Text {
                text: format!("{heading} {}", child.text),
            });
            self.blocks.extend(child.blocks);
        }
        self
    }
}

/// What the model would have been shown for one child call that succeeded.
#[derive(Debug)]
pub struct ChildContent {
    pub call_id: String,
    pub tool: String,
    pub text: String,
    pub blocks: Vec<Block>,
}

pub fn check(
    tool: &Tool,
    returned: Result<RawOutput, ToolFailure>,
    max_bytes: usize,
) -> Result<CheckedOutput, CallError> {
    let raw = returned.map_err(ToolFailure::into_error)?;
    let size = raw.value.len()
        + raw.text.as_ref().map_or(0, String::len)
        + raw.content.iter().map(Block::size).sum::<usize>();
    if size > max_bytes {
        return Err(CallError::new(
            ErrorCode::OutputTooLarge,
            format!(
                "the tool returned {size} bytes, over the {max_bytes}-byte limit (`limits.max_output_kb`); \
                 ask for less, e.g. a smaller range or a narrower search"
            ),
        ));
    }
    let value: Value = serde_json::from_str(&raw.value).map_err(|e| {
        CallError::new(
            ErrorCode::InvalidToolOutput,
            format!("the tool's value is not valid JSON ({e}); this is a defect in the plugin"),
        )
    })?;
    if let Some(schema) = &tool.output {
        let violations = schema.violations(&value);
        if !violations.is_empty() {
            return Err(CallError::new(
                ErrorCode::InvalidToolOutput,
                format!(
                    "the tool's value breaks its own output schema, a defect in the plugin: {}",
                    describe("the value", &violations)
                ),
            ));
        }
    }
    if raw.content.len() > MAX_CONTENT_BLOCKS {
        return Err(CallError::new(
            ErrorCode::InvalidToolOutput,
            format!(
                "the tool returned {} content blocks; at most {MAX_CONTENT_BLOCKS} are passed on",
                raw.content.len()
            ),
        ));
    }
    if let Some((at, problem)) = raw
        .content
        .iter()
        .enumerate()
        .find_map(|(i, block)| block.problem().map(|p| (i, p)))
    {
        return Err(CallError::new(
            ErrorCode::InvalidToolOutput,
            format!(
                "content block {at} cannot be passed on: {problem}; this is a defect in the plugin"
            ),
        ));
    }
    let content = raw.text.unwrap_or(raw.value);
    Ok(CheckedOutput {
        value,
        content,
        blocks: raw.content,
    })
}
