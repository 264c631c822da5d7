//! What each console URL does. Reading pages ask the controller's records
//! and registry; the two state changes (approve, deny) go through the same
//! approval book, and the same one-time binding, as the CLI. Database work
//! runs on the blocking pool, so a long `audit verify` never stalls the
//! server's other connections.

use super::Console;
use super::pages;
use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use std::sync::Arc;

mod approvals;
mod audit;
mod signing;
mod tools;

pub use approvals::{approval, approve, deny, history, waiting};
pub use audit::{audit, trail};
pub use signing::{login, login_page, logout, sign_in, signed_in};
pub use tools::{explain, tools};

type Shared = State<Arc<Console>>;

/// Runs blocking store work off the async threads.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Response> {
    tokio::task::spawn_blocking(work).await.map_err(|e| {
        failure(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the console failed",
            &e.to_string(),
            None,
        )
    })
}

fn failure(
    status: StatusCode,
    title: &str,
    message: &str,
    viewer: Option<pages::Viewer>,
) -> Response {
    (
        status,
        Html(pages::problem(title, message, viewer).into_string()),
    )
        .into_response()
}

fn missing(id: &str, viewer: pages::Viewer) -> Response {
    failure(
        StatusCode::NOT_FOUND,
        "no such approval",
        &format!("there is no approval `{id}`"),
        Some(viewer),
    )
}

/// The records could not be read: nothing is shown rather than part.
fn unavailable(what: &str, error: &str, viewer: pages::Viewer) -> Response {
    failure(StatusCode::SERVICE_UNAVAILABLE, what, error, Some(viewer))
}

fn csrf_refused() -> Response {
    failure(
        StatusCode::FORBIDDEN,
        "refused",
        "this form did not come from a page of this console (its CSRF token is missing or wrong); reload the page and try again",
        None,
    )
}

fn page(markup: maud::Markup) -> Response {
    Html(markup.into_string()).into_response()
}

/// How often a watching page's connection looks for changed approvals:
/// a new one shows within this (plus a page load).
const WATCH_INTERVAL: std::time::Duration = std::time::Duration::from_millis(250);

#[derive(serde::Deserialize)]
pub struct Watched {
    /// The approvals version the watching page shows; without it, the
    /// version when the watch began.
    since: Option<i64>,
}

/// Server-sent events: `approvals` whenever one is asked, decided or used
/// after the version the page shows (at once if that happened before the
/// page began to listen).
pub async fn events(State(console): Shared, Query(watched): Query<Watched>) -> Response {
    use axum::response::sse::{Event, KeepAlive, Sse};
    let version = |console: Arc<Console>| async move {
        tokio::task::spawn_blocking(move || console.host.records().approvals_version().ok())
            .await
            .ok()
            .flatten()
    };
    // A page's own version is checked at once; after that, every interval.
    let (first, pause) = match watched.since {
        Some(shown) => (Some(shown), std::time::Duration::ZERO),
        None => (version(Arc::clone(&console)).await, WATCH_INTERVAL),
    };
    let start = (console, first, pause);
    let stream = futures::stream::unfold(start, move |(console, mut last, mut pause)| async move {
        loop {
            tokio::time::sleep(pause).await;
            pause = WATCH_INTERVAL;
            let now = version(Arc::clone(&console)).await;
            if now.is_some() && now != last {
                last = now;
                let event = Event::default().event("approvals").data("changed");
                return Some((
                    Ok::<_, std::convert::Infallible>(event),
                    (console, last, pause),
                ));
            }
        }
    });
    Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response()
}

const CSS: &str = include_str!("../assets/console.css");
const JS: &str = include_str!("../assets/console.js");
const ICON: &str = include_str!("../assets/icon.svg");

pub async fn asset(Path(name): Path<String>) -> Response {
    let (kind, body) = match name.as_str() {
        "console.css" => ("text/css; charset=utf-8", CSS),
        "console.js" => ("text/javascript; charset=utf-8", JS),
        "icon.svg" => ("image/svg+xml", ICON),
        _ => return StatusCode::NOT_FOUND.into_response(),
    };
    ([(header::CONTENT_TYPE, kind)], body).into_response()
}
