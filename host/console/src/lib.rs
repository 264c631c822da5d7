//! # `toolwarden-console` (host/console)
//!
//! Owns the web console: its pages (maud), routes, sessions and assets.
//! Depends on the pipeline library (`toolwarden`) and `toolwarden-web`;
//! nothing depends on it but the CLI, so a change to a page rebuilds only
//! this crate and the binary.
//!
//! The web console at `/console`: what waits for a person's decision, what
//! ran (the audit trail and the state of its chain), and every tool with
//! what the policy makes of it. Served by `toolwarden serve --http` beside
//! `/mcp`, and alone by `toolwarden console` for stdio users; both read the
//! same state directory, so an approval asked anywhere shows up.
//!
//! Who gets in: people the `[auth]` issuer signs in (authorization code
//! and PKCE, [`toolwarden_auth::SignIn`]), and with a bearer token, whoever
//! gives it on the login form; either way a session cookie follows
//! ([`session`]). With neither, only a loopback console exists and the
//! first visit opens a session. Every response carries a
//! strict Content-Security-Policy (scripts and styles only from the
//! console itself, nothing inline, no framing); every request's `Host`
//! must be a loopback name or one the operator allowed (a DNS-rebinding
//! defence, as for `/mcp`), and its `Origin`, if it has one, one of the
//! server's own or one the operator allowed; every state change is a POST carrying the
//! session's CSRF token. An approval decided here goes through the approval
//! book like one decided with the CLI.
//!
//! An edge, like the MCP server: it asks the controller and never reaches
//! into a pipeline step's state.

#![deny(clippy::print_stdout, clippy::print_stderr)]

mod pages;
mod routes;
mod session;

// The library's modules, by the names this code knew them under when it
// was one crate with them.
use toolwarden::{
    approval, audit, capability, controller, policy, presentation, registry, store, when,
};
use toolwarden_web as web_origin;

use crate::controller::Controller;
use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use session::{Session, Sessions, Who};
use std::sync::Arc;

/// Who may reach the console.
#[derive(Clone, Debug, Default)]
pub struct ConsoleOptions {
    /// Exchanged on the login form for a session, when set.
    pub token: Option<String>,
    /// People sign in with the `[auth]` issuer, when set.
    pub sign_in: Option<Arc<toolwarden_auth::SignIn>>,
    /// Accepted `Host` header values besides loopback names.
    pub allowed_hosts: Vec<String>,
    /// Accepted `Origin` header values (see [`crate::web_origin`]).
    pub allowed_origins: Arc<crate::web_origin::AllowedOrigins>,
}

/// The console of one host.
pub(crate) struct Console {
    host: Arc<Controller>,
    token: Option<String>,
    sign_in: Option<Arc<toolwarden_auth::SignIn>>,
    allowed_hosts: Vec<String>,
    sessions: Sessions,
}

impl Console {
    /// Whether a visitor must sign in (with the issuer or the token)
    /// before anything is shown.
    fn asks_sign_in(&self) -> bool {
        self.token.is_some() || self.sign_in.is_some()
    }
}

/// The id of the session a request came with, for signing it out.
#[derive(Clone, Debug)]
pub(crate) struct SessionId(pub String);

/// Every response: no inline script, nothing from elsewhere, no framing.
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// The `Host` header without its port, lower case.
fn host_name(value: &str) -> String {
    let value = value.trim().to_ascii_lowercase();
    match value.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default().to_owned(),
        None => value.split(':').next().unwrap_or_default().to_owned(),
    }
}

async fn check_host(State(console): State<Arc<Console>>, request: Request, next: Next) -> Response {
    let name = request
        .headers()
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .map(host_name);
    let allowed = name.is_some_and(|name| {
        matches!(name.as_str(), "localhost" | "127.0.0.1" | "::1")
            || console.allowed_hosts.iter().any(|h| host_name(h) == name)
    });
    if !allowed {
        return (
            StatusCode::FORBIDDEN,
            "toolwarden: this Host is not one the console answers to; add it with --allow-host\n",
        )
            .into_response();
    }
    next.run(request).await
}

async fn secure_headers(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    for (name, value) in [
        (header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        // Not `no-referrer`: under it Chromium sends `Origin: null` with the
        // console's own form posts, which the Origin allow-list (rightly)
        // refuses. `same-origin` keeps every referrer inside the console.
        (header::REFERRER_POLICY, "same-origin"),
        (header::CACHE_CONTROL, "no-store"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}

/// Lets a request with a live session through, with the session attached.
/// Without one: a loopback console without a token opens one; otherwise a
/// page load goes to the login form and anything else is refused.
async fn authenticate(
    State(console): State<Arc<Console>>,
    mut request: Request,
    next: Next,
) -> Response {
    let cookie = request
        .headers()
        .get(header::COOKIE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| session::cookie(v, session::COOKIE))
        .map(str::to_owned);
    if let Some((id, live)) = cookie.and_then(|id| console.sessions.get(&id).map(|s| (id, s))) {
        request.extensions_mut().insert(live);
        request.extensions_mut().insert(SessionId(id));
        return next.run(request).await;
    }
    let reading = request.method() == axum::http::Method::GET;
    match (console.asks_sign_in(), reading) {
        (false, true) => match console.sessions.open(Who::ThisMachine) {
            Some((id, opened)) => {
                request.extensions_mut().insert::<Session>(opened);
                request.extensions_mut().insert(SessionId(id.clone()));
                let mut response = next.run(request).await;
                if let Ok(value) = HeaderValue::from_str(&session::set_cookie(&id)) {
                    response.headers_mut().insert(header::SET_COOKIE, value);
                }
                response
            }
            None => StatusCode::SERVICE_UNAVAILABLE.into_response(),
        },
        (true, true) => Redirect::to("/console/login").into_response(),
        (_, false) => (
            StatusCode::FORBIDDEN,
            "toolwarden: sign in to the console first (this request carried no live session)\n",
        )
            .into_response(),
    }
}

/// The console's routes, under `/console`, for `host`.
pub fn router(host: Arc<Controller>, options: ConsoleOptions) -> Router {
    let console = Arc::new(Console {
        host,
        token: options.token,
        sign_in: options.sign_in,
        allowed_hosts: options.allowed_hosts,
        sessions: Sessions::default(),
    });
    let signed_in = Router::new()
        .route("/console", get(routes::waiting))
        .route("/console/history", get(routes::history))
        .route("/console/approvals/{id}", get(routes::approval))
        .route("/console/approvals/{id}/approve", post(routes::approve))
        .route("/console/approvals/{id}/deny", post(routes::deny))
        .route("/console/audit", get(routes::audit))
        .route("/console/audit/call/{id}", get(routes::trail))
        .route("/console/tools", get(routes::tools))
        .route("/console/tools/explain", post(routes::explain))
        .route("/console/events", get(routes::events))
        .route("/console/logout", post(routes::logout))
        .route_layer(middleware::from_fn_with_state(
            Arc::clone(&console),
            authenticate,
        ));
    Router::new()
        .route(
            "/console/login",
            get(routes::login_page).post(routes::login),
        )
        .route("/console/login/issuer", get(routes::sign_in))
        .route(
            toolwarden::config::CONSOLE_CALLBACK_PATH,
            get(routes::signed_in),
        )
        .route("/console/static/{name}", get(routes::asset))
        .merge(signed_in)
        .layer(middleware::from_fn(secure_headers))
        .layer(middleware::from_fn(move |request: Request, next: Next| {
            crate::web_origin::guard(Arc::clone(&options.allowed_origins), request, next)
        }))
        .layer(middleware::from_fn_with_state(
            Arc::clone(&console),
            check_host,
        ))
        .with_state(console)
}

#[cfg(test)]
mod tests {
    use super::host_name;

    #[test]
    fn host_headers_are_compared_without_port_or_case() {
        assert_eq!(host_name("LocalHost:8765"), "localhost");
        assert_eq!(host_name("[::1]:8765"), "::1");
        assert_eq!(host_name("127.0.0.1"), "127.0.0.1");
        assert_eq!(host_name("evil.example:80"), "evil.example");
    }
}
