//! Signing in and out: the login page, the shared token's form, and the
//! issuer's sign-in (sent off to the issuer, then back at the callback).
//!
//! A sign-in is bound to the browser that started it: its `state` goes
//! both to the issuer and into a cookie (`SameSite=Lax`, so the issuer's
//! redirect back brings it), and the callback is refused unless the two
//! agree. So a link carrying someone else's code and state signs no one
//! in (login CSRF), and a callback URL replayed later finds its sign-in
//! used up.

use super::{Shared, csrf_refused, failure};
use crate::pages::{self, LoginOffer};
use crate::session::{self, Session, Who};
use axum::Extension;
use axum::extract::{Form, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{Html, IntoResponse, Redirect, Response};
use serde::Deserialize;
use toolwarden_auth::SignInError;

/// The cookie that carries a started sign-in's `state` to the callback.
const SIGN_IN_COOKIE: &str = "toolwarden_sign_in";

fn login_offer<'a>(console: &'a crate::Console, failed: Option<&'a str>) -> LoginOffer<'a> {
    LoginOffer {
        issuer: console.sign_in.as_deref().map(|s| s.issuer()),
        token: console.token.is_some(),
        failed,
    }
}

fn login_failed(console: &crate::Console, status: StatusCode, why: &str) -> Response {
    (
        status,
        Html(pages::login(&login_offer(console, Some(why))).into_string()),
    )
        .into_response()
}

pub async fn login_page(State(console): Shared) -> Response {
    if !console.asks_sign_in() {
        return Redirect::to("/console").into_response();
    }
    Html(pages::login(&login_offer(&console, None)).into_string()).into_response()
}

/// Signs the browser in as `who`, with `then` as the answer.
fn open_session(console: &crate::Console, who: Who, then: impl IntoResponse) -> Response {
    match console.sessions.open(who) {
        Some((id, _)) => {
            let mut response = then.into_response();
            if let Ok(cookie) = session::set_cookie(&id).parse() {
                response.headers_mut().append(header::SET_COOKIE, cookie);
            }
            response
        }
        None => failure(
            StatusCode::SERVICE_UNAVAILABLE,
            "no session",
            "the host could not make a session id",
            None,
        ),
    }
}

#[derive(Deserialize)]
pub struct LoginForm {
    #[serde(default)]
    token: String,
}

pub async fn login(State(console): Shared, Form(form): Form<LoginForm>) -> Response {
    let Some(token) = &console.token else {
        return Redirect::to("/console/login").into_response();
    };
    if !session::same_secret(form.token.trim(), token) {
        return login_failed(
            &console,
            StatusCode::UNAUTHORIZED,
            "That token is not the one this host was started with.",
        );
    }
    open_session(&console, Who::SharedToken, Redirect::to("/console"))
}

/// Where the issuer sends the person back: configured, or this console as
/// the request reached it (the `Host` was checked against the allowed
/// names before this runs), over plain HTTP only on loopback.
fn redirect_uri(sign_in: &toolwarden_auth::SignIn, headers: &HeaderMap) -> String {
    if let Some(configured) = sign_in.redirect_uri() {
        return configured.to_string();
    }
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("localhost");
    let scheme = match crate::host_name(host).as_str() {
        "localhost" | "127.0.0.1" | "::1" => "http",
        _ => "https",
    };
    format!(
        "{scheme}://{host}{}",
        toolwarden::config::CONSOLE_CALLBACK_PATH
    )
}

/// Sends the browser to the issuer to sign in.
pub async fn sign_in(State(console): Shared, headers: HeaderMap) -> Response {
    let Some(sign_in) = console.sign_in.clone() else {
        return Redirect::to("/console/login").into_response();
    };
    match sign_in.start(&redirect_uri(&sign_in, &headers)).await {
        Ok(started) => {
            let cookie = format!(
                "{SIGN_IN_COOKIE}={}; Path=/console/login; HttpOnly; SameSite=Lax; Max-Age={}",
                started.state,
                toolwarden_auth::sign_in::PENDING_FOR.as_secs()
            );
            (
                [(header::SET_COOKIE, cookie)],
                Redirect::to(started.location.as_str()),
            )
                .into_response()
        }
        Err(e) => {
            tracing::warn!("a console sign-in could not start: {} {e}", e.code());
            login_failed(
                &console,
                StatusCode::SERVICE_UNAVAILABLE,
                &format!("{}: {e}", e.code()),
            )
        }
    }
}

#[derive(Deserialize)]
pub struct Callback {
    state: Option<String>,
    code: Option<String>,
    error: Option<String>,
    error_description: Option<String>,
}

/// The issuer's answer: a code to redeem for the person, or why not.
pub async fn signed_in(
    State(console): Shared,
    headers: HeaderMap,
    Query(back): Query<Callback>,
) -> Response {
    let Some(sign_in) = console.sign_in.clone() else {
        return Redirect::to("/console/login").into_response();
    };
    let started_here = headers
        .get(header::COOKIE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| session::cookie(v, SIGN_IN_COOKIE));
    let state = back.state.as_deref().unwrap_or_default();
    if !started_here.is_some_and(|kept| session::same_secret(state, kept)) {
        tracing::warn!("refused a console sign-in callback that this browser did not start");
        return login_failed(
            &console,
            StatusCode::FORBIDDEN,
            "SIGNIN_NOT_STARTED_HERE: this sign-in was not started in this browser; start again",
        );
    }
    let ended = match (&back.error, &back.code) {
        (Some(error), _) => Err(SignInError::Refused(match &back.error_description {
            Some(description) => format!("{error}: {description}"),
            None => error.clone(),
        })),
        (None, Some(code)) => sign_in.finish(state, code).await,
        (None, None) => Err(SignInError::Refused("the issuer sent back no code".into())),
    };
    let forget_state =
        format!("{SIGN_IN_COOKIE}=; Path=/console/login; HttpOnly; SameSite=Lax; Max-Age=0");
    let person = match ended {
        Ok(person) => person,
        Err(e) => {
            tracing::warn!("a console sign-in failed: {} {e}", e.code());
            let status = match e {
                SignInError::Unreachable(_) => StatusCode::SERVICE_UNAVAILABLE,
                _ => StatusCode::UNAUTHORIZED,
            };
            let mut response = login_failed(&console, status, &format!("{}: {e}", e.code()));
            if let Ok(value) = forget_state.parse() {
                response.headers_mut().append(header::SET_COOKIE, value);
            }
            return response;
        }
    };
    tracing::info!("{} signed in to the console", person.identity());
    let shown = person.subject.clone();
    open_session(
        &console,
        Who::Person(person),
        (
            [(header::SET_COOKIE, forget_state)],
            Html(pages::signed_in(&shown).into_string()),
        ),
    )
}

#[derive(Deserialize)]
pub struct LogoutForm {
    #[serde(default)]
    csrf: String,
}

pub async fn logout(
    State(console): Shared,
    Extension(session): Extension<Session>,
    Extension(id): Extension<crate::SessionId>,
    Form(form): Form<LogoutForm>,
) -> Response {
    if !session::same_secret(&form.csrf, &session.csrf) {
        return csrf_refused();
    }
    console.sessions.close(&id.0);
    (
        [(header::SET_COOKIE, session::clear_cookie())],
        Redirect::to("/console/login"),
    )
        .into_response()
}
