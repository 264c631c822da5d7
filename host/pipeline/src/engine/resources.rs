//! The optional `resources` export (0.3.0): a plugin's catalog, a URI read,
//! a template variable completed, in the host's types. Only asks and
//! converts: the sandbox step decides where it runs, the registry checks
//! the catalog, the policy who may read what.

use super::bindings::v0_3_resources;
use super::contract::{GuestResult, Phase, PluginPre, ToolFailure};
use super::prompting::pairs;
use super::state::CallState;
use crate::content::{Bytes, ResourceContents};
use crate::resource::{Catalog, ResourceContent, ResourceSpec, TemplateSpec};
use std::collections::BTreeMap;
use wasmtime::Store;
use wasmtime::component::Instance;

use v0_3_resources::exports::toolwarden::tool::resources as wit;
use v0_3_resources::exports::toolwarden::tool::tool as wit_tool;

/// The plugin's catalog; an empty one when it does not export `resources`.
pub(super) async fn declared(
    instance: &Instance,
    store: &mut Store<CallState>,
) -> wasmtime::Result<Catalog> {
    let Ok(plugin) = v0_3_resources::ServingPlugin::new(&mut *store, instance) else {
        return Ok(Catalog::default());
    };
    let catalog = plugin
        .toolwarden_tool_resources()
        .call_catalog(&mut *store)
        .await?;
    Ok(Catalog {
        prefixes: catalog.prefixes,
        resources: catalog
            .resources
            .into_iter()
            .map(|r| ResourceSpec {
                uri: r.uri,
                name: r.name,
                title: r.title,
                description: r.description,
                mime_type: r.mime_type,
            })
            .collect(),
        templates: catalog
            .templates
            .into_iter()
            .map(|t| TemplateSpec {
                uri_template: t.uri_template,
                name: t.name,
                title: t.title,
                description: t.description,
                mime_type: t.mime_type,
            })
            .collect(),
    })
}

impl PluginPre {
    /// An instance with the `resources` export, or why there is none.
    async fn serving(
        &self,
        store: &mut Store<CallState>,
    ) -> GuestResult<v0_3_resources::ServingPlugin> {
        let missing = || {
            (
                Phase::Instantiate,
                wasmtime::format_err!("the plugin does not export `resources`"),
            )
        };
        let instance = self.instantiate_later(store).await?.ok_or_else(missing)?;
        v0_3_resources::ServingPlugin::new(&mut *store, &instance).map_err(|_| missing())
    }

    /// Starts the plugin and reads `uri`.
    pub(crate) async fn read_resource(
        &self,
        store: &mut Store<CallState>,
        uri: &str,
    ) -> GuestResult<Result<Vec<ResourceContent>, ToolFailure>> {
        let plugin = self.serving(store).await?;
        let read = plugin
            .toolwarden_tool_resources()
            .call_read(&mut *store, uri)
            .await
            .map_err(|e| (Phase::Call, e))?;
        Ok(match read {
            Ok(parts) => Ok(parts
                .into_iter()
                .map(|part| ResourceContent {
                    uri: part.uri,
                    mime_type: part.mime_type,
                    contents: match part.contents {
                        wit_tool::ResourceContents::Text(text) => ResourceContents::Text(text),
                        wit_tool::ResourceContents::Blob(blob) => {
                            ResourceContents::Blob(Bytes(blob))
                        }
                    },
                })
                .collect()),
            Err(wit::ToolError::InvalidArgs(m)) => Err(ToolFailure::InvalidArgs(m)),
            Err(wit::ToolError::NotFound(m)) => Err(ToolFailure::NotFound(m)),
            Err(wit::ToolError::Failed(m)) => Err(ToolFailure::Failed(m)),
        })
    }

    /// Starts the plugin and asks what variable `variable` of template
    /// `template` could be, given `value` so far and the `context`.
    pub(crate) async fn complete_template(
        &self,
        store: &mut Store<CallState>,
        (template, variable, value): (&str, &str, &str),
        context: &BTreeMap<String, String>,
    ) -> GuestResult<Vec<String>> {
        let plugin = self.serving(store).await?;
        plugin
            .toolwarden_tool_resources()
            .call_complete(&mut *store, template, variable, value, &pairs(context))
            .await
            .map_err(|e| (Phase::Call, e))
    }
}
