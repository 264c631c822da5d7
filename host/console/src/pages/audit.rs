//! The audit pages: the chain's state, the records as a table, one call's
//! trail.

use super::shown::shown_call;
use super::{Section, Viewer, layout, pretty};
use crate::audit::{Record, Verification};
use crate::controller::ShownCall;
use crate::presentation::visible;
use crate::when::timestamp;
use maud::{Markup, html};

/// The audit chain's state, as `audit verify` reports it.
pub fn chain(
    verification: &Result<Verification, String>,
    head: Option<&crate::store::Head>,
) -> Markup {
    html! {
        section.card.chain {
            @match verification {
                Ok(Verification::Intact { records, head: check, .. }) => {
                    p.intact { "Chain intact: " (records) " records; head " (format!("{check:?}").to_lowercase()) "." }
                }
                Ok(Verification::Broken { seq, problem }) => {
                    p.broken role="alert" { "Chain broken at record " (seq) ": " (visible(problem)) }
                }
                Err(e) => { p.broken role="alert" { "The chain could not be read: " (visible(e)) } }
            }
            @if let Some(head) = head {
                p { "Head: " (head.records) " records, last hash " code.hash { (head.hash) } }
            }
        }
    }
}

/// One call in the audit list.
pub struct CallRow {
    pub call_id: String,
    pub ts_ms: i64,
    pub tool: String,
    pub session: String,
    pub outcome: String,
    pub duration_us: Option<u64>,
}

/// What the audit filter form was given.
#[derive(Clone, Debug, Default, serde::Deserialize)]
pub struct AuditQuery {
    pub tool: Option<String>,
    pub session: Option<String>,
    pub call: Option<String>,
    pub code: Option<String>,
    pub since: Option<String>,
    pub until: Option<String>,
}

pub fn audit(
    chain_state: Markup,
    query: &AuditQuery,
    calls: &[CallRow],
    problem: Option<&str>,
    viewer: Viewer,
) -> Markup {
    let field = |name: &str, label: &str, value: &Option<String>, hint: &str| {
        html! { label { (label) " " input type="text" name=(name) value=[value.as_deref()] placeholder=(hint); } }
    };
    layout(
        "audit",
        Some(Section::Audit),
        None,
        Some(viewer),
        html! {
            h1 { "Audit trail" }
            (chain_state)
            form.filters method="get" action="/console/audit" {
                (field("tool", "Tool", &query.tool, "read_file"))
                (field("session", "Session", &query.session, "id"))
                (field("call", "Call", &query.call, "call id"))
                (field("code", "Outcome", &query.code, "ok, POLICY_DENIED, ..."))
                (field("since", "Since", &query.since, "10m, 2h, 7d"))
                (field("until", "Until", &query.until, "1h or epoch ms"))
                button type="submit" { "Filter" }
            }
            @if let Some(problem) = problem { p.error role="alert" { (problem) } }
            table {
                thead { tr { th { "Time" } th { "Tool" } th { "Outcome" } th { "Duration" } th { "Session" } th { "Call" } } }
                tbody {
                    @for call in calls {
                        tr {
                            td { (timestamp(call.ts_ms)) }
                            td { (visible(&call.tool)) }
                            td.outcome { (visible(&call.outcome)) }
                            td { (call.duration_us.map(|us| format!("{:.1} ms", us as f64 / 1000.0)).unwrap_or_else(|| "—".into())) }
                            td { code { (visible(&call.session)) } }
                            td { a href={ "/console/audit/call/" (call.call_id) } { code { (call.call_id) } } }
                        }
                    }
                }
            }
            @if calls.is_empty() { p.empty { "No calls match." } }
        },
    )
}

/// Every record of one call, in chain order.
pub fn trail(
    call_id: &str,
    records: &[Record],
    shown: Option<&ShownCall>,
    viewer: Viewer,
) -> Markup {
    layout(
        "call",
        Some(Section::Audit),
        None,
        Some(viewer),
        html! {
            h1 { "Call " code { (visible(call_id)) } }
            @if let Some(end) = records.iter().rev().find(|r| r.kind == "outcome" || r.kind == "refused") {
                p.summary {
                    strong.outcome { (visible(end.data["code"].as_str().or(end.data["status"].as_str()).unwrap_or(&end.kind))) }
                    @if let Some(us) = end.data["duration_us"].as_u64() { " · " (format!("{:.1} ms", us as f64 / 1000.0)) }
                    @if let Some(fuel) = end.data["fuel_used"].as_u64() { " · fuel " (fuel) }
                    @if let Some(bytes) = end.data["output_bytes"].as_u64() { " · " (bytes) " bytes out" }
                    " · " (records.len()) " records"
                }
            }
            @if records.is_empty() { p.empty { "No records for this call." } }
            @if let Some(shown) = shown { (shown_call(shown)) }
            ol.trail {
                @for record in records {
                    li.card {
                        p.kind { strong { (record.kind) } " · record " (record.seq) " · " (timestamp(record.ts_ms)) }
                        pre { (pretty(&record.data)) }
                    }
                }
            }
        },
    )
}
