//! What a call comes back with: a [`CallResult`] with a [`Status`] and, when
//! it did not succeed, a [`CallError`] with a stable [`ErrorCode`].
//!
//! Every call ends in a `CallResult`, whatever happened: callers never need to
//! tell a host fault from a denial by parsing text. Host-level failures that
//! are not about one call (a bad config, a plugin that will not load) are
//! [`crate::Error`] instead.

use serde::Serialize;
use std::fmt;

/// Stable machine codes for call outcomes. A released code never changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ErrorCode {
    /// No tool by that name is registered.
    UnknownTool,
    /// The arguments are not JSON, not an object, or break the input schema.
    InvalidArgs,
    /// The policy denied the call (explicitly or by default).
    PolicyDenied,
    /// The policy asked for approval and nobody can give it.
    ApprovalUnavailable,
    /// The policy asks for a person's approval: one is pending (its id is in
    /// the result); nothing ran.
    ApprovalRequired,
    /// The approval given does not fit this call, or was already used.
    ApprovalInvalid,
    /// The approval given expired.
    ApprovalExpired,
    /// The approval given was denied by a person.
    ApprovalDenied,
    /// A guard refused the call (path outside the workspace, sandbox mode).
    GuardDenied,
    /// The session used up a budget (calls, calls of this tool, run time).
    BudgetExceeded,
    /// The same call with effects already ran in this session.
    DuplicateCall,
    /// The tool returned its own expected error.
    ToolFailed,
    /// The plugin trapped or panicked: a defect in the plugin.
    ToolCrashed,
    /// The call ran past its wall-clock deadline.
    Timeout,
    /// The call used up its fuel (CPU budget).
    OutOfFuel,
    /// The call tried to use more memory than allowed.
    MemoryLimit,
    /// The call was cancelled by its caller.
    Cancelled,
    /// The output is bigger than the configured cap.
    OutputTooLarge,
    /// The output is not JSON or breaks the tool's output schema.
    InvalidToolOutput,
    /// The host could not run the call (a host fault, not the plugin's).
    HostError,
    /// The tool needs a credential the config does not define.
    CredentialMissing,
    /// A tool's call of another tool would nest deeper, or make more
    /// children, than `[compose]` allows; the child did not run.
    NestingLimit,
    /// A tool's call of another tool would reach a tool already running
    /// in the same tree (a cycle); the child did not run.
    CallCycle,
    /// The call named a session another caller owns; nothing of that
    /// session was touched.
    SessionNotYours,
    /// The caller made as many calls of the tool as a `[[rate_limit]]`
    /// allows in its window; nothing ran. The message says when the next
    /// one may.
    RateLimited,
    /// The tool asked the person a question (the `ask` import) that nobody
    /// has answered yet: the question is in the result; the call stopped
    /// there and runs again from the start once it has an answer.
    InputRequired,
}

impl ErrorCode {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::UnknownTool => "UNKNOWN_TOOL",
            ErrorCode::InvalidArgs => "INVALID_ARGS",
            ErrorCode::PolicyDenied => "POLICY_DENIED",
            ErrorCode::ApprovalUnavailable => "APPROVAL_UNAVAILABLE",
            ErrorCode::ApprovalRequired => "APPROVAL_REQUIRED",
            ErrorCode::ApprovalInvalid => "APPROVAL_INVALID",
            ErrorCode::ApprovalExpired => "APPROVAL_EXPIRED",
            ErrorCode::ApprovalDenied => "APPROVAL_DENIED",
            ErrorCode::GuardDenied => "GUARD_DENIED",
            ErrorCode::BudgetExceeded => "BUDGET_EXCEEDED",
            ErrorCode::DuplicateCall => "DUPLICATE_CALL",
            ErrorCode::ToolFailed => "TOOL_FAILED",
            ErrorCode::ToolCrashed => "TOOL_CRASHED",
            ErrorCode::Timeout => "TIMEOUT",
            ErrorCode::OutOfFuel => "OUT_OF_FUEL",
            ErrorCode::MemoryLimit => "MEMORY_LIMIT",
            ErrorCode::Cancelled => "CANCELLED",
            ErrorCode::OutputTooLarge => "OUTPUT_TOO_LARGE",
            ErrorCode::InvalidToolOutput => "INVALID_TOOL_OUTPUT",
            ErrorCode::HostError => "HOST_ERROR",
            ErrorCode::CredentialMissing => "CREDENTIAL_MISSING",
            ErrorCode::NestingLimit => "NESTING_LIMIT",
            ErrorCode::CallCycle => "CALL_CYCLE",
            ErrorCode::SessionNotYours => "SESSION_NOT_YOURS",
            ErrorCode::InputRequired => "INPUT_REQUIRED",
            ErrorCode::RateLimited => "RATE_LIMITED",
        }
    }

    /// The status a result with this error has.
    pub fn status(self) -> Status {
        match self {
            ErrorCode::PolicyDenied
            | ErrorCode::GuardDenied
            | ErrorCode::BudgetExceeded
            | ErrorCode::DuplicateCall
            | ErrorCode::ApprovalInvalid
            | ErrorCode::ApprovalExpired
            | ErrorCode::ApprovalDenied
            | ErrorCode::CredentialMissing
            | ErrorCode::NestingLimit
            | ErrorCode::CallCycle
            | ErrorCode::SessionNotYours
            | ErrorCode::RateLimited => Status::Denied,
            ErrorCode::ApprovalUnavailable | ErrorCode::ApprovalRequired => Status::PendingApproval,
            ErrorCode::UnknownTool
            | ErrorCode::InvalidArgs
            | ErrorCode::ToolFailed
            | ErrorCode::ToolCrashed
            | ErrorCode::Timeout
            | ErrorCode::OutOfFuel
            | ErrorCode::MemoryLimit
            | ErrorCode::Cancelled
            | ErrorCode::OutputTooLarge
            | ErrorCode::InvalidToolOutput
            | ErrorCode::HostError
            | ErrorCode::InputRequired => Status::Error,
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a call did not produce a value.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CallError {
    pub code: ErrorCode,
    /// What happened, in words a model or a person can act on.
    pub message: String,
    /// The approval this error concerns, if any.
    #[serde(skip)]
    pub approval_id: Option<String>,
    /// The questions the call stopped at (`INPUT_REQUIRED`).
    #[serde(skip)]
    pub questions: Vec<crate::question::Question>,
}

impl CallError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        CallError {
            code,
            message: message.into(),
            approval_id: None,
            questions: Vec::new(),
        }
    }

    pub fn with_approval(mut self, id: String) -> Self {
        self.approval_id = Some(id);
        self
    }

    /// An `INPUT_REQUIRED` stop at `questions` (at least one).
    pub fn asking(questions: Vec<crate::question::Question>) -> Self {
        let message = match questions.as_slice() {
            [question] => format!(
                "the tool asks a person (question `{}`): {}; the call stopped there and runs \
                 again from the start once the question is answered",
                question.key, question.message
            ),
            many => format!(
                "the tool asks a person {} questions at once ({}); the call stopped there and \
                 runs again from the start once every one is answered",
                many.len(),
                many.iter()
                    .map(|q| format!("`{}`: {}", q.key, q.message))
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
        };
        let mut error = CallError::new(ErrorCode::InputRequired, message);
        error.questions = questions;
        error
    }
}

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

/// How a call ended, in one word.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Ok,
    Error,
    Denied,
    PendingApproval,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Error => "error",
            Status::Denied => "denied",
            Status::PendingApproval => "pending_approval",
        }
    }
}

/// One pipeline step of a traced call.
#[derive(Clone, Debug, Serialize)]
pub struct TraceStep {
    pub step: &'static str,
    /// Microseconds the step took.
    pub us: u64,
    pub outcome: String,
}

/// The final, frozen result of one call.
#[derive(Clone, Debug, Serialize)]
pub struct CallResult {
    pub call_id: String,
    pub tool: String,
    pub status: Status,
    /// The canonical value (checked against the output schema) on success.
    pub value: Option<serde_json::Value>,
    /// Model-facing text on success.
    pub content: Option<String>,
    /// Content blocks after the text (images, audio, resources), on success.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub blocks: Vec<crate::content::Block>,
    pub error: Option<CallError>,
    pub approval_id: Option<String>,
    /// The questions the call stopped at (`INPUT_REQUIRED`): ask them, put
    /// the answers in [`crate::CallRequest::answers`] and make the call
    /// again.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub questions: Vec<crate::question::Question>,
    pub duration_us: u64,
    /// Each pipeline step with what it found and how long it took, when the
    /// request asked for a trace.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub trace: Vec<TraceStep>,
    /// Fuel the guest consumed; `None` if nothing ran, or the call was
    /// stopped (timeout, cancellation) and the count is not reliable.
    pub fuel_used: Option<u64>,
    /// The call whose recorded output answered this one: a repeat of a
    /// keyed call, which ran nothing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replayed_from: Option<String>,
    /// The calls the tool made through `compose`, in the order it made
    /// them; each has an audit trail of its own.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<ChildCall>,
}

/// One call a tool made through `compose`, as its parent's result lists it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ChildCall {
    pub call_id: String,
    pub tool: String,
    pub status: Status,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<ErrorCode>,
}

impl CallResult {
    pub fn is_ok(&self) -> bool {
        self.status == Status::Ok
    }

    /// The error code, if the call did not succeed.
    pub fn code(&self) -> Option<ErrorCode> {
        self.error.as_ref().map(|e| e.code)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Codes are a public contract: this list may grow, never change.
    #[test]
    fn error_codes_are_stable() {
        let all = [
            ErrorCode::UnknownTool,
            ErrorCode::InvalidArgs,
            ErrorCode::PolicyDenied,
            ErrorCode::ApprovalUnavailable,
            ErrorCode::ApprovalRequired,
            ErrorCode::ApprovalInvalid,
            ErrorCode::ApprovalExpired,
            ErrorCode::ApprovalDenied,
            ErrorCode::GuardDenied,
            ErrorCode::BudgetExceeded,
            ErrorCode::DuplicateCall,
            ErrorCode::ToolFailed,
            ErrorCode::ToolCrashed,
            ErrorCode::Timeout,
            ErrorCode::OutOfFuel,
            ErrorCode::MemoryLimit,
            ErrorCode::Cancelled,
            ErrorCode::OutputTooLarge,
            ErrorCode::InvalidToolOutput,
            ErrorCode::HostError,
            ErrorCode::CredentialMissing,
            ErrorCode::NestingLimit,
            ErrorCode::CallCycle,
            ErrorCode::InputRequired,
            ErrorCode::SessionNotYours,
            ErrorCode::RateLimited,
        ];
        // A new code does not compile here until it has the next position
        // in `all` (and its spelling in the snapshot below).
        let position = |code: ErrorCode| match code {
            ErrorCode::UnknownTool => 0,
            ErrorCode::InvalidArgs => 1,
            ErrorCode::PolicyDenied => 2,
            ErrorCode::ApprovalUnavailable => 3,
            ErrorCode::ApprovalRequired => 4,
            ErrorCode::ApprovalInvalid => 5,
            ErrorCode::ApprovalExpired => 6,
            ErrorCode::ApprovalDenied => 7,
            ErrorCode::GuardDenied => 8,
            ErrorCode::BudgetExceeded => 9,
            ErrorCode::DuplicateCall => 10,
            ErrorCode::ToolFailed => 11,
            ErrorCode::ToolCrashed => 12,
            ErrorCode::Timeout => 13,
            ErrorCode::OutOfFuel => 14,
            ErrorCode::MemoryLimit => 15,
            ErrorCode::Cancelled => 16,
            ErrorCode::OutputTooLarge => 17,
            ErrorCode::InvalidToolOutput => 18,
            ErrorCode::HostError => 19,
            ErrorCode::CredentialMissing => 20,
            ErrorCode::NestingLimit => 21,
            ErrorCode::CallCycle => 22,
            ErrorCode::InputRequired => 23,
            ErrorCode::SessionNotYours => 24,
            ErrorCode::RateLimited => 25,
        };
        for (i, code) in all.iter().enumerate() {
            assert_eq!(position(*code), i, "{code:?} is out of place");
        }
        let names: Vec<_> = all.iter().map(|c| c.as_str()).collect();
        assert_eq!(
            names.join(" "),
            "UNKNOWN_TOOL INVALID_ARGS POLICY_DENIED APPROVAL_UNAVAILABLE APPROVAL_REQUIRED \
             APPROVAL_INVALID APPROVAL_EXPIRED APPROVAL_DENIED GUARD_DENIED BUDGET_EXCEEDED \
             DUPLICATE_CALL TOOL_FAILED \
             TOOL_CRASHED TIMEOUT OUT_OF_FUEL MEMORY_LIMIT CANCELLED OUTPUT_TOO_LARGE \
             INVALID_TOOL_OUTPUT HOST_ERROR CREDENTIAL_MISSING NESTING_LIMIT CALL_CYCLE \
             INPUT_REQUIRED SESSION_NOT_YOURS RATE_LIMITED"
        );
        for code in all {
            let json = serde_json::to_value(code).unwrap();
            assert_eq!(json, code.as_str(), "serde spelling of {code:?}");
        }
    }
}
