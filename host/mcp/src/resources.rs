//! `resources/list`, `resources/templates/list`, `resources/read`,
//! `resources/subscribe` and the templates' `completion/complete`: the
//! plugins' resources (contract 0.3.0) in MCP's shapes. Only translates:
//! what a session may list and read is decided by the controller. A read of
//! a URI no plugin serves is `-32602` with the URI in `data` (SEP-2164).
//! A subscription is accepted for a URI the session may read; the session
//! is then told (`notifications/resources/updated`) each time the URI's
//! plugin announces that it changed (see `watch`).

use crate::Server;
use crate::convert::refusal;
use rmcp::model::{
    CacheScope, ReadResourceRequestParams, ReadResourceResult, Resource, ResourceTemplate,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};
use std::collections::BTreeMap;

impl Server {
    /// The resources this request's session may read.
    pub(crate) fn resources(&self, cx: &RequestContext<RoleServer>) -> Vec<Resource> {
        let profile = self.profile(&cx.meta);
        let caller = crate::requests::caller_of(&cx.extensions);
        self.host
            .offered_resources(profile.as_deref(), caller.as_deref(), |spec| {
                let mut listed = Resource::new(spec.uri.clone(), spec.name.clone());
                listed.title = spec.title.clone();
                listed.description = spec.description.clone();
                listed.mime_type = spec.mime_type.clone();
                listed
            })
    }

    /// The resource templates this request's session may fill in.
    pub(crate) fn templates(&self, cx: &RequestContext<RoleServer>) -> Vec<ResourceTemplate> {
        let profile = self.profile(&cx.meta);
        let caller = crate::requests::caller_of(&cx.extensions);
        self.host
            .offered_templates(profile.as_deref(), caller.as_deref(), |spec| {
                let mut listed =
                    ResourceTemplate::new(spec.uri_template.clone(), spec.name.clone());
                listed.title = spec.title.clone();
                listed.description = spec.description.clone();
                listed.mime_type = spec.mime_type.clone();
                listed
            })
    }

    /// `resources/read`, governed.
    pub(crate) async fn read_for(
        &self,
        params: ReadResourceRequestParams,
        cx: &RequestContext<RoleServer>,
    ) -> Result<ReadResourceResult, McpError> {
        let uri = params.uri;
        let request = self.offer_request(uri.clone(), BTreeMap::new(), cx)?;
        let parts = self
            .host
            .read_resource(request)
            .await
            .map_err(|e| refusal(e, Some(&uri)))?;
        let contents = parts
            .into_iter()
            .map(|p| crate::convert::resource_contents(p.uri, p.mime_type, p.contents))
            .collect();
        // Read under the session's policy, for its caller: not to be
        // shared, and not kept (a plugin's data may change at any time).
        let mut result = ReadResourceResult::new(contents).with_ttl_ms(0);
        result.cache_scope = Some(CacheScope::Private);
        Ok(result)
    }

    /// `resources/subscribe`: accepted for a URI the session may read.
    pub(crate) fn subscribe_to(
        &self,
        uri: String,
        cx: &RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.readable(&uri, cx)?;
        self.peers
            .subscribe(&self.subscribed, cx.peer.clone(), uri)
            .map_err(|why| McpError::invalid_params(why, None))
    }

    /// Whether the request's session may read `uri`.
    pub(crate) fn readable(
        &self,
        uri: &str,
        cx: &RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let request = self.offer_request(uri.to_owned(), BTreeMap::new(), cx)?;
        self.host
            .check_resource(&request)
            .map_err(|e| refusal(e, Some(uri)))
    }

    /// Completion of a template's variable.
    pub(crate) async fn complete_template_for(
        &self,
        template: String,
        (variable, value): (&str, &str),
        context: BTreeMap<String, String>,
        cx: &RequestContext<RoleServer>,
    ) -> Result<Vec<String>, McpError> {
        let request = self.offer_request(template.clone(), context, cx)?;
        self.host
            .complete_template(request, variable, value)
            .await
            .map_err(|e| refusal(e, Some(&template)))
    }
}
