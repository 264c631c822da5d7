//! What a tool may ask of the MCP client besides the person (the `client`
//! import of `toolwarden:tool@0.3.0`): a completion from the client's model
//! (sampling) and the client's roots. Plain values in MCP's own JSON shape
//! (`sampling/createMessage` params and result, `roots/list` result), so the
//! edges hand them over as they are; the checks a request passes before it
//! may leave the host; and what the policy grants a call.
//!
//! This module never asks anyone and never decides a grant: the policy
//! computes a [`SamplingGrant`], the engine holds a run's requests to it.

use crate::content::Bytes;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Most messages one sampling request may carry.
pub const MAX_MESSAGES: usize = 64;
/// Most bytes of text and media one sampling request may carry.
pub const MAX_REQUEST_BYTES: usize = 256 << 10;
/// Most bytes of text and media one answer may bring back to the plugin.
pub const MAX_ANSWER_BYTES: usize = 1 << 20;
/// Most roots a plugin is handed.
pub const MAX_ROOTS: usize = 64;

/// Who says a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
}

/// A piece of a message, as MCP writes it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Part {
    Text {
        text: String,
    },
    Image {
        data: Bytes,
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
    Audio {
        data: Bytes,
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
}

impl Part {
    fn size(&self) -> usize {
        match self {
            Part::Text { text } => text.len(),
            Part::Image { data, mime_type } | Part::Audio { data, mime_type } => {
                data.0.len() + mime_type.len()
            }
        }
    }
}

/// One message of a conversation. MCP allows one part or a list (since
/// 2025-11-25); one part is written alone, as every revision reads it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    #[serde(deserialize_with = "one_or_many", serialize_with = "alone_if_one")]
    pub content: Vec<Part>,
}

/// What a tool asks the client's model: `sampling/createMessage`'s params.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Sampling {
    pub messages: Vec<Message>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    pub max_tokens: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stop_sequences: Vec<String>,
}

impl Eq for Sampling {}

/// The model's answer: `sampling/createMessage`'s result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Completion {
    pub role: Role,
    #[serde(deserialize_with = "one_or_many", serialize_with = "alone_if_one")]
    pub content: Vec<Part>,
    pub model: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
}

/// A root the client works in: an entry of `roots/list`'s result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Root {
    pub uri: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// `roots/list`'s result.
#[derive(Deserialize)]
pub struct RootList {
    pub roots: Vec<Root>,
}

fn one_or_many<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<Part>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(Part),
        Many(Vec<Part>),
    }
    Ok(match OneOrMany::deserialize(d)? {
        OneOrMany::One(part) => vec![part],
        OneOrMany::Many(parts) => parts,
    })
}

fn alone_if_one<S: serde::Serializer>(parts: &[Part], s: S) -> Result<S::Ok, S::Error> {
    match parts {
        [one] => one.serialize(s),
        many => many.serialize(s),
    }
}

fn size_of(parts: &[Part]) -> usize {
    parts.iter().map(Part::size).sum()
}

impl Sampling {
    /// The request if a plugin may make it; what is wrong with it (a defect
    /// of the plugin) otherwise.
    pub fn check(&self) -> Result<(), String> {
        if self.messages.is_empty() {
            return Err("a sampling request has no messages".into());
        }
        if self.messages.len() > MAX_MESSAGES {
            return Err(format!(
                "a sampling request has {} messages, more than {MAX_MESSAGES}",
                self.messages.len()
            ));
        }
        if self.max_tokens == 0 {
            return Err("a sampling request asks for at most 0 tokens".into());
        }
        if let Some(t) = self.temperature
            && !(0.0..=1.0).contains(&t)
        {
            return Err(format!(
                "a sampling request's temperature {t} is not between 0 and 1"
            ));
        }
        let bytes = self
            .messages
            .iter()
            .map(|m| size_of(&m.content))
            .sum::<usize>()
            + self.system_prompt.as_ref().map_or(0, String::len)
            + self.stop_sequences.iter().map(String::len).sum::<usize>();
        if bytes > MAX_REQUEST_BYTES {
            return Err(format!(
                "a sampling request carries {bytes} bytes, more than {MAX_REQUEST_BYTES}"
            ));
        }
        for message in &self.messages {
            for part in &message.content {
                if let Part::Image { mime_type, .. } | Part::Audio { mime_type, .. } = part {
                    let kind = if matches!(part, Part::Image { .. }) {
                        "image/"
                    } else {
                        "audio/"
                    };
                    if !mime_type.starts_with(kind) {
                        return Err(format!(
                            "a sampling request has a part of type `{mime_type}` where `{kind}*` \
                             belongs"
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    /// One line about the request for a person and the audit log: how
    /// much it asks, and the start of its last message's text.
    pub fn summary(&self) -> String {
        let last = self
            .messages
            .last()
            .and_then(|m| {
                m.content.iter().find_map(|p| match p {
                    Part::Text { text } => Some(text.as_str()),
                    _ => None,
                })
            })
            .unwrap_or("");
        format!(
            "sampling: {} message(s), at most {} tokens: {}",
            self.messages.len(),
            self.max_tokens,
            crate::presentation::cut_to(crate::presentation::one_line(last), 200)
        )
    }
}

impl Completion {
    /// Whether the plugin may be handed this answer.
    pub fn check(&self) -> Result<(), String> {
        let bytes = size_of(&self.content) + self.model.len();
        if bytes > MAX_ANSWER_BYTES {
            return Err(format!(
                "the model's answer is {bytes} bytes, more than {MAX_ANSWER_BYTES}"
            ));
        }
        Ok(())
    }

    /// SHA-256 of the answer as MCP carries it, hex: what the audit log
    /// keeps instead of the text.
    pub fn digest(&self) -> String {
        let json = serde_json::to_vec(self).unwrap_or_default();
        hex::encode(Sha256::digest(json))
    }
}

/// Checks the roots a client gave before a plugin sees them.
pub fn check_roots(roots: &[Root]) -> Result<(), String> {
    if roots.len() > MAX_ROOTS {
        return Err(format!(
            "the client gave {} roots, more than {MAX_ROOTS}",
            roots.len()
        ));
    }
    if let Some(root) = roots.iter().find(|r| r.uri.len() > 4096) {
        return Err(format!(
            "the client gave a root URI of {} bytes",
            root.uri.len()
        ));
    }
    Ok(())
}

/// What the policy lets one call ask of the client's model: every request
/// of the call counts its `max_tokens` whole, answered or not.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct SamplingGrant {
    /// Requests one call may make.
    pub max_requests: u32,
    /// Tokens (the sum of the requests' `max_tokens`) one call may ask for.
    pub max_tokens: u64,
    /// Tokens the session's calls may ask for together.
    pub max_session_tokens: u64,
    /// Each request waits for the person's yes (an `ask` rule).
    pub ask: bool,
}

impl SamplingGrant {
    /// Each cap where no matching allow rule sets it.
    pub const DEFAULT: SamplingGrant = SamplingGrant {
        max_requests: 4,
        max_tokens: 4096,
        max_session_tokens: 32768,
        ask: false,
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(text: &str, max_tokens: u32) -> Sampling {
        Sampling {
            messages: vec![Message {
                role: Role::User,
                content: vec![Part::Text { text: text.into() }],
            }],
            system_prompt: None,
            max_tokens,
            temperature: None,
            stop_sequences: Vec::new(),
        }
    }

    #[test]
    fn a_request_is_written_as_mcp_writes_it() {
        let json = serde_json::to_value(ask("What is the capital of France?", 100)).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "messages": [{"role": "user", "content": {"type": "text", "text": "What is the capital of France?"}}],
                "maxTokens": 100
            })
        );
    }

    #[test]
    fn an_answer_reads_with_one_part_or_many() {
        let one: Completion = serde_json::from_value(serde_json::json!({
            "role": "assistant", "content": {"type": "text", "text": "Paris"},
            "model": "m", "stopReason": "endTurn"
        }))
        .unwrap();
        assert_eq!(
            one.content,
            vec![Part::Text {
                text: "Paris".into()
            }]
        );
        assert_eq!(one.stop_reason.as_deref(), Some("endTurn"));
        let many: Completion = serde_json::from_value(serde_json::json!({
            "role": "assistant", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
            "model": "m"
        }))
        .unwrap();
        assert_eq!(many.content.len(), 2);
        assert_ne!(one.digest(), many.digest());
    }

    #[test]
    fn malformed_requests_say_what_is_wrong() {
        assert!(ask("x", 10).check().is_ok());
        assert!(ask("x", 0).check().unwrap_err().contains("0 tokens"));
        let mut none = ask("x", 10);
        none.messages.clear();
        assert!(none.check().unwrap_err().contains("no messages"));
        let mut hot = ask("x", 10);
        hot.temperature = Some(1.5);
        assert!(hot.check().unwrap_err().contains("temperature"));
        let big = ask(&"x".repeat(MAX_REQUEST_BYTES + 1), 10);
        assert!(big.check().unwrap_err().contains("bytes"));
        let mut wrong = ask("x", 10);
        wrong.messages[0].content = vec![Part::Image {
            data: Bytes(vec![1]),
            mime_type: "text/html".into(),
        }];
        assert!(wrong.check().unwrap_err().contains("image/"));
    }
}
