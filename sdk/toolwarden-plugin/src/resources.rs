//! Resources: data a client reads by URI to give the model context, served
//! by the plugin (`interface resources` of the WIT).
//!
//! ```ignore
//! use toolwarden_plugin::{ResourceContent, Resources, ToolError};
//!
//! fn resources() -> Resources {
//!     Resources::new(&["notes://"], |uri: &str| match uri {
//!         "notes://today" => Ok(vec![ResourceContent::text(uri, "text/plain", "buy milk")]),
//!         _ => Err(ToolError::NotFound(format!("no note `{uri}`"))),
//!     })
//!     .resource("notes://today", "Today's note", Some("text/plain"))
//!     .template("notes://{day}", "A day's note", Some("text/plain"))
//! }
//!
//! toolwarden_plugin::export!(tools, prompts, resources);
//! ```
//!
//! The plugin owns the URI prefixes it names (the host refuses a plugin
//! whose prefixes overlap another's, and `file:` is the host's), decides
//! nothing about who may read what (the host's policy does), and reads with
//! no filesystem, no network and no child calls.

use crate::ToolError;
use crate::bindings::exports::toolwarden::tool::resources as wit;
use crate::bindings::exports::toolwarden::tool::tool::ResourceContents;

pub use wit::ResourceContent;

type Read = Box<dyn Fn(&str) -> Result<Vec<ResourceContent>, ToolError>>;
type Complete = Box<dyn Fn(&str, &str, &str, &[(String, String)]) -> Vec<String>>;

/// What a plugin serves: its prefixes, resources and templates, and how
/// it reads them.
pub struct Resources {
    prefixes: Vec<String>,
    resources: Vec<wit::ResourceSpec>,
    templates: Vec<wit::ResourceTemplate>,
    read: Read,
    complete: Option<Complete>,
}

impl Resources {
    /// Resources under `prefixes` (`notes://`), read by `read`, which
    /// answers `ToolError::NotFound` for a URI it does not serve.
    pub fn new<F>(prefixes: &[&str], read: F) -> Resources
    where
        F: Fn(&str) -> Result<Vec<ResourceContent>, ToolError> + 'static,
    {
        Resources {
            prefixes: prefixes.iter().map(|p| (*p).to_owned()).collect(),
            resources: Vec::new(),
            templates: Vec::new(),
            read: Box::new(read),
            complete: None,
        }
    }

    /// A resource a client lists.
    pub fn resource(mut self, uri: &str, name: &str, mime_type: Option<&str>) -> Resources {
        self.resources.push(wit::ResourceSpec {
            uri: uri.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: mime_type.map(Into::into),
        });
        self
    }

    /// A family of resources a client fills in (`notes://{day}`).
    pub fn template(
        mut self,
        uri_template: &str,
        name: &str,
        mime_type: Option<&str>,
    ) -> Resources {
        self.templates.push(wit::ResourceTemplate {
            uri_template: uri_template.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: mime_type.map(Into::into),
        });
        self
    }

    /// Suggests values for a template's variable: `complete(template,
    /// variable, typed so far, the other variables)`, best first.
    pub fn complete<F>(mut self, complete: F) -> Resources
    where
        F: Fn(&str, &str, &str, &[(String, String)]) -> Vec<String> + 'static,
    {
        self.complete = Some(Box::new(complete));
        self
    }

    /// Reads `uri` as the host would. Meant for unit tests.
    pub fn read(&self, uri: &str) -> Result<Vec<ResourceContent>, ToolError> {
        (self.read)(uri)
    }
}

/// Tells the host that `uri`, one of this plugin's resources, changed, so
/// the clients subscribed to it read it again. Call it from a tool once the
/// change is made:
///
/// ```ignore
/// toolwarden_plugin::resources::changed("notes://today")?;
/// ```
///
/// An error for a URI outside the plugin's prefixes, or past the 64th
/// distinct URI of one call. In a preview's rehearsal it tells nobody.
pub fn changed(uri: &str) -> Result<(), String> {
    crate::bindings::toolwarden::tool::changes::resource_changed(uri)
}

impl ResourceContent {
    /// Text at `uri`.
    pub fn text(uri: &str, mime_type: &str, text: &str) -> ResourceContent {
        ResourceContent {
            uri: uri.into(),
            mime_type: Some(mime_type.into()),
            contents: ResourceContents::Text(text.into()),
        }
    }

    /// Bytes at `uri`.
    pub fn blob(uri: &str, mime_type: &str, bytes: Vec<u8>) -> ResourceContent {
        ResourceContent {
            uri: uri.into(),
            mime_type: Some(mime_type.into()),
            contents: ResourceContents::Blob(bytes),
        }
    }
}

#[doc(hidden)]
pub mod __private {
    use super::*;

    pub fn catalog(resources: Resources) -> wit::ResourceCatalog {
        wit::ResourceCatalog {
            prefixes: resources.prefixes,
            resources: resources.resources,
            templates: resources.templates,
        }
    }

    pub fn read(resources: Resources, uri: &str) -> Result<Vec<ResourceContent>, ToolError> {
        resources.read(uri)
    }

    pub fn complete(
        resources: Resources,
        template: &str,
        variable: &str,
        value: &str,
        context: Vec<(String, String)>,
    ) -> Vec<String> {
        resources
            .complete
            .map(|complete| complete(template, variable, value, &context))
            .unwrap_or_default()
    }

    /// The resources of a plugin that serves none.
    pub fn none() -> Resources {
        Resources::new(&[], |uri| {
            Err(ToolError::NotFound(format!(
                "this plugin serves no `{uri}`"
            )))
        })
    }
}
