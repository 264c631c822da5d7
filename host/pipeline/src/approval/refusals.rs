//! What a call is told when the approval step does not let it run: it
//! waits for a person, a person denied it, the policy that asked now
//! refuses it, the approval book is out of reach, or a binding does not fit.

use crate::call::CallRequest;
use crate::outcome::{CallError, ErrorCode};
use crate::store::{ApprovalRow, Binding};

/// The refusal of a call that waits for a person; `console` is the URL of
/// a console running for this state, where they can decide it too.
pub(super) fn pending(approval: &ApprovalRow, console: Option<String>) -> CallError {
    let in_console = console
        .map(|url| {
            format!(
                ", or decide it in the console at {url}/approvals/{}",
                approval.id
            )
        })
        .unwrap_or_default();
    CallError::new(
        ErrorCode::ApprovalRequired,
        format!(
            "the policy asks for a person's approval before this call runs ({}); nothing ran. \
             Review it with `toolwarden approvals show {id}` and approve it with \
             `toolwarden approvals approve {id}`{in_console}; then the same call, repeated in \
             the same session, runs once (or pass `--approval {id}`)",
            approval.reason,
            id = approval.id
        ),
    )
    .with_approval(approval.id.clone())
}

/// The refusal of a call a person denied, with their reason.
pub(super) fn denied(approval: &ApprovalRow) -> CallError {
    CallError::new(
        ErrorCode::ApprovalDenied,
        format!(
            "approval `{}` was denied{}; nothing ran",
            approval.id,
            approval
                .decided_reason
                .as_ref()
                .map(|r| format!(": {r}"))
                .unwrap_or_default()
        ),
    )
    .with_approval(approval.id.clone())
}

/// A call that brings an approval is bound to the policy that asked: if the
/// policy now denies it outright, the approval no longer fits.
pub fn policy_refused(refusal: CallError, request: &CallRequest) -> CallError {
    match &request.approval {
        Some(id) if refusal.code == ErrorCode::PolicyDenied => CallError::new(
            ErrorCode::ApprovalInvalid,
            format!(
                "approval `{id}` no longer fits: the policy now denies this call ({})",
                refusal.message
            ),
        )
        .with_approval(id.clone()),
        Some(_) | None => refusal,
    }
}

/// Without a working approval book nobody can approve: fail closed.
pub(super) fn host_error(e: crate::store::StoreError) -> CallError {
    CallError::new(
        ErrorCode::ApprovalUnavailable,
        format!("the approval could not be recorded or read, so the call did not run: {e}"),
    )
}

/// Which binding of an approved approval does not fit this call.
pub(super) fn mismatch(binding: Binding) -> &'static str {
    match binding {
        Binding::Tool => "it was approved for another tool",
        Binding::Arguments => "the arguments differ from the approved ones",
        Binding::Session => "it was approved for another session",
        Binding::Plugin => "the plugin changed since it was approved",
        Binding::Capability => {
            "the capability the call would get (filesystem or network) changed since it was approved"
        }
        Binding::Policy => "the policy changed since it was approved",
        Binding::Profile => "it was approved for a session with another profile",
    }
}
