//! What the plugins offer besides tools (contract 0.3.0): prompts by name,
//! resources by the URI prefix their plugin owns. Finds them for a request
//! and keeps two plugins from claiming one prompt name or overlapping
//! prefixes (the registry's `add` asks); decides nothing about who may have
//! them.

use super::{Plugin, Registry};
use crate::outcome::{CallError, ErrorCode};
use crate::profile::ToolSet;
use crate::prompt::PromptSpec;
use crate::resource::Catalog;
use std::sync::Arc;

/// One prompt, ready to be rendered: its declaration and plugin.
#[derive(Debug)]
pub struct Prompt {
    pub(crate) spec: PromptSpec,
    pub(crate) plugin: Arc<Plugin>,
}

impl Prompt {
    /// What the plugin declared for it.
    pub fn spec(&self) -> &PromptSpec {
        &self.spec
    }

    /// The plugin that serves it.
    pub fn plugin(&self) -> &Arc<Plugin> {
        &self.plugin
    }
}

impl Registry {
    /// A prefix of `catalog` that overlaps one a plugin here claims, and
    /// that plugin.
    pub(super) fn claimant(&self, catalog: &Catalog) -> Option<(String, &Arc<Plugin>)> {
        catalog.prefixes.iter().find_map(|prefix| {
            self.plugins.iter().find_map(|other| {
                other
                    .catalog
                    .prefixes
                    .iter()
                    .any(|theirs| crate::resource::overlap(prefix, theirs))
                    .then(|| (prefix.clone(), other))
            })
        })
    }

    /// The plugin that owns `uri` (by the longest prefix it claims), if any.
    pub fn resource_owner(&self, uri: &str) -> Option<&Arc<Plugin>> {
        self.plugins
            .iter()
            .filter_map(|p| Some((p.catalog.prefix_of(uri)?.len(), p)))
            .max_by_key(|(len, _)| *len)
            .map(|(_, p)| p)
    }

    /// The plugin that serves template `template`, if any.
    pub fn template_owner(&self, template: &str) -> Option<&Arc<Plugin>> {
        self.plugins.iter().find(|p| {
            p.catalog
                .templates
                .iter()
                .any(|t| t.uri_template == template)
        })
    }

    /// The prompts a session with prompt set `set` sees, in name order.
    pub fn prompts_in<'a>(&'a self, set: &'a ToolSet<'_>) -> impl Iterator<Item = &'a Arc<Prompt>> {
        self.prompts
            .values()
            .filter(|prompt| set.includes(&prompt.spec.name))
    }

    /// The prompt `name`, if a session with prompt set `set` may see it;
    /// else what to tell the person.
    pub fn prompt(&self, name: &str, set: &ToolSet<'_>) -> Result<&Arc<Prompt>, CallError> {
        self.prompts
            .get(name)
            .filter(|_| set.includes(name))
            .ok_or_else(|| {
                let known: Vec<&str> = self.prompts_in(set).map(|p| p.spec.name.as_str()).collect();
                CallError::new(
                    ErrorCode::UnknownTool,
                    format!(
                        "no prompt named `{}`{}; available prompts: {}",
                        crate::presentation::one_line(name),
                        crate::suggest::did_you_mean(name, known.iter().copied()),
                        if known.is_empty() {
                            "none".to_owned()
                        } else {
                            known.join(", ")
                        }
                    ),
                )
            })
    }
}
