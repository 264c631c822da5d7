//! The 2026-07-28 way to ask: an `input_required` result carrying a form
//! elicitation and a request state, which the client echoes when it retries
//! the call with the person's answer.
//!
//! A request state is an unguessable handle to what the host is waiting
//! for: one pending approval, or the answers a tool's questions got so far
//! (with the session, tool and arguments they belong to). It is kept here,
//! never trusted from the client: a retry with an unknown, expired, altered
//! or already used state is refused (-32602) and runs nothing. Each state
//! is taken out on first use, so it serves exactly one retry; for an
//! approval, the approval machinery then re-checks every binding of the
//! call (tool, arguments, plugin, grant, policy) and consumes it once.

use crate::approval::ApprovalDecision;
use crate::call::SessionId;
use crate::question::{Answer, Answers};
use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema};
use serde::Deserialize;
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
pub enum Pending {
    /// A person's decision on one approval.
    Approval {
        approval_id: String,
        session: SessionId,
        tool: String,
    },
    /// The next answer to a tool's questions: the call runs again with
    /// these and the new one.
    Questions {
        session: SessionId,
        tool: String,
        arguments: Option<Arc<serde_json::Value>>,
        answers: Answers,
    },
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

/// The answers in a retry's `inputResponses`, each an elicitation result
/// (`action`, and `content` when accepted); what is wrong with them
/// otherwise. Keys are taken as sent: a tool only reads the ones it asks.
pub fn answers(responses: &rmcp::model::InputResponses) -> Result<Answers, String> {
    responses
        .iter()
        .map(|(key, response)| {
            let answer = reply_answer(response)
                .map_err(|e| format!("inputResponses.{key} is not an elicitation result: {e}"))?;
            Ok((key.clone(), answer))
        })
        .collect()
}

/// A reply as the client sent it (in `inputResponses` or `tasks/update`)
/// as the answer to a tool's question; an error if it is not an
/// elicitation result.
pub fn reply_answer(reply: &serde_json::Value) -> Result<Answer, serde_json::Error> {
    ElicitResult::deserialize(reply).map(answer)
}

/// What a reply as the client sent it decides on an approval; `None` if it
/// is not an elicitation result.
pub fn reply_decision(reply: &serde_json::Value) -> Option<ApprovalDecision> {
    let result = ElicitResult::deserialize(reply).ok()?;
    Some(decision(&result.action, result.content.as_ref()))
}

/// A person's elicitation result as the answer to a tool's question.
pub fn answer(result: ElicitResult) -> Answer {
    match result.action {
        ElicitationAction::Accept => Answer::Accepted(
            result
                .content
                .unwrap_or_else(|| serde_json::Value::Object(Default::default())),
        ),
        ElicitationAction::Decline => Answer::Declined,
        // Cancel, and any action a later revision adds: the person did not
        // answer, which a tool must take as no answer.
        _ => Answer::Cancelled,
    }
}

/// A tool's question as a form elicitation; `None` if the client's SDK
/// cannot carry its form (the host checked it against the same subset).
pub fn question_form(question: &crate::question::Question) -> Option<ElicitRequestParams> {
    let requested_schema = serde_json::from_value::<ElicitationSchema>(question.form.clone())
        .map_err(|e| tracing::warn!("question `{}`: form not expressible: {e}", question.key))
        .ok()?;
    Some(ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: question.message.clone(),
        requested_schema,
    })
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
