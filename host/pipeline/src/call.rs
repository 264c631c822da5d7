//! Plain values every step shares: who is calling what, with which arguments.
//!
//! A [`CallRequest`] is what arrives from an agent (CLI, MCP, library); its
//! arguments stay [`RawArgs`] until the materialize step turns them into
//! the canonical, digested form every later step uses.

use serde_json::Value;
use std::fmt;
use std::sync::Arc;

/// Largest argument text accepted. Bounds parsing cost and memory before any
/// schema is consulted; the biggest honest argument (a file written by
/// `write_file`) is well under it.
pub const MAX_ARGS_BYTES: usize = 4 << 20;

/// A fresh uuid v7 (time-ordered), in its hyphenated form, allocated once.
/// The id is cloned into every step and record of a call, so it is shared
/// rather than copied.
pub(crate) fn fresh_id() -> Arc<str> {
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

/// Longest session name a caller may give.
pub const MAX_SESSION_NAME: usize = 128;

impl SessionId {
    /// Whether `name` may name a session where a caller gives one (an MCP
    /// request's `_meta`, `--session`): 1 to [`MAX_SESSION_NAME`] letters,
    /// digits, `.`, `_`, `:` or `-`, so it cannot smuggle anything into the
    /// logs, the audit or a listing that shows it.
    pub fn is_valid_name(name: &str) -> bool {
        !name.is_empty()
            && name.len() <= MAX_SESSION_NAME
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._:-".contains(&b))
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

/// Written as its text; read back as an id named elsewhere (it has a
/// history), like [`SessionId::from`].
impl serde::Serialize for SessionId {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.id)
    }
}

impl<'de> serde::Deserialize<'de> for SessionId {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(SessionId::from)
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

/// How severe a plugin's log line is, whatever contract it speaks; in
/// order, least severe first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    Trace,
    Debug,
    Info,
    Warn,
    Error,
}

/// One line a plugin logged during a call, as the host passes it on: cut
/// to what is left of the call's log budget, credentials masked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogLine {
    /// The tool that logged it: the call's, or a tool it called through
    /// `compose` (each child call has a log budget of its own).
    pub tool: Arc<str>,
    pub level: LogLevel,
    pub text: String,
}

/// Receives what a running call reports (e.g. to forward it to an MCP
/// client). It must not block: it is called from inside the sandbox.
pub struct Sink<T>(Arc<dyn Fn(T) + Send + Sync>);

impl<T> Sink<T> {
    pub fn new(f: impl Fn(T) + Send + Sync + 'static) -> Self {
        Sink(Arc::new(f))
    }

    pub fn report(&self, item: T) {
        (self.0)(item)
    }
}

impl<T> Clone for Sink<T> {
    fn clone(&self) -> Self {
        Sink(Arc::clone(&self.0))
    }
}

impl<T> fmt::Debug for Sink<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Sink")
    }
}

/// Receives a call's progress reports.
pub type ProgressSink = Sink<Progress>;

/// Receives a call's log lines.
pub type LogSink = Sink<LogLine>;

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
    /// Where the plugin's log lines go besides the host's own log, and
    /// those of the tools it calls through `compose`.
    pub log: Option<LogSink>,
    /// An approval id to consume, when the policy asks for one.
    pub approval: Option<String>,
    /// Answers to the questions the tool asks (`ask`), by key: a call that
    /// ended `INPUT_REQUIRED` is made again with the answer added.
    pub answers: crate::question::Answers,
    /// The tool set (`[profile.NAME]`) the session declared; none: every tool.
    pub profile: Option<Arc<str>>,
    /// The model turn the call belongs to, when it came in a batch
    /// (`handle_batch` gives each batch one): for `audit stats`.
    pub turn: Option<Arc<str>>,
    /// Who made the call, as far as its channel proved it (an access
    /// token over HTTP); recorded with the call.
    pub caller: Option<Arc<crate::caller::Caller>>,
    pub tracing: Tracing,
    /// Where the call sits in a tree of calls, when a tool made it through
    /// `compose`. Only the host sets it: an agent's call is never nested.
    pub(crate) lineage: Option<Arc<Lineage>>,
}

/// Where a nested call sits: made by the host for a call a tool made
/// through the `compose` import, never by an agent.
#[derive(Clone, Debug)]
pub struct Lineage {
    pub parent_call_id: CallId,
    pub root_call_id: CallId,
    /// The tools from the root call down to the parent, in order.
    pub path: Vec<Arc<str>>,
    /// 1 for a child of a call an agent made.
    pub depth: u32,
    /// The call is its parent's n-th child (from 1).
    pub sibling: u32,
}

impl Lineage {
    /// The tool that made the call.
    pub fn parent_tool(&self) -> &str {
        self.path.last().map_or("", |tool| tool)
    }
}

/// What a child call gave back to the tool that made it.
#[derive(Debug)]
pub struct ChildOutput {
    pub call_id: String,
    /// The value as JSON text.
    pub value: String,
    /// What the model would be shown for it.
    pub text: String,
}

/// Why a child call did not succeed: the code an agent's call would get.
#[derive(Debug)]
pub struct ChildError {
    pub call_id: String,
    pub code: &'static str,
    pub message: String,
}

/// Lets a running tool call other tools (the `compose` import). The
/// controller makes one for each call and lends it to the sandbox, which
/// never looks inside: every child goes back through the whole pipeline.
pub trait ChildCalls: Send + Sync + fmt::Debug {
    fn call(
        &self,
        tool: String,
        args: String,
    ) -> futures::future::BoxFuture<'static, Result<ChildOutput, ChildError>>;
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
            log: None,
            approval: None,
            answers: Default::default(),
            profile: None,
            turn: None,
            caller: None,
            tracing: Tracing::Off,
            lineage: None,
        }
    }

    pub fn in_session(mut self, session: SessionId) -> Self {
        self.session = session;
        self
    }

    /// Who asks for the call, as one text two askers share only if they
    /// are the same: what its channel proved (see
    /// `crate::caller::Caller::identity`), else the OS user this process
    /// runs as (stdio, the CLI and the library run as whoever started
    /// them). What approvals record as the caller and rate limits count.
    pub fn who_asks(&self) -> String {
        crate::caller::Caller::identity_of(self.caller.as_deref())
    }

    /// Sees and calls only the tools of profile `name`.
    pub fn with_profile(mut self, name: impl Into<Arc<str>>) -> Self {
        self.profile = Some(name.into());
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
