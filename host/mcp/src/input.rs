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
//! Hosts that share a store keep their states in it, so a retry may reach
//! any of them.
//!
//! A tool's requests to the client (sampling, roots) travel the same way;
//! SEP-2577 deprecates both, and 2026-07-28 clients still answer them in
//! `inputResponses`, so their deprecated types are used here on purpose.

#![allow(deprecated)]

use crate::approval::ApprovalDecision;
use crate::call::SessionId;
use crate::question::{Answer, Answers, Need};
use crate::sampling::{Completion, RootList, Sampling};
use crate::store::{Store, now_ms};
use rmcp::model::{
    ClientCapabilities, CreateMessageRequest, CreateMessageRequestParams, ElicitRequestParams,
    ElicitResult, ElicitationAction, ElicitationSchema, InputRequest, InputRequests,
    ListRootsRequest,
};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The key of the one input request toolwarden makes.
pub const APPROVAL_INPUT: &str = "approval";
/// A state unused for this long is forgotten (the approval itself stays
/// pending until its own expiry, and can still be decided from the CLI).
const STATE_TTL: Duration = Duration::from_secs(900);

/// What a request state stands for. A shared store keeps it as JSON.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
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
    /// The next answer to a prompt's questions: it is rendered again with
    /// these and the new one.
    Prompt {
        session: SessionId,
        prompt: String,
        arguments: std::collections::BTreeMap<String, String>,
        answers: Answers,
    },
}

/// Request states handed out and not yet used, shared by every connection:
/// in this process, or, when hosts share a store, in it, so that a retry
/// may land on any of them.
#[derive(Clone, Debug)]
pub enum RequestStates {
    Local(Arc<Mutex<HashMap<String, (Pending, Instant)>>>),
    Shared(Arc<Store>),
}

impl Default for RequestStates {
    fn default() -> Self {
        RequestStates::Local(Arc::default())
    }
}

/// The key a shared store keeps a state under: its SHA-256, so the store
/// never holds the secret a client presents.
fn shared_key(state: &str) -> String {
    hex::encode(Sha256::digest(state.as_bytes()))
}

impl RequestStates {
    /// Where this host keeps its states: with the other hosts when they
    /// share a store.
    pub fn for_store(store: Arc<Store>) -> RequestStates {
        if store.is_shared() {
            RequestStates::Shared(store)
        } else {
            RequestStates::default()
        }
    }

    /// A new single-use state for `pending`; `None` if it could not be
    /// kept (the shared store is unavailable), so nobody can be asked.
    pub fn issue(&self, pending: Pending) -> Option<String> {
        let state = format!(
            "{}{}",
            uuid::Uuid::new_v4().simple(),
            uuid::Uuid::new_v4().simple()
        );
        match self {
            RequestStates::Local(states) => {
                let mut states = states.lock().unwrap_or_else(|p| p.into_inner());
                states.retain(|_, (_, issued)| issued.elapsed() < STATE_TTL);
                states.insert(state.clone(), (pending, Instant::now()));
            }
            RequestStates::Shared(store) => {
                let kept = serde_json::to_string(&pending)
                    .map_err(|e| tracing::warn!("a request state could not be written: {e}"))
                    .ok()?;
                let now = now_ms();
                store
                    .put_request_state(&shared_key(&state), &kept, now, now - ttl_ms())
                    .map_err(|e| tracing::warn!("a request state could not be kept: {e}"))
                    .ok()?;
            }
        }
        Some(state)
    }

    /// Takes the state out: a second use, here or on another host, finds
    /// nothing. `Err` if the shared store could not be asked.
    pub fn redeem(&self, state: &str) -> Result<Option<Pending>, String> {
        match self {
            RequestStates::Local(states) => {
                let mut states = states.lock().unwrap_or_else(|p| p.into_inner());
                Ok(states.remove(state).and_then(|(pending, issued)| {
                    (issued.elapsed() < STATE_TTL).then_some(pending)
                }))
            }
            RequestStates::Shared(store) => {
                let kept = store
                    .take_request_state(&shared_key(state), now_ms() - ttl_ms())
                    .map_err(|e| e.to_string())?;
                Ok(kept.and_then(|text| serde_json::from_str::<Pending>(&text).ok()))
            }
        }
    }
}

fn ttl_ms() -> i64 {
    i64::try_from(STATE_TTL.as_millis()).unwrap_or(i64::MAX)
}

/// The answers in a retry's `inputResponses`, each an elicitation result
/// (`action`, and `content` when accepted), a sampling result (`model`,
/// `role`, `content`) or a roots list (`roots`); what is wrong with them
/// otherwise. Keys are taken as sent: a tool only reads the ones it asks,
/// and the host checks each against what was asked before the tool sees it.
pub fn answers(responses: &rmcp::model::InputResponses) -> Result<Answers, String> {
    responses
        .iter()
        .map(|(key, response)| {
            let answer = reply_answer(response).map_err(|e| {
                format!("inputResponses.{key} is not an elicitation, sampling or roots result: {e}")
            })?;
            Ok((key.clone(), answer))
        })
        .collect()
}

/// A reply as the client sent it (in `inputResponses` or `tasks/update`)
/// as the answer to a tool's request, told apart by its shape; an error if
/// it is none of the three results.
pub fn reply_answer(reply: &serde_json::Value) -> Result<Answer, serde_json::Error> {
    if reply.get("roots").is_some() {
        return RootList::deserialize(reply).map(|list| Answer::Roots(list.roots));
    }
    if reply.get("action").is_none() && reply.get("model").is_some() {
        return Completion::deserialize(reply).map(Answer::Sampled);
    }
    ElicitResult::deserialize(reply).map(answer)
}

/// A tool's request to the client as an input request of an
/// `input_required` result; `None` if it cannot be carried.
pub fn input_request(question: &crate::question::Question) -> Option<InputRequest> {
    match &question.need {
        Need::Form => question_form(question)
            .map(|form| InputRequest::Elicitation(rmcp::model::ElicitRequest::new(form))),
        Need::Sample(sampling) => sampling_params(sampling)
            .map(|params| InputRequest::CreateMessage(CreateMessageRequest::new(params))),
        Need::Roots => Some(InputRequest::ListRoots(ListRootsRequest::default())),
        Need::SamplingApproval(_) => {
            { approval_form(question.message.clone(), Approving::SamplingRequest) }
                .map(|form| InputRequest::Elicitation(rmcp::model::ElicitRequest::new(form)))
        }
    }
}

/// A sampling request as rmcp carries it; the same JSON.
pub fn sampling_params(sampling: &Sampling) -> Option<CreateMessageRequestParams> {
    serde_json::to_value(sampling)
        .and_then(serde_json::from_value)
        .map_err(|e| tracing::warn!("a sampling request is not expressible: {e}"))
        .ok()
}

/// The client capabilities the requests a run stopped at need that
/// `declared` lacks, as MCP names them in a -32021 error; `None` when it
/// has them all.
pub fn lacking(
    questions: &[crate::question::Question],
    declared: Option<&ClientCapabilities>,
) -> Option<ClientCapabilities> {
    let mut missing = serde_json::Map::new();
    for question in questions {
        let has = declared.is_some_and(|caps| match &question.need {
            Need::Form | Need::SamplingApproval(_) => caps.elicitation.is_some(),
            Need::Sample(_) => caps.sampling.is_some(),
            Need::Roots => caps.roots.is_some(),
        });
        if !has {
            missing.insert(
                question.need.capability().to_owned(),
                serde_json::Value::Object(Default::default()),
            );
        }
    }
    (!missing.is_empty())
        .then(|| serde_json::from_value(serde_json::Value::Object(missing)).unwrap_or_default())
}

/// Whether what a client lacks keeps it from the tool's requests to the
/// client itself (sampling, roots), which are then refused, rather than
/// only from a form, which it never was asked before and is not now.
pub fn lacks_client_requests(missing: &ClientCapabilities) -> bool {
    missing.sampling.is_some() || missing.roots.is_some()
}

/// Every request a run stopped at as an input request, by key; `None`
/// when there are none or one cannot be carried, so that nobody is asked
/// a part of what the call needs.
pub fn input_requests(questions: &[crate::question::Question]) -> Option<InputRequests> {
    if questions.is_empty() {
        return None;
    }
    questions
        .iter()
        .map(|question| Some((question.key.clone(), input_request(question)?)))
        .collect()
}

/// What a reply as the client sent it decides on an approval; `None` if it
/// is not an elicitation result.
pub fn reply_decision(reply: &serde_json::Value) -> Option<ApprovalDecision> {
    let result = ElicitResult::deserialize(reply).ok()?;
    decision(&result.action, result.content.as_ref())
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
    if question.need != Need::Form {
        return None;
    }
    let requested_schema = serde_json::from_value::<ElicitationSchema>(question.form.clone())
        .map_err(|e| tracing::warn!("question `{}`: form not expressible: {e}", question.key))
        .ok()?;
    Some(ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: question.prompt(),
        requested_schema,
    })
}

/// The one field of the host's approval form; no plugin's form may have a
/// field that starts with `toolwarden` (see [`crate::question::RESERVED_PREFIX`]).
pub const DECISION_FIELD: &str = crate::question::APPROVAL_FIELD;
const APPROVE_ONCE: &str = crate::question::APPROVE_ONCE;
const DENY: &str = crate::question::DENY;

/// What the host's approval form lets run once.
#[derive(Clone, Copy, Debug)]
pub enum Approving {
    /// A tool call the policy asks about.
    Call,
    /// A tool's request to the client's model under an `ask` sampling rule.
    SamplingRequest,
}

impl Approving {
    fn titles(self) -> (&'static str, &'static str) {
        match self {
            Approving::Call => (
                "toolwarden approval: run this one call?",
                "Approve this one call",
            ),
            Approving::SamplingRequest => (
                "toolwarden approval: send this one request to your model?",
                "Approve this one request",
            ),
        }
    }
}

/// The host's approval form: a title no plugin may use, what it is about
/// (in `message`), and one explicit choice: approve this one call (or
/// request), or deny it.
pub fn approval_form(message: String, approving: Approving) -> Option<ElicitRequestParams> {
    let (title, approve) = approving.titles();
    let schema = serde_json::json!({
        "type": "object",
        "title": title,
        "properties": {
            DECISION_FIELD: {
                "type": "string",
                "title": "toolwarden: your decision",
                "oneOf": [
                    { "const": APPROVE_ONCE, "title": approve },
                    { "const": DENY, "title": "Deny" },
                ],
            },
        },
        "required": [DECISION_FIELD],
    });
    let serde_json::Value::Object(schema) = schema else {
        return None;
    };
    let requested_schema = ElicitationSchema::from_json_schema(schema)
        .map_err(|e| tracing::error!("the approval form cannot be expressed: {e}"))
        .ok()?;
    Some(ElicitRequestParams::FormElicitationParams {
        meta: None,
        message,
        requested_schema,
    })
}

/// What an elicitation answer (as the client sent it) decides: an accepted
/// form that chose "approve once" approves, one that chose "deny" denies,
/// and so does declining the form. Anything else (cancelled, or accepted
/// without a choice) is no answer: the approval stays as it is.
pub fn decision(
    action: &ElicitationAction,
    content: Option<&serde_json::Value>,
) -> Option<ApprovalDecision> {
    match action {
        ElicitationAction::Accept => match content
            .and_then(|c| c.get(DECISION_FIELD))
            .and_then(serde_json::Value::as_str)
        {
            Some(APPROVE_ONCE) => Some(ApprovalDecision::Approve),
            Some(DENY) => Some(ApprovalDecision::Deny),
            Some(_) | None => None,
        },
        ElicitationAction::Decline => Some(ApprovalDecision::Deny),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_explicit_choice_decides_an_approval() {
        use serde_json::json;
        let accept = ElicitationAction::Accept;
        let decide = |content: serde_json::Value| decision(&accept, Some(&content));
        assert_eq!(
            decide(json!({ DECISION_FIELD: "approve_once" })),
            Some(ApprovalDecision::Approve)
        );
        assert_eq!(
            decide(json!({ DECISION_FIELD: "deny" })),
            Some(ApprovalDecision::Deny)
        );
        for no_choice in [
            json!({}),
            json!({ DECISION_FIELD: true }),
            json!({ "approve": true }),
        ] {
            assert_eq!(decide(no_choice.clone()), None, "{no_choice}");
        }
        assert_eq!(decision(&accept, None), None);
        assert_eq!(
            decision(&ElicitationAction::Decline, None),
            Some(ApprovalDecision::Deny)
        );
        assert_eq!(decision(&ElicitationAction::Cancel, None), None);
        assert!(
            approval_form("m".into(), Approving::Call).is_some(),
            "the form is expressible"
        );
    }

    /// A state kept in a shared store comes back as it went in, answers,
    /// arguments and session included (the session as one named elsewhere).
    #[test]
    fn a_kept_state_round_trips_through_its_stored_form() {
        let mut answers = Answers::default();
        answers.insert(
            "name".into(),
            Answer::Accepted(serde_json::json!({"name": "Ada"})),
        );
        answers.insert("confirm".into(), Answer::Declined);
        let session = SessionId::new();
        let pending = [
            Pending::Questions {
                session: session.clone(),
                tool: "greet".into(),
                arguments: Some(Arc::new(serde_json::json!({"n": 1.5, "s": "x"}))),
                answers,
            },
            Pending::Approval {
                approval_id: "a1".into(),
                session: session.clone(),
                tool: "write_file".into(),
            },
            Pending::Prompt {
                session: session.clone(),
                prompt: "review".into(),
                arguments: [("path".to_string(), "a.rs".to_string())].into(),
                answers: Answers::default(),
            },
        ];
        for before in pending {
            let text = serde_json::to_string(&before).unwrap_or_default();
            let after =
                serde_json::from_str::<Pending>(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
            assert_eq!(
                format!("{before:?}").replace("minted: true", "minted: false"),
                format!("{after:?}")
            );
            match after {
                Pending::Approval { session: s, .. }
                | Pending::Questions { session: s, .. }
                | Pending::Prompt { session: s, .. } => {
                    assert_eq!(s, session);
                    assert!(!s.is_new(), "a session named by a store has a history");
                }
            }
        }
    }
}
