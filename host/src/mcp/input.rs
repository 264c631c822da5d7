//! The 2026-07-28 way to ask: an `input_required` result carrying a form
//! elicitation and a request state, which the client echoes when it retries
//! the call with the person's answer.
//!
//! A request state is an unguessable handle to one pending approval (and the
//! session that asked), kept here, never trusted from the client: a retry
//! with an unknown, expired or already used state runs nothing. Each state
//! is taken out on first use, so it serves exactly one retry; the approval
//! machinery then re-checks every binding of the call (tool, arguments,
//! plugin, grant, policy) and consumes the approval once.

use crate::approval::ApprovalDecision;
use crate::call::SessionId;
use rmcp::model::{ElicitRequestParams, ElicitationAction, ElicitationSchema};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The key of the one input request toolwarden makes.
pub const APPROVAL_INPUT: &str = "approval";
/// A state unused for this long is forgotten (the approval itself stays
/// pending until its own expiry, and can still be decided from the CLI).
const STATE_TTL: Duration = Duration::from_secs(900);

/// What a request state stands for.
#[derive(Clone, Debug)]
pub struct Pending {
    pub approval_id: String,
    pub session: SessionId,
    pub tool: String,
}

/// Request states handed out and not yet used, shared by every connection.
#[derive(Clone, Debug, Default)]
pub struct RequestStates(Arc<Mutex<HashMap<String, (Pending, Instant)>>>);

impl RequestStates {
    /// A new single-use state for `pending`.
    pub fn issue(&self, pending: Pending) -> String {
        let state = format!(
            "{}{}",
            uuid::Uuid::new_v4().simple(),
            uuid::Uuid::new_v4().simple()
        );
        let mut states = self.0.lock().unwrap_or_else(|p| p.into_inner());
        states.retain(|_, (_, issued)| issued.elapsed() < STATE_TTL);
        states.insert(state.clone(), (pending, Instant::now()));
        state
    }

    /// Takes the state out: a second use finds nothing.
    pub fn redeem(&self, state: &str) -> Option<Pending> {
        let mut states = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let (pending, issued) = states.remove(state)?;
        (issued.elapsed() < STATE_TTL).then_some(pending)
    }
}

/// The form a person answers: approve this one call or not.
pub fn approval_form(message: String) -> Option<ElicitRequestParams> {
    let schema = ElicitationSchema::builder()
        .required_bool("approve")
        .build()
        .ok()?;
    Some(ElicitRequestParams::FormElicitationParams {
        meta: None,
        message,
        requested_schema: schema,
    })
}

/// What an elicitation answer (as the client sent it) decides: only an
/// accepted form with `approve: true` approves.
pub fn decision(
    action: &ElicitationAction,
    content: Option<&serde_json::Value>,
) -> ApprovalDecision {
    let approved = *action == ElicitationAction::Accept
        && content
            .and_then(|c| c.get("approve"))
            .and_then(serde_json::Value::as_bool)
            == Some(true);
    if approved {
        ApprovalDecision::Approve
    } else {
        ApprovalDecision::Deny
    }
}
