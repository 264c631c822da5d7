//! `prompts/list`, `prompts/get` and `completion/complete`: the plugins'
//! prompts (contract 0.3.0) in MCP's shapes. Only translates: what a
//! session may list, get and complete is decided by the controller, and a
//! refusal comes back as a JSON-RPC error whose message starts with the
//! host's code (`POLICY_DENIED`, `UNKNOWN_TOOL`, `INVALID_ARGS`, ...), as
//! `data.toolwarden.code` too.

use crate::controller::OfferRequest;
use crate::convert::refusal;
use crate::outcome::{CallError, ErrorCode};
use crate::prompt::{RenderedPrompt, Role};
use crate::question::{Answers, MAX_QUESTIONS};
use crate::{Server, input};
use rmcp::model::{
    CompleteRequestParams, CompleteResult, CompletionInfo, GetPromptRequestParams,
    GetPromptResponse, GetPromptResult, InputRequiredResult, Prompt, PromptArgument, PromptMessage,
    ProtocolVersion, Reference, Role as McpRole,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};
use std::collections::BTreeMap;
use std::sync::Arc;

impl Server {
    /// The prompts this request's session may get.
    pub(crate) fn prompts(&self, cx: &RequestContext<RoleServer>) -> Vec<Prompt> {
        let profile = self.profile(&cx.meta);
        let caller = crate::requests::caller_of(&cx.extensions);
        self.host
            .offered_prompts(profile.as_deref(), caller.as_deref(), |prompt| {
                let spec = prompt.spec();
                let arguments = spec
                    .arguments
                    .iter()
                    .map(|a| {
                        let mut argument =
                            PromptArgument::new(a.name.clone()).with_required(a.required);
                        argument.title = a.title.clone();
                        argument.description = a.description.clone();
                        argument
                    })
                    .collect();
                let mut listed = Prompt::new(
                    spec.name.clone(),
                    Some(spec.description.clone()),
                    Some(arguments),
                );
                listed.title = spec.title.clone();
                listed
            })
    }

    /// `prompts/get`, governed. A rendering that asks the person is handed
    /// to a 2026-07-28 client as an `input_required` result (its retry
    /// carries the answers and the request state); a legacy client that
    /// can show a form is asked on this connection and the prompt rendered
    /// again; any other gets the `INPUT_REQUIRED` refusal naming the
    /// question.
    pub(crate) async fn get_prompt_for(
        &self,
        params: GetPromptRequestParams,
        cx: &RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        let mut arguments = BTreeMap::new();
        for (name, value) in params.arguments.clone().unwrap_or_default() {
            let value = match value {
                serde_json::Value::String(text) => text,
                other => {
                    return Err(refusal(
                        CallError::new(
                            ErrorCode::InvalidArgs,
                            format!(
                                "the argument `{name}` is {other}, not a string; a prompt's arguments are strings"
                            ),
                        ),
                        None,
                    ));
                }
            };
            arguments.insert(name, value);
        }
        let mut request = self.offer_request(params.name.clone(), arguments, cx)?;
        let modern = cx
            .protocol_version()
            .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28);
        if modern {
            self.take_up_prompt(&params, &mut request)?;
        }
        for _ in 0..MAX_QUESTIONS {
            let stopped = match self.host.get_prompt(request.clone()).await {
                Ok(rendered) => return Ok(result(rendered).into()),
                Err(e) if e.code == ErrorCode::InputRequired && !e.questions.is_empty() => e,
                Err(e) => return Err(refusal(e, None)),
            };
            if modern {
                return self.hand_prompt_question(cx, &request, stopped);
            }
            if cx.peer.supported_elicitation_modes().is_empty() {
                return Err(refusal(stopped, None));
            }
            let mut answers = (*request.answers).clone();
            for question in &stopped.questions {
                let Some(answer) = crate::questions::request_of_client(cx, question).await else {
                    return Err(refusal(stopped, None));
                };
                answers.insert(question.key.clone(), answer);
            }
            request.answers = Arc::new(answers);
        }
        Err(McpError::internal_error(
            "toolwarden: the prompt asked more often than a rendering may; nothing was rendered",
            None,
        ))
    }

    /// A 2026-07-28 retry's input: the answers in `inputResponses`, and
    /// those its request state held, which must be for this prompt with
    /// these arguments.
    fn take_up_prompt(
        &self,
        params: &GetPromptRequestParams,
        request: &mut OfferRequest,
    ) -> Result<(), McpError> {
        let mut answers = match params.request_state.as_deref() {
            None => Answers::default(),
            Some(state) => match self.redeem(state)? {
                Some(input::Pending::Prompt {
                    session,
                    prompt,
                    arguments,
                    answers,
                }) if prompt == request.name && arguments == request.arguments => {
                    request.session = session;
                    answers
                }
                _ => {
                    return Err(McpError::invalid_params(
                        "toolwarden: the request state is unknown, expired, altered, already used \
                         or for another request; nothing was rendered. hint: get the prompt again \
                         without `requestState` to be asked again",
                        None,
                    ));
                }
            },
        };
        if let Some(given) = super::questions::input_responses(params.input_responses.as_ref())? {
            answers.extend(given);
        }
        request.answers = Arc::new(answers);
        Ok(())
    }

    /// The questions a rendering `stopped` at, as an `input_required`
    /// result whose request state holds the answers so far; the refusal
    /// when the client cannot be asked.
    fn hand_prompt_question(
        &self,
        cx: &RequestContext<RoleServer>,
        request: &OfferRequest,
        stopped: CallError,
    ) -> Result<GetPromptResponse, McpError> {
        if let Some(missing) = input::lacking(&stopped.questions, cx.client_capabilities().as_ref())
        {
            return Err(if input::lacks_client_requests(&missing) {
                McpError::missing_required_client_capability(missing)
            } else {
                refusal(stopped, None)
            });
        }
        let Some(requests) = input::input_requests(&stopped.questions) else {
            return Err(refusal(stopped, None));
        };
        let Some(state) = self.states.issue(input::Pending::Prompt {
            session: request.session.clone(),
            prompt: request.name.clone(),
            arguments: request.arguments.clone(),
            answers: (*request.answers).clone(),
        }) else {
            return Err(refusal(stopped, None));
        };
        Ok(GetPromptResponse::InputRequired(InputRequiredResult::new(
            Some(requests),
            Some(state),
        )))
    }

    /// `completion/complete` for a prompt's argument or a resource
    /// template's variable.
    pub(crate) async fn complete_for(
        &self,
        params: CompleteRequestParams,
        cx: &RequestContext<RoleServer>,
    ) -> Result<CompleteResult, McpError> {
        let context: BTreeMap<String, String> = params
            .context
            .and_then(|c| c.arguments)
            .unwrap_or_default()
            .into_iter()
            .collect();
        let argument = (
            params.argument.name.as_str(),
            params.argument.value.as_str(),
        );
        let values = match params.r#ref {
            Reference::Prompt(prompt) => {
                let request = self.offer_request(prompt.name, context, cx)?;
                self.host
                    .complete_prompt(request, argument.0, argument.1)
                    .await
                    .map_err(|e| refusal(e, None))?
            }
            Reference::Resource(template) => {
                self.complete_template_for(template.uri, argument, context, cx)
                    .await?
            }
            _ => Vec::new(),
        };
        let info = CompletionInfo::new(values).map_err(|e| McpError::internal_error(e, None))?;
        Ok(CompleteResult::new(info))
    }
}

fn result(rendered: RenderedPrompt) -> GetPromptResult {
    let messages = rendered
        .messages
        .into_iter()
        .map(|m| {
            let role = match m.role {
                Role::User => McpRole::User,
                Role::Assistant => McpRole::Assistant,
            };
            PromptMessage::new(role, crate::convert::block(m.content))
        })
        .collect();
    let mut result = GetPromptResult::new(messages);
    result.description = rendered.description;
    result
}
