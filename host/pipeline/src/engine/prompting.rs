//! The optional `prompts` export (0.3.0): a plugin's prompts, a prompt
//! rendered, an argument completed, in the host's types. Only asks and
//! converts: the sandbox step decides where it runs, the registry checks
//! what was declared, the policy who may have it.

use super::bindings::v0_3_prompts;
use super::contract::{GuestResult, Phase, PluginPre, ToolFailure, block};
use super::state::CallState;
use crate::content::{Block, Bytes, ResourceContents};
use crate::prompt::{PromptArgument, PromptMessage, PromptSpec, RenderedPrompt, Role};
use wasmtime::Store;
use wasmtime::component::Instance;

use v0_3_prompts::exports::toolwarden::tool::prompts as wit;

/// The plugin's prompts; none when it does not export `prompts`.
pub(super) async fn declared(
    instance: &Instance,
    store: &mut Store<CallState>,
) -> wasmtime::Result<Vec<PromptSpec>> {
    let Ok(plugin) = v0_3_prompts::PromptingPlugin::new(&mut *store, instance) else {
        return Ok(Vec::new());
    };
    let specs = plugin
        .toolwarden_tool_prompts()
        .call_prompts(&mut *store)
        .await?;
    Ok(specs
        .into_iter()
        .map(|spec| PromptSpec {
            name: spec.name,
            title: spec.title,
            description: spec.description,
            arguments: spec
                .arguments
                .into_iter()
                .map(|a| PromptArgument {
                    name: a.name,
                    title: a.title,
                    description: a.description,
                    required: a.required,
                })
                .collect(),
        })
        .collect())
}

pub(super) fn pairs(
    arguments: &std::collections::BTreeMap<String, String>,
) -> Vec<(String, String)> {
    arguments
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

impl PluginPre {
    /// An instance with the `prompts` export, or why there is none.
    async fn prompting(
        &self,
        store: &mut Store<CallState>,
    ) -> GuestResult<v0_3_prompts::PromptingPlugin> {
        let missing = || {
            (
                Phase::Instantiate,
                wasmtime::format_err!("the plugin does not export `prompts`"),
            )
        };
        let instance = self.instantiate_later(store).await?.ok_or_else(missing)?;
        v0_3_prompts::PromptingPlugin::new(&mut *store, &instance).map_err(|_| missing())
    }

    /// Starts the plugin and renders prompt `name` with `arguments`.
    pub(crate) async fn get_prompt(
        &self,
        store: &mut Store<CallState>,
        name: &str,
        arguments: &std::collections::BTreeMap<String, String>,
    ) -> GuestResult<Result<RenderedPrompt, ToolFailure>> {
        let plugin = self.prompting(store).await?;
        let rendered = plugin
            .toolwarden_tool_prompts()
            .call_get_prompt(&mut *store, name, &pairs(arguments))
            .await
            .map_err(|e| (Phase::Call, e))?;
        Ok(match rendered {
            Ok(rendered) => Ok(RenderedPrompt {
                description: rendered.description,
                messages: rendered
                    .messages
                    .into_iter()
                    .map(|m| PromptMessage {
                        role: match m.role {
                            wit::Role::User => Role::User,
                            wit::Role::Assistant => Role::Assistant,
                        },
                        content: block!(v0_3_prompts, m.content),
                    })
                    .collect(),
            }),
            Err(wit::ToolError::InvalidArgs(m)) => Err(ToolFailure::InvalidArgs(m)),
            Err(wit::ToolError::NotFound(m)) => Err(ToolFailure::NotFound(m)),
            Err(wit::ToolError::Failed(m)) => Err(ToolFailure::Failed(m)),
        })
    }

    /// Starts the plugin and asks what argument `argument` of prompt
    /// `name` could be, given `value` so far and the `context` filled in.
    pub(crate) async fn complete(
        &self,
        store: &mut Store<CallState>,
        name: &str,
        argument: &str,
        value: &str,
        context: &std::collections::BTreeMap<String, String>,
    ) -> GuestResult<Vec<String>> {
        let plugin = self.prompting(store).await?;
        plugin
            .toolwarden_tool_prompts()
            .call_complete(&mut *store, name, argument, value, &pairs(context))
            .await
            .map_err(|e| (Phase::Call, e))
    }
}
