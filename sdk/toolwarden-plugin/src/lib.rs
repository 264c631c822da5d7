//! Write a toolwarden tool as a plain Rust function.
//!
//! A tool is a function from an argument type to a result type. This crate
//! derives everything else the host needs from those two types: the input and
//! output JSON Schemas (inside the subset the host enforces, objects closed
//! with `additionalProperties: false`), the `tool-spec`, argument parsing with
//! readable `invalid-args` messages, and the component export glue.
//!
//! ```ignore
//! use schemars::JsonSchema;
//! use serde::{Deserialize, Serialize};
//! use toolwarden_plugin::{Context, Effects, Risk, Tool, ToolError};
//!
//! /// Arguments of `greet`; doc comments become the schema's descriptions.
//! #[derive(Deserialize, JsonSchema)]
//! struct Args {
//!     /// Who to greet.
//!     name: String,
//! }
//!
//! #[derive(Serialize, JsonSchema)]
//! struct Greeting {
//!     text: String,
//! }
//!
//! fn greet(args: Args, _ctx: &Context) -> Result<Greeting, ToolError> {
//!     Ok(Greeting { text: format!("Hello, {}!", args.name) })
//! }
//!
//! fn tools() -> Vec<Tool> {
//!     vec![Tool::new("greet", "Greets someone by name.", greet)
//!         .effects(Effects::READ_ONLY | Effects::IDEMPOTENT)
//!         .risk(Risk::Safe)]
//! }
//!
//! toolwarden_plugin::export!(tools);
//! ```
//!
//! The crate never decides policy: what a tool declares here (effects, risk,
//! filesystem) is a claim the host checks and governs, not a permission.

mod args;
pub mod client;
mod context;
mod export;
pub mod http;
pub mod prompts;
pub mod resources;
mod schema;
pub mod tools;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

#[doc(hidden)]
pub mod bindings {
    wit_bindgen::generate!({
        path: "wit",
        world: "full-plugin",
        pub_export_macro: true,
        export_macro_name: "export_component",
        default_bindings_module: "toolwarden_plugin::bindings",
        // Not `Eq`: a sampling request's temperature is a float.
        additional_derives: [PartialEq],
    });
}

pub use bindings::exports::toolwarden::tool::present::{Presentation, View};
use bindings::exports::toolwarden::tool::tool as wit;
pub use bindings::toolwarden::tool::ask::Answer;
pub use bindings::toolwarden::tool::compose::{ChildError, ChildOutput};
pub use bindings::toolwarden::tool::host::Level;
pub use wit::{
    ContentBlock, Effects, EmbeddedResource, Filesystem, Media, ResourceContents, ResourceLink,
    Risk, ToolError,
};

pub use args::{WebUrl, WorkspacePath};
pub use context::Context;
pub use export::{__no_prompts, __private};
pub use prompts::{Prompt, PromptArgs, PromptMessage, Role, assistant, text, user};
pub use resources::{ResourceContent, Resources};
pub use schema::{input_schema, output_schema};

/// A result with text for the model beside the JSON value, and content
/// blocks after it. Return a plain value when the JSON says it all; the
/// host then shows the JSON.
pub struct Reply<V> {
    value: V,
    text: Option<String>,
    content: Vec<ContentBlock>,
}

impl<V> Reply<V> {
    pub fn new(value: V) -> Reply<V> {
        Reply {
            value,
            text: None,
            content: Vec::new(),
        }
    }

    /// What the model reads instead of the JSON (the value still goes to
    /// clients that take structured output, checked against the schema).
    pub fn with_text(mut self, text: impl Into<String>) -> Reply<V> {
        self.text = Some(text.into());
        self
    }

    /// A content block after the text: see [`image`], [`audio`],
    /// [`resource_link`] and [`embedded`]. Every byte counts against the
    /// host's output limit; clients that cannot show a kind get a line
    /// describing it.
    pub fn with_block(mut self, block: ContentBlock) -> Reply<V> {
        self.content.push(block);
        self
    }
}

/// An image block (`mime_type` `image/...`).
pub fn image(mime_type: &str, data: Vec<u8>) -> ContentBlock {
    ContentBlock::Image(Media {
        mime_type: mime_type.into(),
        data,
    })
}

/// An audio block (`mime_type` `audio/...`).
pub fn audio(mime_type: &str, data: Vec<u8>) -> ContentBlock {
    ContentBlock::Audio(Media {
        mime_type: mime_type.into(),
        data,
    })
}

/// A link to a resource (`uri` absolute).
pub fn resource_link(uri: &str, name: &str, mime_type: Option<&str>) -> ContentBlock {
    ContentBlock::ResourceLink(ResourceLink {
        uri: uri.into(),
        name: name.into(),
        mime_type: mime_type.map(Into::into),
        description: None,
    })
}

/// A resource with its content (`uri` absolute).
pub fn embedded(uri: &str, mime_type: Option<&str>, contents: ResourceContents) -> ContentBlock {
    ContentBlock::Embedded(EmbeddedResource {
        uri: uri.into(),
        mime_type: mime_type.map(Into::into),
        contents,
    })
}

/// What a handler may return: a serializable value, or a [`Reply`].
pub trait IntoReply {
    /// The type whose schema is the tool's output schema.
    type Value: Serialize + schemars::JsonSchema;
    fn into_reply(self) -> Reply<Self::Value>;
}

impl<V: Serialize + schemars::JsonSchema> IntoReply for V {
    type Value = V;
    fn into_reply(self) -> Reply<V> {
        Reply::new(self)
    }
}

impl<V: Serialize + schemars::JsonSchema> IntoReply for Reply<V> {
    type Value = V;
    fn into_reply(self) -> Reply<V> {
        self
    }
}

/// The output a handler produced, as the host receives it.
#[derive(Debug, Clone, PartialEq)]
pub struct Output {
    /// The result as JSON text.
    pub value: String,
    /// Text for the model, if the handler gave one.
    pub text: Option<String>,
    /// Content blocks after the text.
    pub content: Vec<ContentBlock>,
}

type Handler = Box<dyn Fn(&str, &Context) -> Result<Output, ToolError>>;
type Previewer = Box<dyn Fn(&str, &Context) -> Option<Presentation>>;
type ResultViewer = Box<dyn Fn(&str, &str) -> Option<Presentation>>;

/// One tool: its declaration and its handler.
pub struct Tool {
    name: String,
    title: String,
    description: String,
    /// Derived only when the spec is asked for (at load): every call runs
    /// in a fresh instance, so anything computed here is paid per call.
    input: fn() -> Value,
    output: fn() -> Value,
    effects: Effects,
    risk: Risk,
    filesystem: Filesystem,
    timeout_ms: Option<u32>,
    origins: Vec<String>,
    credentials: Vec<String>,
    keyed: bool,
    handler: Handler,
    preview: Option<Previewer>,
    show_result: Option<ResultViewer>,
}

impl Tool {
    /// A tool named `name` (`[a-z][a-z0-9_]*`, at most 64 characters) that
    /// runs `handler`. `description` is what the model reads to choose the
    /// tool: say what it does, when to use it and when not to.
    ///
    /// Until told otherwise the tool declares no effects, `normal` risk, no
    /// filesystem and no timeout hint: the most conservative claims, which
    /// keep it from running beside other calls.
    pub fn new<A, R, F>(name: &str, description: &str, handler: F) -> Tool
    where
        A: DeserializeOwned + schemars::JsonSchema,
        R: IntoReply,
        F: Fn(A, &Context) -> Result<R, ToolError> + 'static,
    {
        let tool_name = name.to_owned();
        Tool {
            name: name.into(),
            title: name.into(),
            description: description.into(),
            input: input_schema::<A>,
            output: output_schema::<R::Value>,
            effects: Effects::empty(),
            risk: Risk::Normal,
            filesystem: Filesystem::None,
            timeout_ms: None,
            origins: Vec::new(),
            credentials: Vec::new(),
            keyed: false,
            preview: None,
            show_result: None,
            handler: Box::new(move |args, ctx| {
                let args: A = serde_json::from_str(args).map_err(|e| {
                    ToolError::InvalidArgs(format!(
                        "invalid arguments for `{tool_name}`: {}",
                        without_location(&e)
                    ))
                })?;
                let reply = handler(args, ctx)?.into_reply();
                let value = serde_json::to_string(&reply.value).map_err(|e| {
                    ToolError::Failed(format!("`{tool_name}` could not encode its result: {e}"))
                })?;
                Ok(Output {
                    value,
                    text: reply.text,
                    content: reply.content,
                })
            }),
        }
    }

    /// How a call of this tool looks before it runs, for the person the
    /// policy asks to approve it: `preview` gets the call's arguments (the
    /// handler's type) and returns a [`Presentation`], e.g. a
    /// [`View::Diff`] of the file a write would leave. The host runs it in
    /// a sandbox that cannot write; `None` (or arguments it cannot read)
    /// means no preview.
    pub fn preview<A, F>(mut self, preview: F) -> Tool
    where
        A: DeserializeOwned,
        F: Fn(A, &Context) -> Option<Presentation> + 'static,
    {
        self.preview = Some(Box::new(move |args, ctx| {
            serde_json::from_str(args)
                .ok()
                .and_then(|args| preview(args, ctx))
        }));
        self
    }

    /// How a finished call of this tool looks, for a person reading it
    /// back (the console's call page, `toolwarden audit show`):
    /// `show_result` gets the call's arguments and its value (the
    /// handler's types, as the audit log kept them, secrets masked) and
    /// returns a [`Presentation`], e.g. a [`View::Read`] of the text a read
    /// returned. The host runs it later, with no filesystem and no network,
    /// so it must depend on its arguments alone; `None` (or arguments or a
    /// value it cannot read, such as a masked secret) means no view.
    pub fn show_result<A, V, F>(mut self, show_result: F) -> Tool
    where
        A: DeserializeOwned,
        V: DeserializeOwned,
        F: Fn(A, V) -> Option<Presentation> + 'static,
    {
        self.show_result = Some(Box::new(move |args, value| {
            let args = serde_json::from_str(args).ok()?;
            let value = serde_json::from_str(value).ok()?;
            show_result(args, value)
        }));
        self
    }

    /// Declares the argument schema by hand instead of deriving it from the
    /// handler's type: for what `schemars` cannot express (`if`/`then`/`else`,
    /// `$anchor`, `dependentRequired`, `$schema` kept for clients that read
    /// it). The host enforces it before the handler runs, so the handler's
    /// type must accept every value it allows. A function, not a value: it
    /// runs only when the host asks for the spec, never on a call.
    pub fn with_input_schema(mut self, schema: fn() -> Value) -> Tool {
        self.input = schema;
        self
    }

    /// A short human-readable title (default: the name).
    pub fn title(mut self, title: &str) -> Tool {
        self.title = title.into();
        self
    }

    /// What the tool does to the world; see the WIT `effects` flags. Declare
    /// only what is true: a flag left out is a promise.
    pub fn effects(mut self, effects: Effects) -> Tool {
        self.effects = effects;
        self
    }

    /// How much harm a wrong call can do.
    pub fn risk(mut self, risk: Risk) -> Tool {
        self.risk = risk;
        self
    }

    /// The filesystem access the tool needs; the host grants at most this.
    pub fn filesystem(mut self, filesystem: Filesystem) -> Tool {
        self.filesystem = filesystem;
        self
    }

    /// How long a call normally needs; the host caps it by its own limit.
    pub fn timeout_ms(mut self, timeout_ms: u32) -> Tool {
        self.timeout_ms = Some(timeout_ms);
        self
    }

    /// Origins the tool sends HTTP requests to (`https://api.github.com`,
    /// `https://*.wikipedia.org`, `http://127.0.0.1:*`; see `network-need`
    /// in the WIT). Declaring any also declares the `open-world` effect.
    /// The host grants at most these, narrowed to what its operator allows,
    /// and refuses every request to anything else.
    pub fn network(mut self, origins: &[&str]) -> Tool {
        self.origins = origins.iter().map(|o| o.to_string()).collect();
        self
    }

    /// A credential (by the name the operator defines it under) that the
    /// host adds to this tool's requests to the origins it is bound to.
    /// The tool never sees its value.
    pub fn credential(mut self, name: &str) -> Tool {
        self.credentials.push(name.into());
        self
    }

    /// Makes the tool take effect once per key: the host derives a key
    /// from the session, the tool, the arguments and the approval, and
    /// answers a repeat with the output the first successful call
    /// returned, without running the tool again. For writes a model may
    /// repeat (create an issue, append an entry); never for reads.
    pub fn keyed(mut self) -> Tool {
        self.keyed = true;
        self
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The JSON Schema of the arguments: derived, or declared with
    /// [`Tool::with_input_schema`].
    pub fn input_schema(&self) -> Value {
        (self.input)()
    }

    /// The derived JSON Schema of the result.
    pub fn output_schema(&self) -> Value {
        (self.output)()
    }

    /// Runs the tool on `args_json` as the host would. Meant for unit tests
    /// of a plugin.
    pub fn call(&self, args_json: &str, ctx: &Context) -> Result<Output, ToolError> {
        (self.handler)(args_json, ctx)
    }

    fn spec(&self) -> wit::ToolSpec {
        let network =
            (!self.origins.is_empty() || !self.credentials.is_empty()).then(|| wit::NetworkNeed {
                origins: self.origins.clone(),
                credentials: self.credentials.clone(),
            });
        let effects = if network.is_some() {
            self.effects | Effects::OPEN_WORLD
        } else {
            self.effects
        };
        wit::ToolSpec {
            name: self.name.clone(),
            title: self.title.clone(),
            description: self.description.clone(),
            input_schema: self.input_schema().to_string(),
            output_schema: Some(self.output_schema().to_string()),
            effects,
            risk: self.risk,
            filesystem: self.filesystem,
            timeout_ms: self.timeout_ms,
            network,
        }
    }
}

/// serde_json appends "at line 1 column 17" to its messages; the arguments
/// are one line of JSON the model never sees, so the position only confuses.
fn without_location(e: &serde_json::Error) -> String {
    let text = e.to_string();
    match text.rsplit_once(" at line ") {
        Some((message, _)) => message.to_owned(),
        None => text,
    }
}
