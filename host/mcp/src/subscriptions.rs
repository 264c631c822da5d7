//! 2026-07-28 `subscriptions/listen` streams: what a stream is granted
//! (`toolsListChanged` and resource subscriptions; no prompt or resource
//! list changes) and what it is told. Which of the resources the session may
//! read is only known once the stream is open, with the request: a URI it
//! may not read is acknowledged and never told of.

use crate::{Server, watch};
use rmcp::ErrorData as McpError;
use rmcp::model::SubscriptionFilter;
use rmcp::service::SubscriptionContext;
use tokio::sync::broadcast::error::RecvError;
use toolwarden::changes::Change;

/// The filter a stream that asked for `requested` gets.
pub(crate) fn accepted(requested: &SubscriptionFilter) -> SubscriptionFilter {
    let mut accepted = SubscriptionFilter::builder().tools_list_changed().build();
    accepted.resource_subscriptions = requested.resource_subscriptions.as_ref().map(|uris| {
        uris.iter()
            .take(watch::MAX_SUBSCRIPTIONS)
            .cloned()
            .collect()
    });
    accepted
}

impl Server {
    /// Tells the stream each time the tool list changes (the plugins
    /// directory changed, or a plugin offered or withdrew tools), and each
    /// time a plugin announces that a resource it subscribed
    /// to (and may read) changed, until the client cancels it or the host
    /// stops.
    pub(crate) async fn serve_subscription(
        &self,
        subscription: SubscriptionContext,
    ) -> Result<(), McpError> {
        let mut changes = self.peers.changes();
        let mut resources = self.host.plugin_changes();
        let accepted = subscription.accepted();
        let wanted = accepted.tools_list_changed == Some(true);
        let readable: std::collections::BTreeSet<&str> = accepted
            .resource_subscriptions
            .iter()
            .flatten()
            .filter(|uri| self.readable(uri, subscription.request_context()).is_ok())
            .map(String::as_str)
            .collect();
        loop {
            tokio::select! {
                () = subscription.cancelled() => return Ok(()),
                changed = changes.changed() => {
                    if changed.is_err() {
                        return Ok(());
                    }
                    if wanted
                        && let Err(e) = subscription.sink().notify_tool_list_changed().await
                    {
                        tracing::debug!("cannot tell a subscription the tool list changed: {e}");
                        return Ok(());
                    }
                }
                uri = resources.recv(), if !readable.is_empty() => {
                    let uri = match uri {
                        Ok(Change::Resource(uri)) => uri,
                        // The tool list's changes come through `changes`.
                        Ok(Change::Tools) | Err(RecvError::Lagged(_)) => continue,
                        Err(RecvError::Closed) => return Ok(()),
                    };
                    if readable.contains(uri.as_ref())
                        && let Err(e) = subscription.sink().notify_resource_updated(uri.as_ref()).await
                    {
                        tracing::debug!("cannot tell a subscription that `{uri}` changed: {e}");
                        return Ok(());
                    }
                }
            }
        }
    }
}
