//! `toolwarden serve [--http [ADDR]]`: the MCP server.

use crate::ExitStatus;
use crate::args::{ListenArgs, ServeArgs};
use crate::config::Config;
use crate::controller::Controller;
use crate::error::Error;
use crate::mcp::{self, Exposure, HostFrom, HttpOptions, Refusal, Server, Stopped};
use crate::printer::Printer;
use crate::web_origin::AllowedOrigins;
use std::sync::Arc;

/// The listener's options, from the flags; `Err` once the mistake is
/// printed.
pub fn listen_options(
    addr: std::net::SocketAddr,
    listen: ListenArgs,
    authority: Option<Arc<toolwarden_auth::Authority>>,
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
        authority,
        allowed_hosts: listen.allow_host,
        allowed_origins,
        exposure,
        profile: None,
    };
    if let Some(refusal) = options.refusal() {
        printer.error(
            refusal,
            Some("give a token with `--token-file FILE` or an issuer in `[auth]`, listen on 127.0.0.1, or pass `--insecure-no-auth` if you mean it"),
        );
        return Err(ExitStatus::Error);
    }
    Ok(options)
}

/// The console for an HTTP listener, unless it would be open to anyone:
/// a console needs a way to sign in (the issuer's `console_client_id`, a
/// token) or a loopback address, whatever else is allowed.
pub fn console_beside(
    host: &Arc<Controller>,
    options: &HttpOptions,
) -> (axum::Router, Option<crate::console_url::Announcement>) {
    let sign_in = options
        .authority
        .as_ref()
        .and_then(toolwarden_auth::SignIn::of)
        .map(Arc::new);
    if options.token.is_none() && sign_in.is_none() && !options.addr.ip().is_loopback() {
        tracing::warn!(
            "no console on `{}`: without a token or `[auth] console_client_id` it would be open \
             to anyone who reaches it",
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
            sign_in,
            allowed_hosts: options.allowed_hosts.clone(),
            allowed_origins: Arc::clone(&options.allowed_origins),
        },
    );
    (console, announced)
}

/// Answers an MCP client's first request with why the server cannot
/// start, before exiting: a client that started it sees the reason (an
/// untrusted config, a bad flag) instead of "connection closed". Only on a
/// pipe: at a terminal the person reads stderr.
pub fn refuse_the_client(error: &Error) {
    use std::io::IsTerminal;
    if !std::io::stdin().is_terminal() {
        mcp::refuse_stdio(&refusal(error));
    }
}

/// How the client is told that `error` stopped the server.
fn refusal(error: &Error) -> Refusal {
    Refusal {
        code: error.code(),
        message: error.to_string(),
        hint: error.hint(),
    }
}

/// Serves stdio with the workspace taken from the client's roots (the
/// first that holds a `toolwarden.toml`, else the first project folder):
/// `load` makes the config for the folder chosen.
/// `no_workspace` is what a client that offers none is told.
pub fn on_roots(
    no_workspace: &Error,
    load: impl FnOnce(&std::path::Path) -> Result<Config, Error> + 'static,
    args: ServeArgs,
    printer: Printer,
) -> Result<ExitStatus, Error> {
    let choose = move |roots: &[std::path::PathBuf]| {
        let workspace = crate::config::project_among(roots).map_err(|e| refusal(&e))?;
        tracing::info!(
            "serving the workspace `{}`, the client's root chosen from {} offered",
            workspace.display(),
            roots.len()
        );
        let config = load(&workspace).map_err(|e| refusal(&e))?;
        let profile =
            super::defined_profile(&config, args.profile).map_err(|(message, hint)| Refusal {
                code: "CONFIG_INVALID",
                message,
                hint,
            })?;
        let host = served_host(config).map_err(|e| refusal(&e))?;
        Ok((host, profile))
    };
    let from = HostFrom::Roots {
        choose: Box::new(choose),
        otherwise: refusal(no_workspace),
    };
    ended(mcp::serve_stdio(from), printer)
}

/// The host a server serves, with every plugin that did not load logged
/// (the server goes on with the others).
fn served_host(config: Config) -> Result<Arc<Controller>, Error> {
    let host = Controller::new(config)?;
    for failure in host.registry().failures() {
        tracing::warn!("{failure}");
    }
    Ok(host)
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
    if let Some(settings) = options.authority.as_ref().map(|a| a.settings()) {
        let shared = match file {
            Some(file) => format!(", or the token in {}", file.display()),
            None => String::new(),
        };
        return format!(
            "auth: access tokens from {} for `{}`{}{shared}",
            settings.issuer,
            settings.audience,
            match settings.scopes.as_slice() {
                [] => String::new(),
                scopes => format!(" with the scopes {}", scopes.join(" ")),
            }
        );
    }
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

/// The issuer `[auth]` names, ready to check tokens; `Err` once the
/// mistake is printed.
pub fn authority(
    config: &Config,
    printer: Printer,
) -> Result<Option<Arc<toolwarden_auth::Authority>>, ExitStatus> {
    let Some(settings) = config.auth() else {
        return Ok(None);
    };
    match toolwarden_auth::Authority::new(settings.clone()) {
        Ok(authority) => Ok(Some(Arc::new(authority))),
        Err(why) => {
            printer.error(why, None);
            Err(ExitStatus::Failure)
        }
    }
}

pub fn run(config: Config, args: ServeArgs, printer: Printer) -> Result<ExitStatus, Error> {
    let token_file = args.listen.token_file.clone();
    let http = match args.http {
        None => None,
        Some(addr) => match authority(&config, printer)
            .and_then(|authority| listen_options(addr, args.listen, authority, printer))
        {
            Ok(options) => Some(options),
            Err(status) => return Ok(status),
        },
    };
    let profile = match super::profile_of(&config, args.profile, printer) {
        Ok(profile) => profile,
        Err(status) => return Ok(status),
    };
    let host = served_host(config)?;
    let served = match http {
        None => mcp::serve_stdio(HostFrom::Made(host, profile)),
        Some(mut options) => {
            options.profile = profile;
            let runtime = runtime()?;
            let _guard = runtime.enter();
            let (console, announced) = console_beside(&host, &options);
            let token = token_note(&options, token_file.as_deref());
            let console_open = announced.is_some();
            runtime
                .block_on(Server::serve_http(host, options, console, |bound| {
                    printer.note(format!("toolwarden: serving MCP at http://{bound}/mcp"));
                    if console_open {
                        printer.note(format!("  console: http://{bound}/console"));
                    }
                    printer.note(format!("  {token}"));
                    printer.note("  stop with Ctrl-C");
                }))
                .map_err(Stopped::Failed)
        }
    };
    ended(served, printer)
}

fn ended(served: Result<(), Stopped>, printer: Printer) -> Result<ExitStatus, Error> {
    match served {
        Ok(()) => Ok(ExitStatus::Success),
        Err(Stopped::Refused(refusal)) => {
            printer.coded_error(Some(refusal.code), &refusal.message, Some(&refusal.hint));
            Ok(ExitStatus::Error)
        }
        Err(Stopped::Failed(e)) => {
            printer.error(format!("the MCP server stopped: {e}"), None);
            Ok(ExitStatus::Failure)
        }
    }
}
