//! The credential values the host injects, and the forms a plugin could
//! hand one back in: as it is, URL-encoded, base64 (standard and URL-safe,
//! at any alignment inside longer encoded text), hex and JSON-escaped.
//!
//! A credential reaches a plugin only if a server echoes it, but a server
//! that does is not rare (debug endpoints, error pages that quote the
//! request). So everything that leaves the sandbox towards a person, a
//! model or the audit is masked ([`Secrets::mask_str`], [`Secrets::mask_value`]),
//! and a request to an origin a credential is not bound to is refused when
//! its URL, headers or body carry it ([`Secrets::carried`], [`Screen`]).
//! This is defence in depth: a plugin that transforms a secret in another
//! way (reverses it, encrypts it) is not caught. README.md says so.
//!
//! Owns nothing but the values; never decides a grant.

use crate::origin::Origin;
use aho_corasick::{AhoCorasick, MatchKind};
use base64::Engine;
use serde_json::Value;
use std::sync::Arc;

/// What a credential found in text is replaced with.
fn mask_for(name: &str) -> String {
    format!("[REDACTED: credential {name}]")
}

/// Shortest derived needle kept: a base64 or percent-encoded fragment
/// shorter than this would mask innocent text by chance.
const MIN_DERIVED: usize = 8;

/// One credential: its name, the origins it is bound to, and its secret.
pub(super) struct Known<'a> {
    pub name: &'a str,
    pub bound: &'a [crate::origin::OriginPattern],
    pub secret: &'a str,
}

/// Every form of every credential value, ready to find and mask.
pub struct Secrets {
    /// Leftmost-longest, for masking.
    masker: AhoCorasick,
    /// All matches, overlapping, for finding a credential a request must
    /// not carry even where another's form overlaps it.
    finder: AhoCorasick,
    /// For each pattern, the credential it belongs to.
    owner: Vec<usize>,
    names: Vec<Arc<str>>,
    bound: Vec<Vec<crate::origin::OriginPattern>>,
    /// The longest pattern, in bytes.
    longest: usize,
}

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Secrets")
            .field("credentials", &self.names)
            .finish()
    }
}

/// Every byte but RFC 3986's unreserved ones: what `encodeURIComponent`-like
/// encoders escape.
const RESERVED: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// The forms of `secret` a plugin may return it in.
fn forms(secret: &str) -> Vec<Vec<u8>> {
    let bytes = secret.as_bytes();
    let mut out: Vec<Vec<u8>> = vec![bytes.to_vec()];
    let mut derived = |form: Vec<u8>| {
        if form.len() >= MIN_DERIVED && !out.contains(&form) {
            out.push(form);
        }
    };
    // Percent-encoding: every reserved byte escaped, upper- and lower-case
    // hex, and the form encoding's `+` for a space.
    let upper: String =
        percent_encoding::utf8_percent_encode(secret, percent_encoding::NON_ALPHANUMERIC)
            .to_string();
    derived(upper.clone().into_bytes());
    derived(lowercase_escapes(&upper).into_bytes());
    derived(upper.replace("%20", "+").into_bytes());
    derived(
        percent_encoding::utf8_percent_encode(secret, RESERVED)
            .to_string()
            .into_bytes(),
    );
    // Base64 of the secret wherever it starts within encoded text: for each
    // of the three alignments, the characters that depend on its bytes
    // alone.
    for engine in [
        &base64::engine::general_purpose::STANDARD_NO_PAD,
        &base64::engine::general_purpose::URL_SAFE_NO_PAD,
    ] {
        for lead in 0..3usize {
            let mut padded = vec![0u8; lead];
            padded.extend_from_slice(bytes);
            let encoded = engine.encode(&padded);
            let skip = [0, 2, 3][lead];
            let drop_tail = usize::from(padded.len() % 3 != 0);
            if encoded.len() > skip + drop_tail {
                derived(encoded.as_bytes()[skip..encoded.len() - drop_tail].to_vec());
            }
        }
    }
    derived(hex::encode(bytes).into_bytes());
    derived(hex::encode_upper(bytes).into_bytes());
    if let Ok(json) = serde_json::to_string(secret) {
        derived(json.as_bytes()[1..json.len() - 1].to_vec());
    }
    out
}

fn lowercase_escapes(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut escape = 0;
    for c in text.chars() {
        if c == '%' {
            escape = 2;
            out.push(c);
        } else if escape > 0 {
            escape -= 1;
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

impl Secrets {
    /// The secrets of `credentials`; `None` when there are none, so that a
    /// host without credentials pays nothing.
    pub(super) fn new<'a>(credentials: impl Iterator<Item = Known<'a>>) -> Option<Secrets> {
        let mut patterns: Vec<Vec<u8>> = Vec::new();
        let mut owner = Vec::new();
        let mut names = Vec::new();
        let mut bound = Vec::new();
        for (index, known) in credentials.enumerate() {
            for form in forms(known.secret) {
                patterns.push(form);
                owner.push(index);
            }
            names.push(Arc::from(known.name));
            bound.push(known.bound.to_vec());
        }
        if patterns.is_empty() {
            return None;
        }
        let build = |kind| {
            AhoCorasick::builder()
                .match_kind(kind)
                .build(&patterns)
                .map_err(|e| tracing::error!("cannot build the credential masker: {e}"))
                .ok()
        };
        Some(Secrets {
            masker: build(MatchKind::LeftmostLongest)?,
            finder: build(MatchKind::Standard)?,
            longest: patterns.iter().map(Vec::len).max().unwrap_or(0),
            owner,
            names,
            bound,
        })
    }

    /// `text` with every credential in it masked; `None` when it holds none.
    pub fn mask_str(&self, text: &str) -> Option<String> {
        if !self.masker.is_match(text) {
            return None;
        }
        let mut out = String::with_capacity(text.len());
        let mut last = 0;
        for found in self.masker.find_iter(text) {
            // A derived form may start or end inside a character; the text
            // is then masked from the boundaries around it.
            let start = floor_boundary(text, found.start()).max(last);
            let end = ceil_boundary(text, found.end());
            out.push_str(&text[last..start]);
            out.push_str(&mask_for(
                &self.names[self.owner[found.pattern().as_usize()]],
            ));
            last = end;
        }
        out.push_str(&text[last..]);
        Some(out)
    }

    /// `text` masked in place.
    pub fn mask_string(&self, text: &mut String) {
        if let Some(masked) = self.mask_str(text) {
            *text = masked;
        }
    }

    /// `value` with every credential in its strings and keys masked; `None`
    /// when it holds none.
    pub fn mask_value(&self, value: &Value) -> Option<Value> {
        if !self.holds(value) {
            return None;
        }
        Some(self.masked_value(value))
    }

    fn holds(&self, value: &Value) -> bool {
        match value {
            Value::String(s) => self.masker.is_match(s),
            Value::Array(items) => items.iter().any(|v| self.holds(v)),
            Value::Object(map) => map
                .iter()
                .any(|(k, v)| self.masker.is_match(k) || self.holds(v)),
            Value::Null | Value::Bool(_) | Value::Number(_) => false,
        }
    }

    fn masked_value(&self, value: &Value) -> Value {
        let text = |s: &str| self.mask_str(s).unwrap_or_else(|| s.to_owned());
        match value {
            Value::String(s) => Value::String(text(s)),
            Value::Array(items) => {
                Value::Array(items.iter().map(|v| self.masked_value(v)).collect())
            }
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| (text(k), self.masked_value(v)))
                    .collect(),
            ),
            Value::Null | Value::Bool(_) | Value::Number(_) => value.clone(),
        }
    }

    /// JSON text with every credential in it masked, as JSON still: the
    /// text is parsed and its strings masked (text that is no JSON is
    /// masked as text). `None` when it holds none.
    pub fn mask_json(&self, json: &str) -> Option<String> {
        if !self.masker.is_match(json) {
            return None;
        }
        match serde_json::from_str::<Value>(json) {
            Ok(value) => Some(self.masked_value(&value).to_string()),
            Err(_) => self.mask_str(json),
        }
    }

    /// Bytes with every credential in them masked; `None` when they hold none.
    pub fn mask_bytes(&self, bytes: &[u8]) -> Option<Vec<u8>> {
        if !self.masker.is_match(bytes) {
            return None;
        }
        let mut out = Vec::with_capacity(bytes.len());
        self.masker
            .replace_all_with_bytes(bytes, &mut out, |found, _, out| {
                out.extend_from_slice(
                    mask_for(&self.names[self.owner[found.pattern().as_usize()]]).as_bytes(),
                );
                true
            });
        Some(out)
    }

    /// The name of a credential `bytes` carry that is not bound to
    /// `origin`: what a request there must not send.
    pub fn carried(&self, bytes: &[u8], origin: &Origin) -> Option<Arc<str>> {
        self.finder
            .find_overlapping_iter(bytes)
            .map(|found| self.owner[found.pattern().as_usize()])
            .find(|&credential| !self.bound[credential].iter().any(|p| p.matches(origin)))
            .map(|credential| Arc::clone(&self.names[credential]))
    }

    /// Whether some credential is not bound to `origin`: a request body
    /// there must be screened.
    pub fn foreign_to(&self, origin: &Origin) -> bool {
        self.bound
            .iter()
            .any(|patterns| !patterns.iter().any(|p| p.matches(origin)))
    }

    /// Bytes a body screen holds back so that a credential split across
    /// two frames is found before any of it is sent.
    pub fn holdback(&self) -> usize {
        self.longest.saturating_sub(1)
    }
}

fn floor_boundary(text: &str, mut at: usize) -> usize {
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

fn ceil_boundary(text: &str, mut at: usize) -> usize {
    while !text.is_char_boundary(at) {
        at += 1;
    }
    at
}

/// A request body on its way to an origin some credential is not bound to:
/// each frame is searched (with what was held back of the last) and the
/// body stopped before a credential leaves.
pub(super) struct Screen {
    pub secrets: Arc<Secrets>,
    pub origin: Origin,
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "s3cr3t-t0ken/with+odd=chars";

    fn secrets() -> Secrets {
        let bound = ["https://api.example.org".parse().unwrap()];
        Secrets::new(
            [Known {
                name: "api",
                bound: &bound,
                secret: SECRET,
            }]
            .into_iter(),
        )
        .unwrap()
    }

    #[test]
    fn every_form_of_a_secret_is_masked() {
        use base64::engine::general_purpose::{STANDARD, URL_SAFE};
        let s = secrets();
        let mask = "[REDACTED: credential api]";
        let encoded_url: String =
            percent_encoding::utf8_percent_encode(SECRET, percent_encoding::NON_ALPHANUMERIC)
                .to_string();
        for text in [
            format!("token: {SECRET}!"),
            format!("q={encoded_url}&x=1"),
            format!("q={}", lowercase_escapes(&encoded_url)),
            format!("hex {}", hex::encode(SECRET)),
            format!("\"{}\"", serde_json::to_string(SECRET).unwrap()),
        ] {
            let masked = s.mask_str(&text).unwrap_or_else(|| panic!("{text}"));
            assert!(
                masked.contains(mask) && !masked.contains(SECRET),
                "{masked}"
            );
        }
        // Base64 of a longer text holding the secret at any offset.
        for lead in ["", "a", "ab", "Authorization: Bearer "] {
            for engine in [&STANDARD, &URL_SAFE] {
                let encoded = engine.encode(format!("{lead}{SECRET} and more"));
                let masked = s
                    .mask_str(&encoded)
                    .unwrap_or_else(|| panic!("{lead:?} {encoded}"));
                assert!(masked.contains(mask), "{masked}");
            }
        }
        assert_eq!(s.mask_str("nothing here"), None);
        let value = serde_json::json!({ "a": [format!("x{SECRET}")], SECRET: 1 });
        let masked = s.mask_value(&value).unwrap().to_string();
        assert!(
            !masked.contains(SECRET) && masked.contains(mask),
            "{masked}"
        );
    }

    #[test]
    fn a_secret_is_carried_only_where_it_is_not_bound() {
        let s = secrets();
        let bound: Origin =
            Origin::of_url(&url::Url::parse("https://api.example.org/").unwrap()).unwrap();
        let other: Origin =
            Origin::of_url(&url::Url::parse("https://evil.example/").unwrap()).unwrap();
        let body = format!("x={SECRET}");
        assert_eq!(s.carried(body.as_bytes(), &bound), None);
        assert_eq!(s.carried(body.as_bytes(), &other).as_deref(), Some("api"));
        assert!(s.foreign_to(&other) && !s.foreign_to(&bound));
    }

    #[test]
    fn masking_keeps_text_whole_around_multibyte_characters() {
        let bound = ["https://a.org".parse().unwrap()];
        let s = Secrets::new(
            [Known {
                name: "k",
                bound: &bound,
                secret: "é-secret-é",
            }]
            .into_iter(),
        )
        .unwrap();
        let text = format!("<{}>", hex::encode("é-secret-é"));
        assert!(s.mask_str(&text).is_some());
        assert_eq!(
            s.mask_str("ab é-secret-é cd").as_deref(),
            Some("ab [REDACTED: credential k] cd")
        );
    }
}
