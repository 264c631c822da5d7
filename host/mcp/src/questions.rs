//! A tool's questions to the person behind an MCP client (the `ask`
//! import) and its requests to the client itself (the `client` import:
//! sampling, roots). A call that made one ends `INPUT_REQUIRED`; this
//! module asks and makes the call again with the answer, or hands the
//! requests to the client:
//! - a legacy client gets a form elicitation per question (for the
//!   approval a rerun needs, too), a `sampling/createMessage` or a
//!   `roots/list` per request, and the call runs again on this connection
//!   once they are answered; a request for a capability the client did not
//!   declare is answered, to the tool, with why it was not made;
//! - a 2026-07-28 client that declared every capability the requests need
//!   gets an `input_required` result with a single-use request state
//!   holding the answers so far; its retry with the new answers runs the
//!   call again; one that did not is refused (-32021, naming them);
//! - any other client gets the `INPUT_REQUIRED` error, which names the
//!   question: nothing more runs.
//!
//! Sampling and roots are what SEP-2577 deprecates; the revisions clients
//! speak still have them, so they are used here on purpose.
//!
//! The answer is checked against the question's form by the host before the
//! tool sees it, not here. This module never decides whether a call may run.

#![allow(deprecated)]

use super::{ELICITATION_TIMEOUT, Server, input};
use crate::call::{CallId, CallRequest, RawArgs};
use crate::outcome::{CallResult, ErrorCode};
use crate::question::{Answer, MAX_QUESTIONS, Need};
use rmcp::model::{CallToolRequestParams, CallToolResponse, InputRequiredResult};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};

/// The answers of a 2026-07-28 request's `inputResponses`, if it has any;
/// malformed ones refuse the request.
pub(super) fn input_responses(
    responses: Option<&rmcp::model::InputResponses>,
) -> Result<Option<crate::question::Answers>, McpError> {
    responses
        .map(input::answers)
        .transpose()
        .map_err(|e| McpError::invalid_params(format!("toolwarden: {e}"), None))
}

impl Server {
    /// What a request state the host issued stands for, taken out (a
    /// state is used once); `None` for one it did not issue, or that
    /// expired or was used.
    pub(super) fn redeem(&self, state: &str) -> Result<Option<input::Pending>, McpError> {
        self.states.redeem(state).map_err(|e| {
            McpError::internal_error(
                format!(
                    "toolwarden: the request state could not be looked up, so nothing was done: \
                     {e}. hint: retry once the shared store is back"
                ),
                None,
            )
        })
    }

    /// A 2026-07-28 call's input: the answers in `inputResponses`, and what
    /// its request state stood for. `Err` refuses the request (a state the
    /// host did not issue, or for another call; malformed responses);
    /// `Ok(Some(_))` is a refusal to return as the call's result.
    pub(super) fn take_up(
        &self,
        params: &CallToolRequestParams,
        request: &mut CallRequest,
    ) -> Result<Option<Box<CallResult>>, McpError> {
        let responses = || input_responses(params.input_responses.as_ref());
        let Some(state) = params.request_state.as_deref() else {
            request.answers = responses()?.unwrap_or_default();
            return Ok(None);
        };
        let redeemed = self.redeem(state)?;
        match redeemed {
            None => Err(McpError::invalid_params(
                "toolwarden: the request state is unknown, expired, altered or already used; \
                 nothing ran. hint: call the tool again without `requestState` to be asked again",
                None,
            )),
            Some(input::Pending::Approval {
                approval_id,
                session,
                tool,
            }) => Ok(self
                .resume(approval_id, session, &tool, params, request)
                .err()),
            Some(input::Pending::Prompt { .. }) => Err(McpError::invalid_params(
                "toolwarden: the request state belongs to a prompt, not a call; nothing ran. \
                 hint: retry with the call's own state",
                None,
            )),
            Some(input::Pending::Questions {
                session,
                tool,
                arguments,
                answers,
            }) => {
                if tool != params.name || arguments != object_of(&request.args) {
                    return Err(McpError::invalid_params(
                        "toolwarden: the request state belongs to a call of another tool or with \
                         other arguments; nothing ran. hint: retry with the call's own tool and \
                         arguments",
                        None,
                    ));
                }
                request.session = session;
                request.answers = answers;
                if let Some(new) = responses()? {
                    request.answers.extend(new);
                }
                Ok(None)
            }
        }
    }

    /// For a 2026-07-28 client: what `result` stopped at, as an
    /// `input_required` result whose request state holds the answers
    /// `request` ran with. `Ok(None)` when it cannot be handed over (the
    /// call's own `INPUT_REQUIRED` result then says what it waits for);
    /// `Err` when the client did not declare a capability the requests need.
    pub(super) fn hand_question(
        &self,
        cx: &RequestContext<RoleServer>,
        request: &CallRequest,
        result: &CallResult,
    ) -> Result<Option<CallToolResponse>, McpError> {
        // A client that cannot show a form keeps the `INPUT_REQUIRED`
        // result it always got; one that lacks a capability a request to
        // the client needs is refused, as the revision says.
        if let Some(missing) = input::lacking(&result.questions, cx.client_capabilities().as_ref())
        {
            return if input::lacks_client_requests(&missing) {
                Err(McpError::missing_required_client_capability(missing))
            } else {
                Ok(None)
            };
        }
        let Some(requests) = input::input_requests(&result.questions) else {
            return Ok(None);
        };
        let Some(state) = self.states.issue(input::Pending::Questions {
            session: request.session.clone(),
            tool: request.tool.clone(),
            arguments: object_of(&request.args),
            answers: request.answers.clone(),
        }) else {
            return Ok(None);
        };
        Ok(Some(CallToolResponse::InputRequired(
            InputRequiredResult::new(Some(requests), Some(state)),
        )))
    }

    /// For a legacy client that declared elicitation: asks the person what
    /// each run of the call stops for (an approval; each question it asked,
    /// one form at a time, as elicitation has it) and runs it again with the
    /// answers, until it ends otherwise. A run that stopped at a question
    /// used up its approval, so the next is asked about again, as at the
    /// CLI. Stops at the first thing the person leaves unanswered (or after
    /// as many rounds as the CLI allows) with that result.
    pub(super) async fn ask_the_person(
        &self,
        cx: &RequestContext<RoleServer>,
        request: &mut CallRequest,
        mut result: CallResult,
    ) -> CallResult {
        for _ in 0..2 * MAX_QUESTIONS {
            match result.code() {
                Some(ErrorCode::ApprovalRequired) => {
                    let Some(id) = result.approval_id.clone() else {
                        return result;
                    };
                    if !self.elicit(&cx.peer, &id, request.caller.as_deref()).await {
                        return result;
                    }
                    request.approval = Some(id);
                }
                Some(ErrorCode::InputRequired) => {
                    if result.questions.is_empty() {
                        return result;
                    }
                    for question in &result.questions {
                        let Some(answer) = request_of_client(cx, question).await else {
                            return result;
                        };
                        request.answers.insert(question.key.clone(), answer);
                    }
                    request.approval = None;
                }
                _ => return result,
            }
            request.call_id = CallId::new();
            result = self.run(request.clone(), cx).await;
        }
        result
    }
}

/// Whether a legacy client can answer what `result` stopped for: an
/// approval or a question needs elicitation; a request to the client is
/// answered either way (with why it was not made, when it cannot be).
pub(super) fn can_answer(cx: &RequestContext<RoleServer>, result: &CallResult) -> bool {
    !cx.peer.supported_elicitation_modes().is_empty()
        || (result.code() == Some(ErrorCode::InputRequired)
            && result
                .questions
                .iter()
                .all(|q| matches!(q.need, Need::Sample(_) | Need::Roots)))
}

/// Makes `question` of a legacy client: a form elicitation, a sampling
/// request or a roots listing, each within [`ELICITATION_TIMEOUT`].
/// `None` when nothing is to be had (a form the client cannot show, no
/// answer in time): the call then ends as it stopped. A request the client
/// cannot or will not answer gets an answer saying so, which the tool sees.
pub(super) async fn request_of_client(
    cx: &RequestContext<RoleServer>,
    question: &crate::question::Question,
) -> Option<Answer> {
    let info = cx.peer.peer_info();
    let declared = info.as_ref().map(|info| &info.capabilities);
    let lacks = |capability: &str| {
        Answer::Failed(format!(
            "the client did not declare the `{capability}` capability, so it was not asked"
        ))
    };
    let within = |what: &str| format!("the client did not answer the {what} request in time");
    match &question.need {
        Need::Form | Need::SamplingApproval(_) => {
            let form = match &question.need {
                Need::SamplingApproval(_) => input::approval_form(
                    question.message.clone(),
                    input::Approving::SamplingRequest,
                )?,
                _ => input::question_form(question)?,
            };
            match tokio::time::timeout(ELICITATION_TIMEOUT, cx.peer.create_elicitation(form)).await
            {
                Ok(Ok(answer)) => Some(input::answer(answer)),
                Ok(Err(e)) => {
                    tracing::warn!("asking question `{}` failed: {e}", question.key);
                    None
                }
                Err(_) => None,
            }
        }
        Need::Sample(sampling) => {
            if declared.is_none_or(|caps| caps.sampling.is_none()) {
                return Some(lacks("sampling"));
            }
            let params = input::sampling_params(sampling)?;
            Some(
                match tokio::time::timeout(ELICITATION_TIMEOUT, cx.peer.create_message(params))
                    .await
                {
                    Ok(Ok(answer)) => serde_json::to_value(answer)
                        .and_then(serde_json::from_value)
                        .map(Answer::Sampled)
                        .unwrap_or_else(|e| {
                            Answer::Failed(format!(
                                "the client's sampling answer is malformed: {e}"
                            ))
                        }),
                    Ok(Err(e)) => Answer::Failed(format!("the client refused to sample: {e}")),
                    Err(_) => Answer::Failed(within("sampling")),
                },
            )
        }
        Need::Roots => {
            if declared.is_none_or(|caps| caps.roots.is_none()) {
                return Some(lacks("roots"));
            }
            Some(
                match tokio::time::timeout(ELICITATION_TIMEOUT, cx.peer.list_roots()).await {
                    Ok(Ok(listed)) => Answer::Roots(
                        listed
                            .roots
                            .into_iter()
                            .map(|r| crate::sampling::Root {
                                uri: r.uri,
                                name: r.name,
                            })
                            .collect(),
                    ),
                    Ok(Err(e)) => Answer::Failed(format!("the client did not list its roots: {e}")),
                    Err(_) => Answer::Failed(within("roots")),
                },
            )
        }
    }
}

/// The arguments a request state binds: MCP's are always an object.
fn object_of(args: &RawArgs) -> Option<std::sync::Arc<serde_json::Value>> {
    match args {
        RawArgs::Object(object) => Some(std::sync::Arc::clone(object)),
        RawArgs::Text(_) => None,
    }
}
