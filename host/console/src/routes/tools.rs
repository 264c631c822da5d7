//! The tools routes: the tool list, and `policy explain` for a call a
//! person describes.

use super::{Shared, blocking, csrf_refused, page};
use crate::Console;
use crate::pages::{self, ToolRow};
use crate::session::{self, Session};
use axum::Extension;
use axum::extract::{Form, State};
use axum::response::Response;
use serde::Deserialize;
use std::sync::Arc;

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
        session.viewer(),
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
            .explain(&tool, &args, None)
            .map_err(|e| format!("{}: {}", e.code, e.message))
    })
    .await;
    match explained {
        Ok(result) => page(pages::tools(
            &tool_rows(&console),
            Some(pages::explanation(&result)),
            Some((&form.tool, &form.args)),
            session.viewer(),
        )),
        Err(response) => response,
    }
}
