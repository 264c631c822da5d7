//! Plain values every step shares: who is calling what, with which arguments.
//!
//! A [`CallRequest`] is what arrives from an agent (CLI, MCP, library). The
//! controller materializes it once: the arguments are parsed (unless the
//! front end already did, see [`RawArgs`]), canonicalized (sorted keys, no
//! insignificant white space) and digested with SHA-256. The canonical text
//! is what the plugin receives and what approvals and duplicate detection
//! bind to, so it is computed exactly once per call.

use crate::outcome::{CallError, ErrorCode};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::fmt;
use std::sync::Arc;

/// Largest argument text accepted. Bounds parsing cost and memory before any
/// schema is consulted; the biggest honest argument (a file written by
/// `write_file`) is well under it.
pub const MAX_ARGS_BYTES: usize = 4 << 20;

/// A fresh uuid v7 (time-ordered), in its hyphenated form, allocated once.
/// The id is cloned into every step and record of a call, so it is shared
/// rather than copied.
fn fresh_id() -> Arc<str> {
    let mut text = uuid::Uuid::encode_buffer();
    Arc::from(&*uuid::Uuid::now_v7().hyphenated().encode_lower(&mut text))
}

/// Unique id of one call, kept through every step and in every result.
/// Cloning it is cheap: the text is shared.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CallId(Arc<str>);

impl CallId {
    /// A fresh, time-ordered id.
    pub fn new() -> Self {
        CallId(fresh_id())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The id's text, shared.
    pub fn shared(&self) -> Arc<str> {
        Arc::clone(&self.0)
    }
}

impl Default for CallId {
    fn default() -> Self {
        Self::new()
    }
}

impl From<String> for CallId {
    fn from(id: String) -> Self {
        CallId(Arc::from(id))
    }
}

impl fmt::Display for CallId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The agent session a call belongs to. Cloning it is cheap: the text is
/// shared.
#[derive(Clone, Debug)]
pub struct SessionId {
    id: Arc<str>,
    /// Made by [`SessionId::new`] in this process, so it has no history
    /// anywhere yet: budgets need not look it up.
    minted: bool,
}

impl SessionId {
    /// A fresh session id, for callers that did not name one.
    pub fn new() -> Self {
        SessionId {
            id: fresh_id(),
            minted: true,
        }
    }

    pub fn as_str(&self) -> &str {
        &self.id
    }

    /// The id's text, shared.
    pub fn shared(&self) -> Arc<str> {
        Arc::clone(&self.id)
    }

    /// Whether this process made the id (rather than a caller naming it).
    pub fn is_new(&self) -> bool {
        self.minted
    }
}

impl PartialEq for SessionId {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
    }
}

impl Eq for SessionId {}

impl std::hash::Hash for SessionId {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.id.hash(state);
    }
}

impl Default for SessionId {
    fn default() -> Self {
        Self::new()
    }
}

impl From<String> for SessionId {
    fn from(id: String) -> Self {
        SessionId {
            id: Arc::from(id),
            minted: false,
        }
    }
}

/// Lets another task stop a call. Cloning shares the token.
pub use tokio_util::sync::CancellationToken as CancelToken;

/// One `progress` report from a plugin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Progress {
    pub done: u64,
    pub total: Option<u64>,
    pub message: Option<String>,
}

/// Receives a call's progress reports (e.g. to forward them to an MCP client).
#[derive(Clone)]
pub struct ProgressSink(Arc<dyn Fn(Progress) + Send + Sync>);

impl ProgressSink {
    pub fn new(f: impl Fn(Progress) + Send + Sync + 'static) -> Self {
        ProgressSink(Arc::new(f))
    }

    pub fn report(&self, progress: Progress) {
        (self.0)(progress)
    }
}

impl fmt::Debug for ProgressSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ProgressSink")
    }
}

/// One tool call as an agent asked for it.
#[derive(Clone, Debug)]
pub struct CallRequest {
    pub call_id: CallId,
    pub session: SessionId,
    pub tool: String,
    /// The arguments exactly as received.
    pub args: RawArgs,
    pub cancel: CancelToken,
    pub progress: Option<ProgressSink>,
    /// An approval id to consume, when the policy asks for one.
    pub approval: Option<String>,
    pub tracing: Tracing,
}

/// Whether a call records each pipeline step in its result.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Tracing {
    #[default]
    Off,
    /// Every step with its outcome and duration (`toolwarden call --trace`).
    Steps,
}

impl CallRequest {
    /// A call with a fresh id, in a fresh session.
    pub fn new(tool: impl Into<String>, args: impl Into<RawArgs>) -> Self {
        CallRequest {
            call_id: CallId::new(),
            session: SessionId::new(),
            tool: tool.into(),
            args: args.into(),
            cancel: CancelToken::default(),
            progress: None,
            approval: None,
            tracing: Tracing::Off,
        }
    }

    pub fn in_session(mut self, session: SessionId) -> Self {
        self.session = session;
        self
    }

    /// Consumes approval `id` if the policy asks for one.
    pub fn with_approval(mut self, id: impl Into<String>) -> Self {
        self.approval = Some(id.into());
        self
    }
}

/// A call's arguments as they arrived, before materialization.
#[derive(Clone, Debug)]
pub enum RawArgs {
    /// JSON text (the CLI, a library caller). Empty text means no arguments.
    Text(String),
    /// An object a front end has already parsed (MCP: the SDK parses the
    /// whole request), taken as it is rather than written out as text only
    /// to be parsed again. Shared, so that a retried request costs no copy.
    Object(Arc<Value>),
}

impl From<String> for RawArgs {
    fn from(text: String) -> Self {
        RawArgs::Text(text)
    }
}

impl From<&str> for RawArgs {
    fn from(text: &str) -> Self {
        RawArgs::Text(text.to_owned())
    }
}

impl From<&String> for RawArgs {
    fn from(text: &String) -> Self {
        RawArgs::Text(text.clone())
    }
}

impl From<serde_json::Map<String, Value>> for RawArgs {
    fn from(object: serde_json::Map<String, Value>) -> Self {
        RawArgs::Object(Arc::new(Value::Object(object)))
    }
}

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
