//! A tool's questions to the person behind an MCP client (the `ask`
//! import). A call that asked one ends `INPUT_REQUIRED`; this module asks
//! the person and makes the call again with the answer, or hands the
//! question to the client to ask:
//! - a legacy client that declared elicitation gets a form elicitation
//!   (for the approval a rerun needs, too), and the call runs again on this
//!   connection once it is answered;
//! - a 2026-07-28 client that declared elicitation gets an
//!   `input_required` result with a single-use request state holding the
//!   answers so far; its retry with the new answer runs the call again;
//! - any other client gets the `INPUT_REQUIRED` error, which names the
//!   question: nothing more runs.
//!
//! The answer is checked against the question's form by the host before the
//! tool sees it, not here. This module never decides whether a call may run.

use super::{ELICITATION_TIMEOUT, Server, input};
use crate::call::{CallId, CallRequest, RawArgs};
use crate::outcome::{CallResult, ErrorCode};
use crate::question::MAX_QUESTIONS;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ElicitRequest, InputRequest, InputRequiredResult,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};

impl Server {
    /// A 2026-07-28 call's input: the answers in `inputResponses`, and what
    /// its request state stood for. `Err` refuses the request (a state the
    /// host did not issue, or for another call; malformed responses);
    /// `Ok(Some(_))` is a refusal to return as the call's result.
    pub(super) fn take_up(
        &self,
        params: &CallToolRequestParams,
        request: &mut CallRequest,
    ) -> Result<Option<Box<CallResult>>, McpError> {
        let responses = || {
            params
                .input_responses
                .as_ref()
                .map(input::answers)
                .transpose()
                .map_err(|e| McpError::invalid_params(format!("toolwarden: {e}"), None))
        };
        let Some(state) = params.request_state.as_deref() else {
            request.answers = responses()?.unwrap_or_default();
            return Ok(None);
        };
        let redeemed = self.states.redeem(state).map_err(|e| {
            McpError::internal_error(
                format!(
                    "toolwarden: the request state could not be looked up, so nothing ran: {e}. \
                     hint: retry once the shared store is back"
                ),
                None,
            )
        })?;
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

    /// For a 2026-07-28 client that can show a form: the question `result`
    /// stopped at, as an `input_required` result whose request state holds
    /// the answers `request` ran with. `None` when the client cannot be asked.
    pub(super) fn hand_question(
        &self,
        cx: &RequestContext<RoleServer>,
        request: &CallRequest,
        result: &CallResult,
    ) -> Option<CallToolResponse> {
        cx.client_capabilities()?.elicitation.as_ref()?;
        let requests = input::question_forms(&result.questions)?
            .into_iter()
            .map(|(question, form)| {
                (
                    question.key.clone(),
                    InputRequest::Elicitation(ElicitRequest::new(form)),
                )
            })
            .collect();
        let state = self.states.issue(input::Pending::Questions {
            session: request.session.clone(),
            tool: request.tool.clone(),
            arguments: object_of(&request.args),
            answers: request.answers.clone(),
        })?;
        Some(CallToolResponse::InputRequired(InputRequiredResult::new(
            Some(requests),
            Some(state),
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
                    let Some(forms) = input::question_forms(&result.questions) else {
                        return result;
                    };
                    for (question, form) in forms {
                        let answer = match tokio::time::timeout(
                            ELICITATION_TIMEOUT,
                            cx.peer.create_elicitation(form),
                        )
                        .await
                        {
                            Ok(Ok(answer)) => answer,
                            Ok(Err(e)) => {
                                tracing::warn!("asking question `{}` failed: {e}", question.key);
                                return result;
                            }
                            Err(_) => return result,
                        };
                        request
                            .answers
                            .insert(question.key.clone(), input::answer(answer));
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

/// The arguments a request state binds: MCP's are always an object.
fn object_of(args: &RawArgs) -> Option<std::sync::Arc<serde_json::Value>> {
    match args {
        RawArgs::Object(object) => Some(std::sync::Arc::clone(object)),
        RawArgs::Text(_) => None,
    }
}
