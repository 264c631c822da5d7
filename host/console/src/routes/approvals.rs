//! The approval routes: what is waiting, the history, one approval, and
//! the two state changes (approve, deny), through the same approval book
//! and one-time binding as the CLI.

use super::{Shared, blocking, csrf_refused, failure, missing, page, unavailable};
use crate::Console;
use crate::approval::{Approval, ApprovalDecision, Decided, Decider};
use crate::pages::{self};
use crate::session::{self, Session};
use axum::Extension;
use axum::extract::{Form, Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;
use std::sync::Arc;

/// The approvals `keep` selects, with the version read before them: a
/// change made while they are read has a later version, so a live page
/// showing them is told of it.
fn approvals_of(
    console: &Console,
    keep: impl Fn(&Approval) -> bool,
) -> Result<(i64, Vec<Approval>), String> {
    let records = console.host.records();
    let version = records.approvals_version().map_err(|e| e.to_string())?;
    let approvals = records.approvals().map_err(|e| e.to_string())?;
    Ok((version, approvals.into_iter().filter(|a| keep(a)).collect()))
}

pub async fn waiting(State(console): Shared, Extension(session): Extension<Session>) -> Response {
    let c = Arc::clone(&console);
    let listed = blocking(move || approvals_of(&c, |a| a.state == "pending" && !a.expired)).await;
    match listed {
        Ok(Ok((version, approvals))) => {
            let tools: Vec<_> = console.host.registry().tools().cloned().collect();
            page(pages::waiting(
                version,
                &approvals,
                &tools,
                session.viewer(),
            ))
        }
        Ok(Err(e)) => unavailable("approvals unavailable", &e, session.viewer()),
        Err(response) => response,
    }
}

pub async fn history(State(console): Shared, Extension(session): Extension<Session>) -> Response {
    let c = Arc::clone(&console);
    match blocking(move || approvals_of(&c, |a| a.state != "pending" || a.expired)).await {
        Ok(Ok((version, approvals))) => page(pages::history(version, &approvals, session.viewer())),
        Ok(Err(e)) => unavailable("approvals unavailable", &e, session.viewer()),
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
                Some("counted") => {
                    Some("Your approval is counted; the call waits for more people to approve it.")
                }
                Some("own") => Some(
                    "You asked for this call, and the policy wants someone else to approve it: \
                     nothing changed.",
                ),
                Some(_) | None => None,
            };
            page(pages::approval(&approval, &tools, session.viewer(), note))
        }
        Ok(Ok(None)) => missing(&id, session.viewer()),
        Ok(Err(e)) => unavailable("approvals unavailable", &e.to_string(), session.viewer()),
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
    let approver = session.who.approver();
    let decided = blocking(move || {
        console.host.records().decide(
            &target,
            decision,
            reason.as_deref(),
            (Decider::Console, &approver),
        )
    })
    .await;
    let word = match decision {
        ApprovalDecision::Approve => "approve",
        ApprovalDecision::Deny => "deny",
    };
    match decided {
        Ok(Ok(Decided::Now(_))) => {
            Redirect::to(&format!("/console/approvals/{id}?done={word}")).into_response()
        }
        Ok(Ok(Decided::Counted { .. })) => {
            Redirect::to(&format!("/console/approvals/{id}?done=counted")).into_response()
        }
        Ok(Ok(Decided::OwnCall(_))) => {
            Redirect::to(&format!("/console/approvals/{id}?done=own")).into_response()
        }
        Ok(Ok(Decided::Stale(_))) => {
            Redirect::to(&format!("/console/approvals/{id}?done=stale")).into_response()
        }
        Ok(Ok(Decided::Missing)) => missing(&id, session.viewer()),
        Ok(Err(e)) => failure(
            StatusCode::SERVICE_UNAVAILABLE,
            "not recorded",
            &format!("the decision could not be recorded, so nothing changed: {e}"),
            Some(session.viewer()),
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
