//! What each console URL does. Reading pages ask the controller's records
//! and registry; the two state changes (approve, deny) go through the same
//! approval book, and the same one-time binding, as the CLI. Database work
//! runs on the blocking pool, so a long `audit verify` never stalls the
//! server's other connections.

use super::Console;
use super::pages::{self, AuditQuery, CallRow, ToolRow};
use super::session::{self, Session};
use crate::approval::{Approval, ApprovalDecision, Decider};
use crate::audit::Record;
use crate::store::AuditFilter;
use axum::Extension;
use axum::extract::{Form, Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{Html, IntoResponse, Redirect, Response};
use serde::Deserialize;
use std::sync::Arc;

/// Calls the audit page lists at most, and records it reads to find them.
const MAX_LISTED_CALLS: usize = 200;
const MAX_READ_RECORDS: i64 = 5_000;

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

fn failure(status: StatusCode, title: &str, message: &str, csrf: Option<&str>) -> Response {
    (
        status,
        Html(pages::problem(title, message, csrf).into_string()),
    )
        .into_response()
}

fn missing(id: &str, csrf: &str) -> Response {
    failure(
        StatusCode::NOT_FOUND,
        "no such approval",
        &format!("there is no approval `{id}`"),
        Some(csrf),
    )
}

/// The records could not be read: nothing is shown rather than part.
fn unavailable(what: &str, error: &str, csrf: &str) -> Response {
    failure(StatusCode::SERVICE_UNAVAILABLE, what, error, Some(csrf))
}

fn page(markup: maud::Markup) -> Response {
    Html(markup.into_string()).into_response()
}

fn approvals_of(
    console: &Console,
    keep: impl Fn(&Approval) -> bool,
) -> Result<Vec<Approval>, String> {
    Ok(console
        .host
        .records()
        .approvals()
        .map_err(|e| e.to_string())?
        .into_iter()
        .filter(|a| keep(a))
        .collect())
}

pub async fn waiting(State(console): Shared, Extension(session): Extension<Session>) -> Response {
    let c = Arc::clone(&console);
    let listed = blocking(move || approvals_of(&c, |a| a.state == "pending" && !a.expired)).await;
    match listed {
        Ok(Ok(approvals)) => {
            let tools: Vec<_> = console.host.registry().tools().cloned().collect();
            page(pages::waiting(&approvals, &tools, &session.csrf))
        }
        Ok(Err(e)) => unavailable("approvals unavailable", &e, &session.csrf),
        Err(response) => response,
    }
}

pub async fn history(State(console): Shared, Extension(session): Extension<Session>) -> Response {
    let c = Arc::clone(&console);
    match blocking(move || approvals_of(&c, |a| a.state != "pending" || a.expired)).await {
        Ok(Ok(approvals)) => page(pages::history(&approvals, &session.csrf)),
        Ok(Err(e)) => unavailable("approvals unavailable", &e, &session.csrf),
        Err(response) => response,
    }
}

#[derive(Deserialize)]
pub struct Shown {
    done: Option<String>,
}

pub async fn approval(
    State(console): Shared,
    Extension(session): Extension<Session>,
    Path(id): Path<String>,
    Query(shown): Query<Shown>,
) -> Response {
    let c = Arc::clone(&console);
    let wanted = id.clone();
    match blocking(move || c.host.records().approval(&wanted)).await {
        Ok(Ok(Some(approval))) => {
            let tools: Vec<_> = console.host.registry().tools().cloned().collect();
            let note = match shown.done.as_deref() {
                Some("approve") => Some("Approved."),
                Some("deny") => Some("Denied."),
                Some("stale") => Some("It was already decided, or had expired: nothing changed."),
                Some(_) | None => None,
            };
            page(pages::approval(&approval, &tools, &session.csrf, note))
        }
        Ok(Ok(None)) => missing(&id, &session.csrf),
        Ok(Err(e)) => unavailable("approvals unavailable", &e.to_string(), &session.csrf),
        Err(response) => response,
    }
}

/// A form that changes something; a missing CSRF token is refused like a
/// wrong one (403), not as a malformed form.
#[derive(Deserialize)]
pub struct Decision {
    #[serde(default)]
    csrf: String,
    reason: Option<String>,
}

fn csrf_refused() -> Response {
    failure(
        StatusCode::FORBIDDEN,
        "refused",
        "this form did not come from a page of this console (its CSRF token is missing or wrong); reload the page and try again",
        None,
    )
}

async fn decide(
    console: Arc<Console>,
    session: Session,
    id: String,
    form: Decision,
    decision: ApprovalDecision,
) -> Response {
    if !session::same_secret(&form.csrf, &session.csrf) {
        return csrf_refused();
    }
    let reason = form
        .reason
        .map(|r| r.trim().chars().take(500).collect::<String>())
        .filter(|r| !r.is_empty());
    let target = id.clone();
    let decided = blocking(move || {
        console
            .host
            .records()
            .decide(&target, decision, reason.as_deref(), Decider::Console)
    })
    .await;
    let word = match decision {
        ApprovalDecision::Approve => "approve",
        ApprovalDecision::Deny => "deny",
    };
    match decided {
        Ok(Ok(Some((_, true)))) => {
            Redirect::to(&format!("/console/approvals/{id}?done={word}")).into_response()
        }
        Ok(Ok(Some((_, false)))) => {
            Redirect::to(&format!("/console/approvals/{id}?done=stale")).into_response()
        }
        Ok(Ok(None)) => missing(&id, &session.csrf),
        Ok(Err(e)) => failure(
            StatusCode::SERVICE_UNAVAILABLE,
            "not recorded",
            &format!("the decision could not be recorded, so nothing changed: {e}"),
            Some(&session.csrf),
        ),
        Err(response) => response,
    }
}

pub async fn approve(
    State(console): Shared,
    Extension(session): Extension<Session>,
    Path(id): Path<String>,
    Form(form): Form<Decision>,
) -> Response {
    decide(console, session, id, form, ApprovalDecision::Approve).await
}

pub async fn deny(
    State(console): Shared,
    Extension(session): Extension<Session>,
    Path(id): Path<String>,
    Form(form): Form<Decision>,
) -> Response {
    decide(console, session, id, form, ApprovalDecision::Deny).await
}

/// How a call ended, from its last record.
fn outcome_of(record: &Record) -> Option<(String, Option<u64>)> {
    let data = &record.data;
    match record.kind.as_str() {
        "outcome" => Some((
            data["code"].as_str().map_or_else(
                || data["status"].as_str().unwrap_or("ok").to_owned(),
                str::to_owned,
            ),
            data["duration_us"].as_u64(),
        )),
        "refused" => Some((data["code"].as_str().unwrap_or("refused").to_owned(), None)),
        _ => None,
    }
}

/// Calls among `records` (newest first), each with how it ended.
fn calls(records: &[Record], code: Option<&str>) -> Vec<CallRow> {
    let mut seen = std::collections::HashSet::new();
    let mut rows = Vec::new();
    for record in records {
        if record.call_id.is_empty() {
            continue;
        }
        let Some((outcome, duration_us)) = outcome_of(record) else {
            continue;
        };
        if !seen.insert(record.call_id.clone()) {
            continue;
        }
        if code.is_some_and(|want| !outcome.eq_ignore_ascii_case(want)) {
            continue;
        }
        rows.push(CallRow {
            call_id: record.call_id.clone(),
            ts_ms: record.ts_ms,
            tool: record.tool.clone(),
            session: record.session.clone(),
            outcome,
            duration_us,
        });
        if rows.len() >= MAX_LISTED_CALLS {
            break;
        }
    }
    rows
}

fn blank(value: &Option<String>) -> Option<String> {
    value
        .as_ref()
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
}

pub async fn audit(
    State(console): Shared,
    Extension(session): Extension<Session>,
    Query(query): Query<AuditQuery>,
) -> Response {
    let time = |field: &Option<String>, name: &str| match blank(field) {
        None => Ok(None),
        Some(text) => crate::when::since_ms(&text).map(Some).ok_or_else(|| {
            format!("`{name}` is not a time: use 30s, 10m, 2h, 7d or milliseconds since the epoch")
        }),
    };
    let parsed =
        time(&query.since, "since").and_then(|since| Ok((since, time(&query.until, "until")?)));
    let filter = parsed
        .as_ref()
        .ok()
        .map(|&(since_ms, until_ms)| AuditFilter {
            since_ms,
            until_ms,
            tool: blank(&query.tool),
            session: blank(&query.session),
            call_id: blank(&query.call),
            limit: Some(MAX_READ_RECORDS),
            newest_first: true,
        });
    let problem = parsed.err();
    let c = Arc::clone(&console);
    let read = blocking(move || {
        let records = c.host.records();
        let verification = records.verify().map_err(|e| e.to_string());
        let head = records.audit_head().ok().flatten();
        let listed = match filter {
            Some(filter) => records.audit(&filter).map_err(|e| e.to_string()),
            None => Ok(Vec::new()),
        };
        (verification, head, listed)
    })
    .await;
    match read {
        Ok((verification, head, listed)) => {
            let (rows, problem) = match listed {
                Ok(records) => (calls(&records, blank(&query.code).as_deref()), problem),
                Err(e) => (Vec::new(), Some(e)),
            };
            let chain = pages::chain(&verification, head.as_ref());
            page(pages::audit(
                chain,
                &query,
                &rows,
                problem.as_deref(),
                &session.csrf,
            ))
        }
        Err(response) => response,
    }
}

pub async fn trail(
    State(console): Shared,
    Extension(session): Extension<Session>,
    Path(id): Path<String>,
) -> Response {
    let filter = AuditFilter {
        call_id: Some(id.clone()),
        ..AuditFilter::default()
    };
    let host = Arc::clone(&console.host);
    match blocking(move || host.records().audit(&filter)).await {
        Ok(Ok(records)) => {
            // Without a view (the approval's preview could not be read)
            // the records still speak for the call.
            let shown = console
                .host
                .show_records(&id, &records)
                .await
                .unwrap_or_else(|e| {
                    tracing::warn!(call = %id, "the call could not be read back: {e}");
                    None
                });
            page(pages::trail(&id, &records, shown.as_ref(), &session.csrf))
        }
        Ok(Err(e)) => unavailable("audit unavailable", &e.to_string(), &session.csrf),
        Err(response) => response,
    }
}

fn tool_rows(console: &Console) -> Vec<ToolRow> {
    console
        .host
        .registry()
        .tools()
        .map(|tool| {
            let decision = console.host.decision(tool);
            ToolRow {
                decision: if decision.depends_on_args {
                    format!("{} (depends on the arguments)", decision.verdict.as_str())
                } else {
                    decision.verdict.as_str().to_owned()
                },
                granted: console.host.config().policy_network(tool),
                tool: Arc::clone(tool),
            }
        })
        .collect()
}

pub async fn tools(State(console): Shared, Extension(session): Extension<Session>) -> Response {
    page(pages::tools(
        &tool_rows(&console),
        None,
        None,
        &session.csrf,
    ))
}

#[derive(Deserialize)]
pub struct ExplainForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    tool: String,
    #[serde(default)]
    args: String,
}

pub async fn explain(
    State(console): Shared,
    Extension(session): Extension<Session>,
    Form(form): Form<ExplainForm>,
) -> Response {
    if !session::same_secret(&form.csrf, &session.csrf) {
        return csrf_refused();
    }
    let c = Arc::clone(&console);
    let (tool, args) = (form.tool.clone(), form.args.clone());
    let explained = blocking(move || {
        c.host
            .explain(&tool, &args)
            .map_err(|e| format!("{}: {}", e.code, e.message))
    })
    .await;
    match explained {
        Ok(result) => page(pages::tools(
            &tool_rows(&console),
            Some(pages::explanation(&result)),
            Some((&form.tool, &form.args)),
            &session.csrf,
        )),
        Err(response) => response,
    }
}

/// How often a watching page's connection looks for changed approvals:
/// a new one shows within this (plus a page load).
const WATCH_INTERVAL: std::time::Duration = std::time::Duration::from_millis(250);

/// Server-sent events: `approvals` whenever one is asked, decided or used.
pub async fn events(State(console): Shared) -> Response {
    use axum::response::sse::{Event, KeepAlive, Sse};
    let version = |console: Arc<Console>| async move {
        tokio::task::spawn_blocking(move || console.host.records().approvals_version().ok())
            .await
            .ok()
            .flatten()
    };
    let first = version(Arc::clone(&console)).await;
    let stream = futures::stream::unfold((console, first), move |(console, mut last)| async move {
        loop {
            tokio::time::sleep(WATCH_INTERVAL).await;
            let now = version(Arc::clone(&console)).await;
            if now.is_some() && now != last {
                last = now;
                let event = Event::default().event("approvals").data("changed");
                return Some((Ok::<_, std::convert::Infallible>(event), (console, last)));
            }
        }
    });
    Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response()
}

pub async fn login_page(State(console): Shared) -> Response {
    if console.token.is_none() {
        return Redirect::to("/console").into_response();
    }
    page(pages::login(false))
}

#[derive(Deserialize)]
pub struct LoginForm {
    #[serde(default)]
    token: String,
}

pub async fn login(State(console): Shared, Form(form): Form<LoginForm>) -> Response {
    let Some(token) = &console.token else {
        return Redirect::to("/console").into_response();
    };
    if !session::same_secret(form.token.trim(), token) {
        return (
            StatusCode::UNAUTHORIZED,
            Html(pages::login(true).into_string()),
        )
            .into_response();
    }
    match console.sessions.open() {
        Some((id, _)) => (
            [(header::SET_COOKIE, session::set_cookie(&id))],
            Redirect::to("/console"),
        )
            .into_response(),
        None => failure(
            StatusCode::SERVICE_UNAVAILABLE,
            "no session",
            "the host could not make a session id",
            None,
        ),
    }
}

#[derive(Deserialize)]
pub struct LogoutForm {
    #[serde(default)]
    csrf: String,
}

pub async fn logout(
    State(console): Shared,
    Extension(session): Extension<Session>,
    Extension(id): Extension<super::SessionId>,
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

const CSS: &str = include_str!("assets/console.css");
const JS: &str = include_str!("assets/console.js");
const ICON: &str = include_str!("assets/icon.svg");

pub async fn asset(Path(name): Path<String>) -> Response {
    let (kind, body) = match name.as_str() {
        "console.css" => ("text/css; charset=utf-8", CSS),
        "console.js" => ("text/javascript; charset=utf-8", JS),
        "icon.svg" => ("image/svg+xml", ICON),
        _ => return StatusCode::NOT_FOUND.into_response(),
    };
    ([(header::CONTENT_TYPE, kind)], body).into_response()
}
