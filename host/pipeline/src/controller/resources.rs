//! Resources (contract 0.3.0), governed like calls: the one place that
//! orders their steps. A URI belongs to the plugin that claims the longest
//! prefix of it; the session's profile must offer it, and the policy's
//! resource rules decide (default deny); only then is the plugin asked, in
//! a sandbox that cannot write, reach the network or call tools; what it
//! returns is masked and held to the output limit. Every `resources/read`
//! is in the audit log under `resource:URI`: the request, the decision and
//! how it ended. A template's completion is decided the same way, by the
//! template's text, and is not recorded.

use super::Controller;
use super::prompts::{OfferRequest, bounded, open_trail, record_request, too_large};
use super::trail::Trail;
use crate::audit::Event;
use crate::call::{CallId, CallRequest};
use crate::content::Block;
use crate::outcome::{CallError, ErrorCode};
use crate::policy::{Offered, Verdict, Who};
use crate::registry::Plugin;
use crate::resource::{MAX_URI, ResourceContent, ResourceSpec, TemplateSpec};
use std::sync::Arc;
use std::time::Instant;

/// The prefix a resource read's records carry in the audit log's tool
/// column, before the URI.
pub const RESOURCE_RECORD_PREFIX: &str = "resource:";

impl Controller {
    /// Whether a session with `profile`, asked for by `caller`, may read
    /// `uri` (or fill in template `uri`) of `plugin`.
    fn may_read(
        &self,
        plugin: &Plugin,
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
        self.config.policy.decide_offered(
            Offered::Resource,
            uri,
            plugin.file_name(),
            Who::Known(caller),
        )
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
                    .may_read(plugin, &resource.uri, profile, caller)
                    .verdict
                    == Verdict::Allow
                {
                    shown.push(show(resource));
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
                if self.may_read(plugin, text, profile, caller).verdict == Verdict::Allow {
                    shown.push(show(template));
                }
            }
        }
        shown
    }

    /// The plugin that serves `request`'s URI, once the session may read
    /// it; the decision goes on the trail, if one is kept.
    fn admitted_uri(
        &self,
        request: &OfferRequest,
        trail: Option<&mut Trail>,
    ) -> Result<Arc<Plugin>, CallError> {
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
        let decision = self.may_read(
            &plugin,
            uri,
            request.profile.as_deref(),
            request.caller.as_deref(),
        );
        if let Some(trail) = trail {
            trail.events.push(Event::policy(&decision));
        }
        if decision.verdict != Verdict::Allow {
            return Err(CallError::new(
                ErrorCode::PolicyDenied,
                decision.reason.to_string(),
            ));
        }
        Ok(plugin)
    }

    /// Whether the session may read `request`'s URI: what a subscription
    /// to it needs. Nothing runs and nothing is recorded.
    pub fn check_resource(&self, request: &OfferRequest) -> Result<(), CallError> {
        self.admitted_uri(request, None).map(drop)
    }

    /// The URIs plugins announce as changed from now on, each once its
    /// change is real. Whom to tell is the listener's business: a session
    /// hears only of URIs it subscribed to, which [`Self::check_resource`]
    /// let it.
    pub fn resource_changes(&self) -> tokio::sync::broadcast::Receiver<std::sync::Arc<str>> {
        self.sandbox.changes().listen()
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
        let plugin = self.admitted_uri(request, Some(&mut *trail))?;
        trail.commit(&self.records, "the resource was not read")?;
        trail.ran = true;
        trail.ran_on = Some(crate::audit::RanOn(Arc::clone(&plugin)));
        let uri: Arc<str> = Arc::from(request.name.as_str());
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
        let max = self.config.limits.max_output_bytes;
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
