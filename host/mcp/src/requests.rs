//! What a request declares beside its method: the session it runs in and
//! the profile it runs under (`_meta`), and who made it (the HTTP gate's
//! proof), gathered into the host's requests. Decides nothing.

use crate::Server;
use crate::call::{CallRequest, MAX_SESSION_NAME, RawArgs, SessionId};
use crate::controller::OfferRequest;
use rmcp::model::CallToolRequestParams;
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The `_meta` key a request declares its session's profile with.
pub const PROFILE_META: &str = "toolwarden/profile";

/// The `_meta` key a request names its session with, in place of its
/// connection's: a client that spreads its calls over connections (or over
/// hosts sharing a store) keeps one budget and one duplicate guard.
pub const SESSION_META: &str = "toolwarden/session";

impl Server {
    /// The profile a request runs under: the server's, else the one its
    /// `_meta` declares. A declared value that is not a string names no
    /// profile the config could define, so it fails closed like a typo.
    pub(crate) fn profile(&self, meta: &rmcp::model::RequestMetaObject) -> Option<Arc<str>> {
        if let Some(pinned) = &self.profile {
            return Some(Arc::clone(pinned));
        }
        // Shown in refusals and kept in the audit: written as one line, so
        // a newline or an escape in it reaches nobody as such (a defined
        // profile's name has none, so it still fails closed).
        meta.0.get(PROFILE_META).map(|declared| match declared {
            serde_json::Value::String(name) => Arc::from(crate::presentation::one_line(name)),
            other => Arc::from(other.to_string()),
        })
    }

    /// The session a request runs in: the one its `_meta` names, else its
    /// connection's. A name is 1 to 128 letters, digits, `.`, `_`, `:` or
    /// `-`, so it cannot smuggle anything into the logs that show it.
    pub(crate) fn session(
        &self,
        meta: &rmcp::model::RequestMetaObject,
    ) -> Result<SessionId, McpError> {
        let Some(declared) = meta.0.get(SESSION_META) else {
            return Ok(self.session.clone());
        };
        match declared.as_str() {
            Some(name) if SessionId::is_valid_name(name) => Ok(SessionId::from(name.to_owned())),
            _ => Err(McpError::invalid_params(
                format!(
                    "toolwarden: `_meta.{SESSION_META}` must be a string of 1 to \
                     {MAX_SESSION_NAME} letters, digits, `.`, `_`, `:` or `-`; nothing ran"
                ),
                None,
            )),
        }
    }

    /// The call a `tools/call` asks for, in the session and under the
    /// profile it runs in.
    pub(crate) fn call_request(
        &self,
        params: &mut CallToolRequestParams,
        cx: &RequestContext<RoleServer>,
    ) -> Result<CallRequest, McpError> {
        // The SDK parsed the arguments with the request: they go on as an
        // object, written out once, as the canonical form.
        let args = params
            .arguments
            .take()
            .map_or(RawArgs::Text(String::new()), RawArgs::from);
        let mut request =
            CallRequest::new(params.name.to_string(), args).in_session(self.session(&cx.meta)?);
        request.profile = self.profile(&cx.meta);
        request.caller = caller_of(&cx.extensions);
        Ok(request)
    }

    /// A request for a prompt or a resource (`name`), with `arguments`, in
    /// the session and under the profile it runs in.
    pub(crate) fn offer_request(
        &self,
        name: String,
        arguments: BTreeMap<String, String>,
        cx: &RequestContext<RoleServer>,
    ) -> Result<OfferRequest, McpError> {
        let mut request = OfferRequest::new(name);
        request.arguments = arguments;
        request.session = self.session(&cx.meta)?;
        request.profile = self.profile(&cx.meta);
        request.caller = caller_of(&cx.extensions);
        Ok(request)
    }
}

/// Who made a request over HTTP, as the gate before `/mcp` proved it
/// (`toolwarden_auth`); none over stdio, where the caller is whoever
/// started the server.
pub(crate) fn caller_of(
    extensions: &rmcp::model::Extensions,
) -> Option<Arc<toolwarden::caller::Caller>> {
    extensions
        .get::<axum::http::request::Parts>()?
        .extensions
        .get::<Arc<toolwarden::caller::Caller>>()
        .cloned()
}
