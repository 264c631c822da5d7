//! `prompts/list`, `prompts/get` and `completion/complete`: the plugins'
//! prompts (contract 0.3.0) in MCP's shapes. Only translates: what a
//! session may list, get and complete is decided by the controller, and a
//! refusal comes back as a JSON-RPC error whose message starts with the
//! host's code (`POLICY_DENIED`, `UNKNOWN_TOOL`, `INVALID_ARGS`, ...), as
//! `data.toolwarden.code` too.

use crate::Server;
use crate::convert::refusal;
use crate::outcome::{CallError, ErrorCode};
use crate::prompt::{RenderedPrompt, Role};
use rmcp::model::{
    CompleteRequestParams, CompleteResult, CompletionInfo, GetPromptRequestParams, GetPromptResult,
    Prompt, PromptArgument, PromptMessage, Reference, Role as McpRole,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};
use std::collections::BTreeMap;

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

    /// `prompts/get`, governed.
    pub(crate) async fn get_prompt_for(
        &self,
        params: GetPromptRequestParams,
        cx: &RequestContext<RoleServer>,
    ) -> Result<GetPromptResult, McpError> {
        let mut arguments = BTreeMap::new();
        for (name, value) in params.arguments.unwrap_or_default() {
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
        let request = self.offer_request(params.name, arguments, cx)?;
        let rendered = self
            .host
            .get_prompt(request)
            .await
            .map_err(|e| refusal(e, None))?;
        Ok(result(rendered))
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
