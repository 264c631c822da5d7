//! Content blocks a tool returns beside its value (0.2.0 contract): text,
//! images, audio, links to resources and embedded resources. Plain values,
//! with what the output step checks ([`Block::problem`]), how many bytes
//! each holds, and the one-line description used wherever bytes cannot be
//! shown (the CLI, the audit, model APIs that take no images).
//!
//! Binary data serializes as base64, as MCP carries it.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// The bytes of an image or audio block, base64 in JSON.
#[derive(Clone, PartialEq, Eq)]
pub struct Bytes(pub Vec<u8>);

impl fmt::Debug for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} bytes", self.0.len())
    }
}

impl Serialize for Bytes {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use base64::Engine;
        s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(&self.0))
    }
}

/// Read back from a recorded outcome (see `idempotency`).
impl<'de> Deserialize<'de> for Bytes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Bytes, D::Error> {
        use base64::Engine;
        let text = String::deserialize(d)?;
        base64::engine::general_purpose::STANDARD
            .decode(text)
            .map(Bytes)
            .map_err(serde::de::Error::custom)
    }
}

impl Bytes {
    pub fn base64(&self) -> String {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD.encode(&self.0)
    }
}

/// What an embedded resource holds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "data", rename_all = "snake_case")]
pub enum ResourceContents {
    Text(String),
    Blob(Bytes),
}

/// One block of content for the model.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Block {
    Text {
        text: String,
    },
    Image {
        mime_type: String,
        data: Bytes,
    },
    Audio {
        mime_type: String,
        data: Bytes,
    },
    ResourceLink {
        uri: String,
        name: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        description: Option<String>,
    },
    Resource {
        uri: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        contents: ResourceContents,
    },
}

/// `type/subtype` with RFC 6838's token characters, optionally with
/// parameters (`text/plain; charset=utf-8`).
fn is_mime_type(text: &str) -> bool {
    let essence = text.split(';').next().unwrap_or_default().trim();
    let token = |t: &str| {
        !t.is_empty()
            && t.len() <= 127
            && t.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$&-^_.+".contains(&b))
    };
    text.len() <= 255
        && !text.chars().any(char::is_control)
        && essence
            .split_once('/')
            .is_some_and(|(t, s)| token(t) && token(s))
}

impl Block {
    /// Bytes the block carries: what counts against the output limit.
    pub fn size(&self) -> usize {
        let opt = |o: &Option<String>| o.as_ref().map_or(0, String::len);
        match self {
            Block::Text { text } => text.len(),
            Block::Image { mime_type, data } | Block::Audio { mime_type, data } => {
                mime_type.len() + data.0.len()
            }
            Block::ResourceLink {
                uri,
                name,
                mime_type,
                description,
            } => uri.len() + name.len() + opt(mime_type) + opt(description),
            Block::Resource {
                uri,
                mime_type,
                contents,
            } => {
                uri.len()
                    + opt(mime_type)
                    + match contents {
                        ResourceContents::Text(text) => text.len(),
                        ResourceContents::Blob(blob) => blob.0.len(),
                    }
            }
        }
    }

    pub fn kind(&self) -> &'static str {
        match self {
            Block::Text { .. } => "text",
            Block::Image { .. } => "image",
            Block::Audio { .. } => "audio",
            Block::ResourceLink { .. } => "resource_link",
            Block::Resource { .. } => "resource",
        }
    }

    pub fn mime_type(&self) -> Option<&str> {
        match self {
            Block::Text { .. } => None,
            Block::Image { mime_type, .. } | Block::Audio { mime_type, .. } => Some(mime_type),
            Block::ResourceLink { mime_type, .. } | Block::Resource { mime_type, .. } => {
                mime_type.as_deref()
            }
        }
    }

    /// Why the block cannot be passed on, if it cannot: a MIME type that is
    /// not one (or of the wrong kind), a URI that is not absolute.
    pub fn problem(&self) -> Option<String> {
        let mime = |mime: &str, family: Option<&str>| {
            if !is_mime_type(mime) {
                return Some(format!("`{mime}` is not a MIME type (`type/subtype`)"));
            }
            family
                .filter(|f| !mime.to_ascii_lowercase().starts_with(f))
                .map(|f| {
                    format!(
                        "an {} block's MIME type must be `{f}*`, not `{mime}`",
                        self.kind()
                    )
                })
        };
        let uri = |uri: &str| {
            url::Url::parse(uri)
                .err()
                .map(|_| format!("`{uri}` is not an absolute URI"))
        };
        match self {
            Block::Text { .. } => None,
            Block::Image { mime_type, .. } => mime(mime_type, Some("image/")),
            Block::Audio { mime_type, .. } => mime(mime_type, Some("audio/")),
            Block::ResourceLink {
                uri: u, mime_type, ..
            }
            | Block::Resource {
                uri: u, mime_type, ..
            } => uri(u).or_else(|| mime_type.as_deref().and_then(|m| mime(m, None))),
        }
    }

    /// One line for places that cannot show the block itself.
    pub fn describe(&self) -> String {
        match self {
            Block::Text { text } => text.clone(),
            Block::Image { mime_type, data } | Block::Audio { mime_type, data } => {
                format!("[{} {mime_type}, {} bytes]", self.kind(), data.0.len())
            }
            Block::ResourceLink { uri, name, .. } => format!("[resource link `{name}`: {uri}]"),
            Block::Resource {
                uri,
                mime_type,
                contents,
            } => format!(
                "[resource {uri}{}, {} bytes]",
                mime_type
                    .as_deref()
                    .map(|m| format!(" ({m})"))
                    .unwrap_or_default(),
                match contents {
                    ResourceContents::Text(text) => text.len(),
                    ResourceContents::Blob(blob) => blob.0.len(),
                }
            ),
        }
    }
}

/// What the audit keeps of a block: its kind, MIME type and size, never
/// its bytes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BlockSummary {
    #[serde(rename = "type")]
    pub kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    pub bytes: usize,
}

impl From<&Block> for BlockSummary {
    fn from(block: &Block) -> BlockSummary {
        BlockSummary {
            kind: block.kind(),
            mime_type: block.mime_type().map(str::to_owned),
            bytes: block.size(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_checked_for_what_clients_rely_on() {
        let image = |mime: &str| Block::Image {
            mime_type: mime.into(),
            data: Bytes(vec![1, 2, 3]),
        };
        assert_eq!(image("image/png").problem(), None);
        assert!(image("audio/wav").problem().unwrap().contains("image/"));
        assert!(image("png").problem().is_some());
        assert!(image("image/png\nX-Evil: 1").problem().is_some());
        let link = |uri: &str| Block::ResourceLink {
            uri: uri.into(),
            name: "n".into(),
            mime_type: Some("text/plain; charset=utf-8".into()),
            description: None,
        };
        assert_eq!(link("file:///a/b.txt").problem(), None);
        assert!(link("b.txt").problem().is_some());
    }

    #[test]
    fn binary_data_serializes_as_base64_and_summaries_hold_no_bytes() {
        let block = Block::Audio {
            mime_type: "audio/wav".into(),
            data: Bytes(b"RIFF".to_vec()),
        };
        let json = serde_json::to_value(&block).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"type": "audio", "mime_type": "audio/wav", "data": "UklGRg=="})
        );
        assert_eq!(block.size(), "audio/wav".len() + 4);
        assert_eq!(block.describe(), "[audio audio/wav, 4 bytes]");
        let summary = serde_json::to_value(BlockSummary::from(&block)).unwrap();
        assert_eq!(
            summary,
            serde_json::json!({"type": "audio", "mime_type": "audio/wav", "bytes": 13})
        );
    }
}
