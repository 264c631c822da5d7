//! The audit routes: the chain's state with the calls it records, and one
//! call's trail.

use super::{Shared, blocking, page, unavailable};
use crate::audit::Record;
use crate::pages::{self, AuditQuery, CallRow};
use crate::session::Session;
use crate::store::AuditFilter;
use axum::Extension;
use axum::extract::{Path, Query, State};
use axum::response::Response;
use std::sync::Arc;

/// Calls the audit page lists at most, and records it reads to find them.
const MAX_LISTED_CALLS: usize = 200;

const MAX_READ_RECORDS: i64 = 5_000;

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
                session.viewer(),
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
            page(pages::trail(
                &id,
                &records,
                shown.as_ref(),
                session.viewer(),
            ))
        }
        Ok(Err(e)) => unavailable("audit unavailable", &e.to_string(), session.viewer()),
        Err(response) => response,
    }
}
