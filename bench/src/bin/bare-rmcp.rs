//! The floor of row 7's CPU figure: an MCP stdio server on the same rmcp as
//! `toolwarden serve`, written as rmcp's own examples write one (a
//! `#[tokio::main]` runtime, the non-blocking pipe transport), that answers
//! `tools/call` of `calc` with the constant the governed host computes. It
//! validates nothing, runs nothing and records nothing: what toolwarden's
//! CPU per call costs above it is what governance and the sandbox cost.
//!
//! With `BARE_RMCP_TOOL` set to a tool as `tools/list` shows it (the bench
//! gives it toolwarden's `calc`), it lists that tool instead of its own, so
//! a client that checks a result against the tool's output schema (the
//! Python SDK's does) does the same work against either server.

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use serde_json::json;
use std::sync::Arc;

struct Constant;

impl ServerHandler for Constant {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("bare-rmcp", env!("CARGO_PKG_VERSION")))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _cx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let given = std::env::var("BARE_RMCP_TOOL")
            .ok()
            .and_then(|tool| serde_json::from_str::<Tool>(&tool).ok());
        let tool = given.unwrap_or_else(|| {
            let schema = json!({ "type": "object" });
            let schema = schema.as_object().cloned().unwrap_or_default();
            Tool::new("calc", "answers 42", Arc::new(schema))
        });
        Ok(ListToolsResult::with_all_items(vec![tool]))
    }

    async fn call_tool(
        &self,
        _params: CallToolRequestParams,
        _cx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        Ok(CallToolResult::structured(json!({ "result": 42 })).into())
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let running = Constant.serve(rmcp::transport::stdio_pipes()).await?;
    running.waiting().await?;
    Ok(())
}
