//! The first pipeline step: a call's arguments as they arrived
//! ([`RawArgs`]) become [`Arguments`], materialized once: parsed (unless the
//! front end already did), bounded in size before any parsing
//! ([`MAX_ARGS_BYTES`]), canonicalized (sorted keys, no insignificant white
//! space) and digested with SHA-256. The canonical text is what the plugin
//! receives and what approvals and duplicate detection bind to.
//!
//! It knows nothing of tools or schemas; the registry and validation come
//! after it.

use crate::call::{MAX_ARGS_BYTES, RawArgs};
use crate::outcome::{CallError, ErrorCode};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::sync::Arc;

/// Lower-case hex of a SHA-256, written on the stack so that the shared
/// text is the only allocation.
fn shared_hex(digest: &[u8]) -> Arc<str> {
    let mut text = [0u8; 64];
    let written = hex::encode_to_slice(digest, &mut text)
        .ok()
        .and_then(|()| std::str::from_utf8(&text).ok());
    match written {
        Some(text) => Arc::from(text),
        // Not 32 bytes: no stack buffer fits, so the plain way.
        None => Arc::from(hex::encode(digest)),
    }
}

/// Arguments after materialization: parsed, canonical, digested.
#[derive(Clone, Debug)]
pub struct Arguments {
    /// Shared with the audit record of the call, which must not cost a copy.
    value: Arc<Value>,
    canonical: String,
    /// Shared with the audit record, the budget ledger and the execution row.
    digest: Arc<str>,
}

impl Arguments {
    /// Parses argument text into an object and computes its canonical form.
    pub fn materialize(text: &str) -> Result<Self, CallError> {
        Arguments::canonicalize(Arc::new(parse(text)?))
    }

    /// Materializes arguments however they came: text is parsed, an object
    /// already parsed is taken as it is.
    pub fn from_raw(raw: &RawArgs) -> Result<Self, CallError> {
        match raw {
            RawArgs::Text(text) => Arguments::materialize(text),
            RawArgs::Object(value) => Arguments::canonicalize(Arc::clone(value)),
        }
    }

    /// Materializes a value a step derived from the call's arguments (the
    /// path step's resolved paths): the same bounds, a fresh canonical form
    /// and digest.
    pub(crate) fn from_value(value: Arc<Value>) -> Result<Self, CallError> {
        Arguments::canonicalize(value)
    }

    fn canonicalize(value: Arc<Value>) -> Result<Self, CallError> {
        if !value.is_object() {
            return Err(CallError::new(
                ErrorCode::InvalidArgs,
                "the arguments must be a JSON object, e.g. {\"path\": \"README.md\"}",
            ));
        }
        // serde_json's map keeps keys sorted, so its compact form is
        // canonical.
        let canonical = serde_json::to_string(&*value).map_err(|e| {
            CallError::new(
                ErrorCode::InvalidArgs,
                format!("the arguments cannot be written back as JSON: {e}"),
            )
        })?;
        // Text is measured before parsing; an object that came parsed is
        // measured here, so the bound holds whichever way arguments come.
        if canonical.len() > MAX_ARGS_BYTES {
            return Err(too_big(canonical.len()));
        }
        let digest = shared_hex(&Sha256::digest(canonical.as_bytes()));
        Ok(Arguments {
            value,
            canonical,
            digest,
        })
    }

    pub fn value(&self) -> &Value {
        &self.value
    }

    /// The parsed arguments, shared.
    pub fn shared_value(&self) -> Arc<Value> {
        Arc::clone(&self.value)
    }

    /// Sorted keys, no white space: the text the plugin receives.
    pub fn canonical(&self) -> &str {
        &self.canonical
    }

    /// SHA-256 of the canonical text, hex.
    pub fn digest(&self) -> &str {
        &self.digest
    }

    /// The digest, shared.
    pub fn shared_digest(&self) -> Arc<str> {
        Arc::clone(&self.digest)
    }
}

fn too_big(bytes: usize) -> CallError {
    CallError::new(
        ErrorCode::InvalidArgs,
        format!("the arguments are {bytes} bytes; at most {MAX_ARGS_BYTES} are accepted"),
    )
}

/// Argument text as a JSON value; the size bound comes before any parsing.
fn parse(text: &str) -> Result<Value, CallError> {
    if text.len() > MAX_ARGS_BYTES {
        return Err(too_big(text.len()));
    }
    serde_json::from_str(if text.trim().is_empty() { "{}" } else { text }).map_err(|e| {
        CallError::new(
            ErrorCode::InvalidArgs,
            format!("the arguments are not valid JSON: {e}"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_form_ignores_key_order_and_space() {
        let a = Arguments::materialize(r#"{ "b": 1, "a": [1, 2] }"#).unwrap();
        let b = Arguments::materialize(r#"{"a":[1,2],"b":1}"#).unwrap();
        assert_eq!(a.canonical(), r#"{"a":[1,2],"b":1}"#);
        assert_eq!(a.digest(), b.digest());
    }

    #[test]
    fn arguments_that_came_parsed_bind_like_the_same_text() {
        let text = Arguments::materialize(r#"{ "b": 1, "a": {"z": null, "y": "é"} }"#).unwrap();
        let Value::Object(object) = serde_json::json!({"a": {"y": "é", "z": null}, "b": 1}) else {
            unreachable!()
        };
        let parsed = Arguments::from_raw(&RawArgs::from(object)).unwrap();
        assert_eq!(parsed.canonical(), text.canonical());
        assert_eq!(parsed.digest(), text.digest());
    }

    #[test]
    fn parsed_arguments_meet_the_same_bounds_as_text() {
        let not_object = RawArgs::Object(Arc::new(serde_json::json!([1, 2])));
        assert_eq!(
            Arguments::from_raw(&not_object).unwrap_err().code,
            ErrorCode::InvalidArgs
        );
        let mut huge = serde_json::Map::new();
        huge.insert("text".into(), Value::String("x".repeat(MAX_ARGS_BYTES)));
        let err = Arguments::from_raw(&RawArgs::from(huge)).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidArgs);
        assert!(err.message.contains("at most"), "{}", err.message);
    }

    #[test]
    fn empty_text_means_no_arguments() {
        assert_eq!(Arguments::materialize("  ").unwrap().canonical(), "{}");
    }

    #[test]
    fn non_objects_and_bad_json_are_invalid_args() {
        for text in ["[1]", "\"x\"", "{", "{\"a\":}"] {
            let err = Arguments::materialize(text).unwrap_err();
            assert_eq!(err.code, ErrorCode::InvalidArgs, "{text}");
        }
    }

    #[test]
    fn deeply_nested_json_is_refused_not_a_stack_overflow() {
        let bomb = format!("{{\"a\":{}{}}}", "[".repeat(100_000), "]".repeat(100_000));
        assert_eq!(
            Arguments::materialize(&bomb).unwrap_err().code,
            ErrorCode::InvalidArgs
        );
    }
}
