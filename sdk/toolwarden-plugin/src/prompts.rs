//! Prompts: templates a person picks in their MCP client to start a
//! conversation, rendered by the plugin (`interface prompts` of the WIT).
//!
//! ```ignore
//! use toolwarden_plugin::{Prompt, PromptArgs, ToolError, text, user};
//!
//! fn prompts() -> Vec<Prompt> {
//!     vec![Prompt::new("review_file", "Asks the model to review one file.", |args: &PromptArgs| {
//!         let path = args.require("path")?;
//!         Ok(vec![user(text(&format!("Review `{path}` for bugs.")))])
//!     })
//!     .argument("path", "The file to review.", true)]
//! }
//!
//! toolwarden_plugin::export!(tools, prompts);
//! ```
//!
//! The host checks the arguments against what a prompt declares before it
//! asks the plugin (every required one is there, no other), decides by its
//! policy whether the session may have the prompt at all, and runs the
//! rendering with no filesystem, no network and no child calls.

use crate::bindings::exports::toolwarden::tool::prompts as wit;
use crate::{ContentBlock, ToolError};
use std::collections::BTreeMap;

pub use wit::{PromptMessage, Role};

/// The arguments a prompt is rendered with, by name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PromptArgs {
    values: BTreeMap<String, String>,
    /// False outside the host (`from_pairs`): nobody can be asked there.
    attached: bool,
}

impl PromptArgs {
    /// Arguments from name and value pairs (for unit tests of a prompt).
    pub fn from_pairs(pairs: &[(&str, &str)]) -> PromptArgs {
        PromptArgs {
            values: pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            attached: false,
        }
    }

    /// Asks the person who requested the prompt `message` with `form`, as
    /// [`crate::Context::ask`] does for a tool: the first rendering stops
    /// there, and the host renders the prompt again with the answer under
    /// `key`. Outside the host the answer is `Cancelled`.
    pub fn ask(&self, key: &str, message: &str, form: &serde_json::Value) -> crate::Answer {
        if !self.attached {
            return crate::Answer::Cancelled;
        }
        crate::bindings::toolwarden::tool::ask::question(key, message, &form.to_string())
    }

    /// The value of `name`, if it was given.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(String::as_str)
    }

    /// The value of `name`, or an `invalid-args` error that names it (the
    /// host already refuses a request without a required argument, so this
    /// is for optional ones a rendering cannot do without).
    pub fn require(&self, name: &str) -> Result<&str, ToolError> {
        self.get(name)
            .ok_or_else(|| ToolError::InvalidArgs(format!("the argument `{name}` is missing")))
    }
}

type Render = Box<dyn Fn(&PromptArgs) -> Result<Vec<PromptMessage>, ToolError>>;
type Complete = Box<dyn Fn(&str, &str, &PromptArgs) -> Vec<String>>;

/// One prompt a plugin offers.
pub struct Prompt {
    name: String,
    title: Option<String>,
    description: String,
    arguments: Vec<wit::PromptArgument>,
    render: Render,
    complete: Option<Complete>,
}

impl Prompt {
    /// A prompt `name` (`[a-z][a-z0-9_]*`) that `render` fills in.
    pub fn new<F>(name: &str, description: &str, render: F) -> Prompt
    where
        F: Fn(&PromptArgs) -> Result<Vec<PromptMessage>, ToolError> + 'static,
    {
        Prompt {
            name: name.into(),
            title: None,
            description: description.into(),
            arguments: Vec::new(),
            render: Box::new(render),
            complete: None,
        }
    }

    /// A short human-readable title.
    pub fn title(mut self, title: &str) -> Prompt {
        self.title = Some(title.into());
        self
    }

    /// An argument (`[A-Za-z][A-Za-z0-9_-]*`) the prompt takes.
    pub fn argument(mut self, name: &str, description: &str, required: bool) -> Prompt {
        self.arguments.push(wit::PromptArgument {
            name: name.into(),
            title: None,
            description: Some(description.into()),
            required,
        });
        self
    }

    /// Suggests values for an argument: `complete(argument, typed so far,
    /// the other arguments)`, best first; the host passes on at most 100.
    pub fn complete<F>(mut self, complete: F) -> Prompt
    where
        F: Fn(&str, &str, &PromptArgs) -> Vec<String> + 'static,
    {
        self.complete = Some(Box::new(complete));
        self
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Renders the prompt as the host would. Meant for unit tests.
    pub fn render(&self, args: &PromptArgs) -> Result<Vec<PromptMessage>, ToolError> {
        (self.render)(args)
    }

    fn spec(&self) -> wit::PromptSpec {
        wit::PromptSpec {
            name: self.name.clone(),
            title: self.title.clone(),
            description: self.description.clone(),
            arguments: self.arguments.clone(),
        }
    }
}

/// A message of a prompt, spoken as the person.
pub fn user(content: ContentBlock) -> PromptMessage {
    PromptMessage {
        role: Role::User,
        content,
    }
}

/// A message of a prompt, spoken as the model.
pub fn assistant(content: ContentBlock) -> PromptMessage {
    PromptMessage {
        role: Role::Assistant,
        content,
    }
}

/// A text block.
pub fn text(text: &str) -> ContentBlock {
    ContentBlock::Text(text.into())
}

#[doc(hidden)]
pub mod __private {
    use super::*;

    fn args(pairs: Vec<(String, String)>) -> PromptArgs {
        PromptArgs {
            values: pairs.into_iter().collect(),
            attached: true,
        }
    }

    pub fn specs(prompts: Vec<Prompt>) -> Vec<wit::PromptSpec> {
        prompts.iter().map(Prompt::spec).collect()
    }

    pub fn get(
        prompts: Vec<Prompt>,
        name: &str,
        arguments: Vec<(String, String)>,
    ) -> Result<wit::RenderedPrompt, ToolError> {
        let prompt = prompts
            .iter()
            .find(|p| p.name == name)
            .ok_or_else(|| ToolError::NotFound(format!("this plugin has no prompt `{name}`")))?;
        Ok(wit::RenderedPrompt {
            description: None,
            messages: prompt.render(&args(arguments))?,
        })
    }

    pub fn complete(
        prompts: Vec<Prompt>,
        name: &str,
        argument: &str,
        value: &str,
        context: Vec<(String, String)>,
    ) -> Vec<String> {
        prompts
            .iter()
            .find(|p| p.name == name)
            .and_then(|p| p.complete.as_ref())
            .map(|complete| complete(argument, value, &args(context)))
            .unwrap_or_default()
    }
}
