//! Resources (contract 0.3.0), governed like calls: the one place that
//! orders their steps. A URI belongs to the plugin that claims the longest
//! prefix of it; the session's profile must offer it, and the policy's
//! resource rules decide (default deny); only then is the plugin asked, in
//! a sandbox that cannot write, reach the network or call tools; what it
//! returns is masked and held to the output limit. Every `resources/read`
//! is in the audit log under `resource:URI`: the request, the decision and
//! how it ended. A template's completion is decided the same way, by the
//! template's text, and is not recorded.
//!
//! With `[resources] workspace = true` the workspace's files are resources
//! too, under `file://` URIs: a URI leads where the workspace step resolves
//! it (inside only, never to the host's files), the policy decides on where
//! it leads and on how it was written (so neither a link nor a spelling
//! walks around a deny rule), and the host reads the file itself, under the
//! workspace's shared lease, within the output limit.

use super::Controller;
use super::prompts::{OfferRequest, bounded, open_trail, record_request, too_large};
use super::trail::Trail;
use crate::audit::Event;
use crate::call::{CallId, CallRequest};
use crate::content::Block;
use crate::content::ResourceContents;
use crate::outcome::{CallError, ErrorCode};
use crate::policy::{Offered, Verdict, Who};
use crate::registry::Plugin;
use crate::resource::{MAX_URI, ResourceContent, ResourceSpec, TemplateSpec};
use crate::workspace::{is_file_uri, media_type};
use std::sync::Arc;
use std::time::Instant;

/// The prefix a resource read's records carry in the audit log's tool
/// column, before the URI.
pub const RESOURCE_RECORD_PREFIX: &str = "resource:";

/// What serves a URI a session may read.
enum Source {
    Plugin(Arc<Plugin>),
    /// A workspace file, at this resolved workspace-relative path.
    Workspace(String),
}

/// What a rule's `plugin` globs see for a workspace file: no plugin.
const NO_PLUGIN: &str = "";

impl Controller {
    /// Whether a session with `profile`, asked for by `caller`, may read
    /// `uri` (or fill in template `uri`) of the plugin file `plugin`.
    fn may_read(
        &self,
        plugin: &str,
        uri: &str,
        profile: Option<&str>,
        caller: Option<&crate::caller::Caller>,
    ) -> crate::policy::Decision {
        if !self.config.resource_set(profile).includes(uri) {
            return crate::policy::Decision {
                verdict: Verdict::Deny,
                matched: Default::default(),
                reason: Arc::from(format!(
                    "this session's profile does not offer `{}`",
                    crate::presentation::one_line(uri)
                )),
                depends_on_args: false,
                approvers: Default::default(),
            };
        }
        self.config
            .policy
            .decide_offered(Offered::Resource, uri, plugin, Who::Known(caller))
    }

    /// Whether the session may read the workspace file `rel`, asked for as
    /// `written`: both where it leads and how it was written must be
    /// allowed, and the first refusal is the decision.
    fn may_read_file(
        &self,
        rel: &str,
        written: &str,
        profile: Option<&str>,
        caller: Option<&crate::caller::Caller>,
    ) -> crate::policy::Decision {
        let resolved = self.workspace.file_uri(rel);
        let decision = self.may_read(NO_PLUGIN, &resolved, profile, caller);
        if decision.verdict != Verdict::Allow || written == resolved {
            return decision;
        }
        self.may_read(NO_PLUGIN, written, profile, caller)
    }

    /// The resources a session with `profile`, asked for by `caller`, is
    /// shown, each through `show`: those it may read.
    pub fn offered_resources<R>(
        &self,
        profile: Option<&str>,
        caller: Option<&crate::caller::Caller>,
        mut show: impl FnMut(&ResourceSpec) -> R,
    ) -> Vec<R> {
        let registry = self.registry();
        let mut shown = Vec::new();
        for plugin in registry.plugins() {
            for resource in &plugin.catalog().resources {
                if self
                    .may_read(plugin.file_name(), &resource.uri, profile, caller)
                    .verdict
                    == Verdict::Allow
                {
                    shown.push(show(resource));
                }
            }
        }
        let files = self.config.workspace_files;
        if files.offered {
            for rel in self.workspace.listing(files.max_listed) {
                let uri = self.workspace.file_uri(&rel);
                if self.may_read(NO_PLUGIN, &uri, profile, caller).verdict == Verdict::Allow {
                    shown.push(show(&ResourceSpec {
                        uri,
                        mime_type: media_type(&rel).map(str::to_owned),
                        name: rel,
                        title: None,
                        description: None,
                    }));
                }
            }
        }
        shown
    }

    /// The resource templates a session is shown: those whose text its
    /// profile and the policy let it read.
    pub fn offered_templates<R>(
        &self,
        profile: Option<&str>,
        caller: Option<&crate::caller::Caller>,
        mut show: impl FnMut(&TemplateSpec) -> R,
    ) -> Vec<R> {
        let registry = self.registry();
        let mut shown = Vec::new();
        for plugin in registry.plugins() {
            for template in &plugin.catalog().templates {
                let text = &template.uri_template;
                if self
                    .may_read(plugin.file_name(), text, profile, caller)
                    .verdict
                    == Verdict::Allow
                {
                    shown.push(show(template));
                }
            }
        }
        shown
    }

    /// What serves `request`'s URI, once the session may read it; the
    /// decision goes on the trail, if one is kept.
    fn admitted_uri(
        &self,
        request: &OfferRequest,
        trail: Option<&mut Trail>,
    ) -> Result<Source, CallError> {
        if let Some(caller) = request.caller.as_deref() {
            self.owners.check(&request.session, caller)?;
        }
        let uri = &request.name;
        if uri.len() > MAX_URI || uri.chars().any(char::is_control) {
            return Err(CallError::new(
                ErrorCode::InvalidArgs,
                format!("a URI is at most {MAX_URI} bytes with no control character"),
            ));
        }
        let (profile, caller) = (request.profile.as_deref(), request.caller.as_deref());
        let (source, decision) = if is_file_uri(uri) {
            let rel = self.workspace_file(uri)?;
            let decision = self.may_read_file(&rel, uri, profile, caller);
            (Source::Workspace(rel), decision)
        } else {
            let registry = self.registry();
            let plugin = registry.resource_owner(uri).cloned().ok_or_else(|| {
                CallError::new(
                    ErrorCode::UnknownTool,
                    format!(
                        "no resource `{}`: no plugin serves that URI",
                        crate::presentation::one_line(uri)
                    ),
                )
            })?;
            let decision = self.may_read(plugin.file_name(), uri, profile, caller);
            (Source::Plugin(plugin), decision)
        };
        if let Some(trail) = trail {
            trail.events.push(Event::policy(&decision));
        }
        if decision.verdict != Verdict::Allow {
            return Err(CallError::new(
                ErrorCode::PolicyDenied,
                decision.reason.to_string(),
            ));
        }
        Ok(source)
    }

    /// The workspace file a `file:` URI names, resolved; `UnknownTool` (a
    /// URI nobody serves) when the workspace's files are not offered or it
    /// leads nowhere a session could read.
    fn workspace_file(&self, uri: &str) -> Result<String, CallError> {
        let shown = crate::presentation::one_line(uri);
        if !self.config.workspace_files.offered {
            return Err(CallError::new(
                ErrorCode::UnknownTool,
                format!(
                    "no resource `{shown}`: the workspace's files are not offered as resources \
                     (the operator turns them on with `[resources] workspace = true`)"
                ),
            ));
        }
        self.workspace
            .locate_file_uri(uri)
            .map_err(|why| CallError::new(ErrorCode::UnknownTool, format!("no resource: {why}")))
    }

    /// Whether the session may read `request`'s URI: what a subscription
    /// to it needs. Nothing runs and nothing is recorded.
    pub fn check_resource(&self, request: &OfferRequest) -> Result<(), CallError> {
        self.admitted_uri(request, None).map(drop)
    }

    /// Reads a resource, governed and recorded.
    pub async fn read_resource(
        &self,
        request: OfferRequest,
    ) -> Result<Vec<ResourceContent>, CallError> {
        let started = Instant::now();
        let uri = serde_json::Value::String(request.name.clone());
        let arguments = [("uri".to_owned(), uri)].into_iter().collect();
        let (recorded, mut trail) = open_trail(RESOURCE_RECORD_PREFIX, &request, arguments);
        let outcome = self.read(&request, &recorded, &mut trail).await;
        let summary = outcome.as_ref().map(|parts| {
            let blocks = parts.iter().map(|part| Block::Resource {
                uri: String::new(),
                mime_type: part.mime_type.clone(),
                contents: part.contents.clone(),
            });
            (
                parts.iter().map(ResourceContent::size).sum(),
                blocks.collect(),
            )
        });
        trail.record_end(&self.records, started, summary);
        outcome
    }

    async fn read(
        &self,
        request: &OfferRequest,
        recorded: &CallRequest,
        trail: &mut Trail,
    ) -> Result<Vec<ResourceContent>, CallError> {
        record_request(recorded, trail)?;
        let source = self.admitted_uri(request, Some(&mut *trail))?;
        trail.commit(&self.records, "the resource was not read")?;
        trail.ran = true;
        let uri: Arc<str> = Arc::from(request.name.as_str());
        let max = self.config.limits.max_output_bytes;
        let plugin = match source {
            Source::Plugin(plugin) => plugin,
            Source::Workspace(rel) => return self.read_workspace_file(&uri, &rel, max).await,
        };
        trail.ran_on = Some(crate::audit::RanOn(Arc::clone(&plugin)));
        let parts = self
            .sandbox
            .read_resource(&plugin, &uri, &recorded.call_id)
            .await?
            .map_err(|failure| match failure {
                crate::engine::ToolFailure::NotFound(m) => CallError::new(
                    ErrorCode::UnknownTool,
                    format!("no resource `{}`: {m}", crate::presentation::one_line(&uri)),
                ),
                other => other.into_error(),
            })?;
        if parts.iter().map(ResourceContent::size).sum::<usize>() > max {
            return Err(too_large("a resource", max));
        }
        if parts.is_empty() {
            return Err(CallError::new(
                ErrorCode::InvalidToolOutput,
                "the plugin read the resource as nothing; a URI it does not serve is \
                 `not-found`, a defect in the plugin",
            ));
        }
        Ok(parts)
    }

    /// Workspace file `rel`, asked for as `uri`, as one part: text (the
    /// credentials' secrets masked) when it is UTF-8, bytes otherwise;
    /// `too_large` past `max`.
    async fn read_workspace_file(
        &self,
        uri: &str,
        rel: &str,
        max: usize,
    ) -> Result<Vec<ResourceContent>, CallError> {
        let bytes = self
            .workspace
            .read_file(rel, max.saturating_add(1))
            .await
            .ok_or_else(|| {
                CallError::new(
                    ErrorCode::UnknownTool,
                    format!(
                        "no resource `{}`: no such file in the workspace",
                        crate::presentation::one_line(uri)
                    ),
                )
            })?;
        let mime_type = media_type(rel).map(str::to_owned);
        let contents = match String::from_utf8(bytes) {
            Ok(mut text) => {
                // As in what a read_file call returns: a credential's
                // secret never leaves the host, whoever wrote it down.
                if let Some(secrets) = self.sandbox.engine().secrets() {
                    secrets.mask_string(&mut text);
                }
                ResourceContents::Text(text)
            }
            Err(bytes) => ResourceContents::Blob(crate::content::Bytes(bytes.into_bytes())),
        };
        let part = ResourceContent {
            uri: uri.to_owned(),
            mime_type,
            contents,
        };
        if part.size() > max {
            return Err(CallError::new(
                ErrorCode::OutputTooLarge,
                format!(
                    "the file is over the {max}-byte limit of what a read returns \
                     (`limits.max_output_kb`)"
                ),
            ));
        }
        Ok(vec![part])
    }

    /// Values for variable `variable` of the template `request` names
    /// (its text), given `value` so far: at most `MAX_COMPLETIONS`, none
    /// for a template the session may not read or no plugin serves.
    pub async fn complete_template(
        &self,
        request: OfferRequest,
        variable: &str,
        value: &str,
    ) -> Result<Vec<String>, CallError> {
        let registry = self.registry();
        let Some(plugin) = registry.template_owner(&request.name).cloned() else {
            return Ok(Vec::new());
        };
        if self.admitted_uri(&request, None).is_err() {
            return Ok(Vec::new());
        }
        let template: Arc<str> = Arc::from(request.name.as_str());
        let values = self
            .sandbox
            .complete_template(
                &plugin,
                &template,
                (variable, value),
                &request.arguments,
                &CallId::new(),
            )
            .await?;
        bounded(values, self.config.limits.max_output_bytes)
    }
}
