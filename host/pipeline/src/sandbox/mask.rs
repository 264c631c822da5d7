//! What a run hands back, with every credential the host injects masked
//! (see [`crate::egress::Secrets`]): the value, its text and content blocks,
//! the tool's error, the host's error (a crashed plugin's stderr is quoted
//! there) and the reasons of retried attempts. The last point where the
//! sandbox's output is the plugin's alone; everything after it (the output
//! check, the caller, the audit) sees only the masked form.

use super::{Execution, RawOutput, ToolFailure};
use crate::content::Block;
use crate::egress::Secrets;

impl Execution {
    pub(super) fn masked(mut self, secrets: Option<&std::sync::Arc<Secrets>>) -> Execution {
        let Some(secrets) = secrets else {
            return self;
        };
        match &mut self.result {
            Ok(Ok(output)) => mask_output(secrets, output),
            Ok(Err(
                ToolFailure::InvalidArgs(message)
                | ToolFailure::NotFound(message)
                | ToolFailure::Failed(message),
            )) => secrets.mask_string(message),
            Err(error) => secrets.mask_string(&mut error.message),
        }
        for retried in &mut self.retried {
            secrets.mask_string(&mut retried.message);
        }
        self
    }
}

fn mask_output(secrets: &Secrets, output: &mut RawOutput) {
    if let Some(value) = secrets.mask_json(&output.value) {
        output.value = value;
    }
    if let Some(text) = &mut output.text {
        secrets.mask_string(text);
    }
    for block in &mut output.content {
        mask_block(secrets, block);
    }
}

/// A block with its text, names and bytes masked. Bytes are masked where
/// the secret stands in them as text; a block whose bytes no longer read
/// as its kind after that is replaced by a text block that says why.
pub(super) fn mask_block(secrets: &Secrets, block: &mut Block) {
    let Ok(shown) = serde_json::to_value(&*block) else {
        return;
    };
    let masked_bytes = match &*block {
        Block::Image { data, .. } | Block::Audio { data, .. } => secrets.mask_bytes(&data.0),
        Block::Text { .. } | Block::ResourceLink { .. } | Block::Resource { .. } => None,
    };
    if let Some(bytes) = masked_bytes {
        match block {
            Block::Image { data, .. } | Block::Audio { data, .. } => data.0 = bytes,
            Block::Text { .. } | Block::ResourceLink { .. } | Block::Resource { .. } => {}
        }
        return;
    }
    let Some(masked) = secrets.mask_value(&shown) else {
        return;
    };
    *block = serde_json::from_value(masked).unwrap_or_else(|_| Block::Text {
        text: "[REDACTED: a content block carried a credential]".to_owned(),
    });
}
