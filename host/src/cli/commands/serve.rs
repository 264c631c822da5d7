//! `toolwarden serve`: the MCP server on stdin/stdout.

use crate::cli::ExitStatus;
use crate::config::Config;
use crate::controller::Controller;
use crate::error::Error;
use crate::mcp::Server;
use std::sync::Arc;

pub fn run(config: Config) -> Result<ExitStatus, Error> {
    let host = Arc::new(Controller::new(config)?);
    for failure in host.registry().failures() {
        tracing::warn!("{failure}");
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::Engine(format!("cannot start the async runtime: {e}")))?;
    match runtime.block_on(Server::new(host).serve_stdio()) {
        Ok(()) => Ok(ExitStatus::Success),
        Err(e) => {
            tracing::error!("the MCP connection failed: {e}");
            Ok(ExitStatus::Failure)
        }
    }
}
