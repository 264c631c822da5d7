//! `toolwarden serve [--http [ADDR]]`: the MCP server.

use crate::cli::ExitStatus;
use crate::cli::args::{ListenArgs, ServeArgs};
use crate::cli::printer::Printer;
use crate::config::Config;
use crate::controller::Controller;
use crate::error::Error;
use crate::mcp::{self, Exposure, HttpOptions, Server};
use crate::web_origin::AllowedOrigins;
use std::sync::Arc;

/// The listener's options, from the flags; `Err` once the mistake is
/// printed.
pub fn listen_options(
    addr: std::net::SocketAddr,
    listen: ListenArgs,
    printer: Printer,
) -> Result<HttpOptions, ExitStatus> {
    let token = match &listen.token_file {
        None => None,
        Some(file) => match std::fs::read_to_string(file) {
            Ok(text) if !text.trim().is_empty() => Some(text.trim().to_owned()),
            Ok(_) => {
                printer.error(
                    format!("the token file `{}` is empty", file.display()),
                    Some("write a long random token into it, e.g. `openssl rand -hex 32 > FILE`"),
                );
                return Err(ExitStatus::Error);
            }
            Err(e) => {
                printer.error(
                    format!("cannot read the token file `{}`: {e}", file.display()),
                    Some("check `--token-file` (or TOOLWARDEN_TOKEN_FILE)"),
                );
                return Err(ExitStatus::Error);
            }
        },
    };
    let exposure = if listen.insecure_no_auth {
        Exposure::InsecureNoAuth
    } else {
        Exposure::TokenRequired
    };
    let allowed_origins =
        match AllowedOrigins::for_listener(addr, &listen.allow_host, &listen.allow_origin) {
            Ok(origins) => Arc::new(origins),
            Err(why) => {
                printer.error(why, Some("e.g. `--allow-origin https://tools.example.org`"));
                return Err(ExitStatus::Error);
            }
        };
    let options = HttpOptions {
        addr,
        token,
        allowed_hosts: listen.allow_host,
        allowed_origins,
        exposure,
        profile: None,
    };
    if let Some(refusal) = options.refusal() {
        printer.error(
            refusal,
            Some("give a token with `--token-file FILE`, listen on 127.0.0.1, or pass `--insecure-no-auth` if you mean it"),
        );
        return Err(ExitStatus::Error);
    }
    Ok(options)
}

/// The console for an HTTP listener, unless it would be open to anyone:
/// a console needs a token or a loopback address, whatever else is allowed.
pub fn console_beside(
    host: &Arc<Controller>,
    options: &HttpOptions,
) -> (axum::Router, Option<crate::console_url::Announcement>) {
    if options.token.is_none() && !options.addr.ip().is_loopback() {
        tracing::warn!(
            "no console on `{}`: without a token it would be open to anyone who reaches it",
            options.addr
        );
        return (axum::Router::new(), None);
    }
    let url = format!("http://{}/console", options.addr);
    let announced = match crate::console_url::announce(host.config().state_dir(), &url) {
        Ok(announced) => Some(announced),
        Err(e) => {
            tracing::warn!("cannot record where the console runs: {e}");
            None
        }
    };
    tracing::info!("serving the console at {url}");
    let console = crate::console::router(
        Arc::clone(host),
        crate::console::ConsoleOptions {
            token: options.token.clone(),
            allowed_hosts: options.allowed_hosts.clone(),
            allowed_origins: Arc::clone(&options.allowed_origins),
        },
    );
    (console, announced)
}

/// Answers an MCP client's first request with why the server cannot
/// start, before exiting: a client that started it sees the reason (the
/// missing workspace, an untrusted config) instead of "connection closed".
/// Only on a pipe (at a terminal the person reads stderr), and only for a
/// client that speaks within [`FIRST_REQUEST_WAIT`]: a silent one must not
/// keep a failed server alive.
pub fn refuse_the_client(error: &Error) {
    use std::io::IsTerminal;
    if std::io::stdin().is_terminal() {
        return;
    }
    let message = format!("toolwarden cannot start: {error}. {}", error.hint());
    let code = error.code();
    let (answered, wait) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        answer_first_request(&message, code);
        let _ = answered.send(());
    });
    let _ = wait.recv_timeout(FIRST_REQUEST_WAIT);
}

/// How long a server that cannot start waits for the client's first request.
const FIRST_REQUEST_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

fn answer_first_request(message: &str, code: &str) {
    use std::io::{BufRead, Read, Write};
    let mut line = String::new();
    // A first message larger than this is no initialize request.
    if std::io::stdin()
        .lock()
        .take(1 << 20)
        .read_line(&mut line)
        .is_err()
    {
        return;
    }
    let Ok(request) = serde_json::from_str::<serde_json::Value>(&line) else {
        return;
    };
    let Some(id) = request
        .get("id")
        .filter(|_| request.get("method").is_some())
    else {
        return;
    };
    let answer = serde_json::json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {"code": -32603, "message": message, "data": {"code": code}},
    });
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{answer}");
    let _ = out.flush();
}

/// The async runtime an HTTP server runs on.
pub fn runtime() -> Result<tokio::runtime::Runtime, Error> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::Engine(format!("cannot start the async runtime: {e}")))
}

/// Where the token every request needs is, or why there is none.
fn token_note(options: &HttpOptions, file: Option<&std::path::Path>) -> String {
    match (file, &options.token) {
        (Some(file), Some(_)) => format!(
            "token: every request sends `Authorization: Bearer` with the token in {} \
             (the console asks for it once)",
            file.display()
        ),
        _ if options.exposure == Exposure::InsecureNoAuth => {
            "no token (--insecure-no-auth): anyone who reaches this address can call tools".into()
        }
        _ => "no token: loopback clients only (give one with --token-file FILE)".into(),
    }
}

pub fn run(config: Config, args: ServeArgs, printer: Printer) -> Result<ExitStatus, Error> {
    let token_file = args.listen.token_file.clone();
    let http = match args.http {
        None => None,
        Some(addr) => match listen_options(addr, args.listen, printer) {
            Ok(options) => Some(options),
            Err(status) => return Ok(status),
        },
    };
    let profile = match super::profile_of(&config, args.profile, printer) {
        Ok(profile) => profile,
        Err(status) => return Ok(status),
    };
    let host = Controller::new(config)?;
    for failure in host.registry().failures() {
        tracing::warn!("{failure}");
    }
    let served = match http {
        None => mcp::serve_stdio(host, profile),
        Some(mut options) => {
            options.profile = profile;
            let runtime = runtime()?;
            let _guard = runtime.enter();
            let (console, announced) = console_beside(&host, &options);
            let token = token_note(&options, token_file.as_deref());
            let console_open = announced.is_some();
            runtime.block_on(Server::serve_http(host, options, console, |bound| {
                printer.note(format!("toolwarden: serving MCP at http://{bound}/mcp"));
                if console_open {
                    printer.note(format!("  console: http://{bound}/console"));
                }
                printer.note(format!("  {token}"));
                printer.note("  stop with Ctrl-C");
            }))
        }
    };
    match served {
        Ok(()) => Ok(ExitStatus::Success),
        Err(e) => {
            printer.error(format!("the MCP server stopped: {e}"), None);
            Ok(ExitStatus::Failure)
        }
    }
}
