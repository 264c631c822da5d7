//! What one audit record says happened to a call: the event kinds, whose
//! call it was, and how free text a plugin wrote becomes a safe record.

use crate::outcome::{ErrorCode, Status};
use serde::Serialize;
use serde_json::Value;
use std::sync::Arc;

/// One thing that happened to a call.
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Event {
    /// The call as materialized (arguments redacted) and its digest.
    Call {
        args: Arc<Value>,
        args_digest: Arc<str>,
        /// The tool set the session declared, if any.
        #[serde(skip_serializing_if = "Option::is_none")]
        profile: Option<Arc<str>>,
        /// The model turn it came in, if it came in a batch.
        #[serde(skip_serializing_if = "Option::is_none")]
        turn: Option<Arc<str>>,
        /// The call whose tool made this one through `compose`.
        #[serde(skip_serializing_if = "Option::is_none")]
        parent: Option<Arc<str>>,
        /// The agent's call at the top of its tree.
        #[serde(skip_serializing_if = "Option::is_none")]
        root: Option<Arc<str>>,
        /// Who made it (a nested call: who made the call at the top).
        #[serde(skip_serializing_if = "Option::is_none")]
        caller: Option<Arc<crate::caller::Caller>>,
    },
    /// Path arguments that lead somewhere other than they read, and URL
    /// arguments with their canonical form: the plugin receives the
    /// rewritten arguments, whose digest this is.
    Paths {
        paths: Vec<crate::workspace::LocatedPath>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        uris: Vec<crate::workspace::LocatedUri>,
        args_digest: Arc<str>,
    },
    /// What the policy decided.
    Policy {
        verdict: crate::policy::Verdict,
        matched_rules: crate::policy::RuleNumbers,
        reason: Arc<str>,
    },
    /// The call stopped before running (unknown tool, invalid arguments,
    /// policy or guard denial, approval problem).
    Refused {
        code: ErrorCode,
        message: String,
    },
    ApprovalAsked {
        approval_id: String,
        expires_ms: i64,
    },
    ApprovalDecided {
        approval_id: String,
        approved: bool,
        reason: Option<String>,
        /// Where the person decided (`cli`, `terminal`, `mcp`, `console`).
        by: &'static str,
        /// Who decided, as far as that channel proved it.
        approver: crate::caller::Caller,
    },
    /// A person approved a call that needs more approvers than have
    /// approved so far: it still waits.
    ApprovalCounted {
        approval_id: String,
        by: &'static str,
        approver: crate::caller::Caller,
        /// How many more distinct people must approve.
        awaiting: i64,
    },
    ApprovalConsumed {
        approval_id: String,
    },
    /// One HTTP request the plugin sent or tried to send: method, origin,
    /// path (query values redacted), decision, status, bytes each way.
    Request(crate::egress::RequestRecord),
    /// A keyed call answered with the output a call under the same key
    /// recorded: nothing ran.
    Replayed {
        key: String,
        original_call_id: String,
    },
    /// An attempt that failed and was run again (`[retry]`).
    Retried(crate::sandbox::Retried),
    /// A question the tool asked a person (`ask`) and the answer it got
    /// (its content redacted like arguments), or none: the call stopped
    /// to ask it.
    Question(crate::question::Asked),
    /// The plugin's tools the call offered again or withdrew (`changes`).
    ToolsOffered(crate::changes::Reoffer),
    /// How the execution ended.
    Outcome {
        status: Status,
        code: Option<ErrorCode>,
        message: Option<String>,
        duration_us: u64,
        fuel_used: Option<u64>,
        output_bytes: usize,
        value: Option<Value>,
        /// The content blocks beside the value: kind, MIME type and size,
        /// never their bytes.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        content: Vec<crate::content::BlockSummary>,
        /// The plugin build the call ran on: its SHA-256 and the key that
        /// signed it, if any.
        #[serde(skip_serializing_if = "Option::is_none")]
        plugin: Option<RanOn>,
    },
}

/// The plugin build a call ran on, recorded as its SHA-256 and signer
/// (held as the plugin itself: a call's trail copies nothing for it).
#[derive(Clone, Debug)]
pub struct RanOn(pub Arc<crate::registry::Plugin>);

impl Serialize for RanOn {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("sha256", self.0.sha256())?;
        if let Some(signer) = self.0.signer() {
            map.serialize_entry("signer", signer)?;
        }
        map.end()
    }
}

impl From<crate::approval::ApprovalStep> for Event {
    fn from(step: crate::approval::ApprovalStep) -> Event {
        use crate::approval::ApprovalStep;
        match step {
            ApprovalStep::Asked {
                approval_id,
                expires_ms,
            } => Event::ApprovalAsked {
                approval_id,
                expires_ms,
            },
            ApprovalStep::Consumed { approval_id } => Event::ApprovalConsumed { approval_id },
        }
    }
}

impl Event {
    /// The policy's decision, as recorded.
    pub fn policy(decision: &crate::policy::Decision) -> Event {
        Event::Policy {
            verdict: decision.verdict,
            matched_rules: decision.matched.clone(),
            reason: decision.reason.clone(),
        }
    }

    pub(super) fn kind(&self) -> &'static str {
        match self {
            Event::Call { .. } => "call",
            Event::Paths { .. } => "paths",
            Event::Policy { .. } => "policy",
            Event::Refused { .. } => "refused",
            Event::ApprovalAsked { .. } => "approval_asked",
            Event::ApprovalDecided { .. } => "approval_decided",
            Event::ApprovalCounted { .. } => "approval_counted",
            Event::ApprovalConsumed { .. } => "approval_consumed",
            Event::Request(_) => "request",
            Event::Retried(_) => "retried",
            Event::Question(_) => "question",
            Event::ToolsOffered(_) => "tools_offered",
            Event::Replayed { .. } => "replayed",
            Event::Outcome { .. } => "outcome",
        }
    }
}

/// Which call the events belong to. Its texts are shared with the request
/// and with every row written for it.
#[derive(Clone, Debug)]
pub struct Subject {
    pub call_id: Arc<str>,
    pub session: Arc<str>,
    pub tool: Arc<str>,
}

impl Subject {
    pub fn of(request: &crate::call::CallRequest) -> Subject {
        Subject {
            call_id: recordable(request.call_id.shared()),
            session: recordable(request.session.shared()),
            tool: recordable(Arc::from(request.tool.as_str())),
        }
    }
}

/// `text` as a record can keep it: PostgreSQL's `text` holds no NUL, so a
/// NUL a client slipped into a name (of a tool that does not exist, say)
/// is kept as U+FFFD. Kept as it came, it would make every commit of the
/// shared trail fail, and the writer retries a failed commit's records, so
/// the host would refuse every call after it.
pub(super) fn recordable(text: Arc<str>) -> Arc<str> {
    if text.contains('\0') {
        Arc::from(text.replace('\0', "\u{FFFD}"))
    } else {
        text
    }
}
