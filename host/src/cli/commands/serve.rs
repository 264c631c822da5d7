//! `toolwarden serve [--http [ADDR]]`: the MCP server.

use crate::cli::ExitStatus;
use crate::cli::args::ServeArgs;
use crate::cli::printer::Printer;
use crate::config::Config;
use crate::controller::Controller;
use crate::error::Error;
use crate::mcp::{self, Exposure, HttpOptions, Server};
use std::sync::Arc;

pub fn run(config: Config, args: ServeArgs, printer: Printer) -> Result<ExitStatus, Error> {
    let http = match args.http {
        None => None,
        Some(addr) => {
            let token = match &args.token_file {
                None => None,
                Some(file) => match std::fs::read_to_string(file) {
                    Ok(text) if !text.trim().is_empty() => Some(text.trim().to_owned()),
                    Ok(_) => {
                        printer.error(format!("the token file `{}` is empty", file.display()), Some("write a long random token into it, e.g. `openssl rand -hex 32 > FILE`"));
                        return Ok(ExitStatus::Error);
                    }
                    Err(e) => {
                        printer.error(
                            format!("cannot read the token file `{}`: {e}", file.display()),
                            Some("check `--token-file` (or TOOLWARDEN_TOKEN_FILE)"),
                        );
                        return Ok(ExitStatus::Error);
                    }
                },
            };
            let exposure = if args.insecure_no_auth {
                Exposure::InsecureNoAuth
            } else {
                Exposure::TokenRequired
            };
            let options = HttpOptions {
                addr,
                token,
                allowed_hosts: args.allow_host,
                exposure,
            };
            if let Some(refusal) = options.refusal() {
                printer.error(refusal, Some("give a token with `--token-file FILE`, listen on 127.0.0.1, or pass `--insecure-no-auth` if you mean it"));
                return Ok(ExitStatus::Error);
            }
            Some(options)
        }
    };
    let host = Arc::new(Controller::new(config)?);
    for failure in host.registry().failures() {
        tracing::warn!("{failure}");
    }
    let served = match http {
        None => mcp::serve_stdio(host),
        Some(options) => tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .map_err(|e| Error::Engine(format!("cannot start the async runtime: {e}")))?
            .block_on(Server::serve_http(host, options)),
    };
    match served {
        Ok(()) => Ok(ExitStatus::Success),
        Err(e) => {
            printer.error(format!("the MCP server stopped: {e}"), None);
            Ok(ExitStatus::Failure)
        }
    }
}
