//! The console's pages, as maud templates: checked when the host compiles,
//! and every value written into them escaped, so what an agent, a plugin or
//! a file put into an argument, an output, a reason or a description is
//! shown as text and never read as markup. Control characters (an ANSI
//! escape, say) are shown as `\u{..}` escapes, not sent to the browser.
//!
//! Only presentation lives here: what to show comes from the routes.

use crate::approval::Approval;
use crate::audit::{Record, Verification};
use crate::capability::Network;
use crate::controller::ShownCall;
use crate::policy::Explanation;
use crate::presentation::{Rendered, visible};
use crate::registry::Tool;
use crate::when::timestamp;
use maud::{DOCTYPE, Markup, html};
use serde_json::Value;

/// The sections the navigation offers.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Section {
    Waiting,
    History,
    Audit,
    Tools,
}

/// A JSON value laid out for reading (JSON escapes every control character).
pub fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
}

/// The frame of every page. `live` pages reload when approvals change.
pub fn layout(
    title: &str,
    section: Option<Section>,
    live: bool,
    csrf: Option<&str>,
    body: Markup,
) -> Markup {
    let link = |to: Section, href: &str, name: &str| {
        html! { a href=(href) aria-current=[(section == Some(to)).then_some("page")] { (name) } }
    };
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { "toolwarden · " (title) }
                link rel="icon" href="/console/static/icon.svg" type="image/svg+xml";
                link rel="stylesheet" href="/console/static/console.css";
                script src="/console/static/console.js" defer {}
                @if live {
                    noscript { meta http-equiv="refresh" content="10"; }
                }
            }
            body data-live=[live.then_some("approvals")] {
                header {
                    strong.brand { "toolwarden" }
                    nav {
                        (link(Section::Waiting, "/console", "Waiting"))
                        (link(Section::History, "/console/history", "History"))
                        (link(Section::Audit, "/console/audit", "Audit"))
                        (link(Section::Tools, "/console/tools", "Tools"))
                    }
                    @if let Some(csrf) = csrf {
                        form.logout method="post" action="/console/logout" {
                            input type="hidden" name="csrf" value=(csrf);
                            button type="submit" { "Sign out" }
                        }
                    }
                }
                main { (body) }
            }
        }
    }
}

pub fn login(failed: bool) -> Markup {
    layout(
        "sign in",
        None,
        false,
        None,
        html! {
            h1 { "Sign in" }
            @if failed { p.error role="alert" { "That token is not the one this host was started with." } }
            form.card method="post" action="/console/login" {
                label for="token" { "Bearer token (the contents of the server's " code { "--token-file" } ")" }
                input #token type="password" name="token" autocomplete="current-password" required autofocus;
                button type="submit" { "Sign in" }
            }
        },
    )
}

/// The plugin file serving `approval`'s tool now, if it is still the build
/// the approval is bound to.
fn plugin_of<'a>(approval: &Approval, tools: &'a [std::sync::Arc<Tool>]) -> Option<&'a str> {
    tools
        .iter()
        .find(|t| t.spec().name == approval.tool && t.plugin().sha256() == approval.plugin_sha256)
        .map(|t| t.plugin().file_name())
}

fn decide_forms(approval: &Approval, csrf: &str) -> Markup {
    html! {
        div.decide {
            form method="post" action={ "/console/approvals/" (approval.id) "/approve" } {
                input type="hidden" name="csrf" value=(csrf);
                button.approve type="submit" { "Approve once" }
            }
            form method="post" action={ "/console/approvals/" (approval.id) "/deny" } {
                input type="hidden" name="csrf" value=(csrf);
                label { "Reason " input type="text" name="reason" maxlength="500" placeholder="why not (the client reads it)"; }
                button.deny type="submit" { "Deny" }
            }
        }
    }
}

/// Everything an approval binds, as a person decides on it.
fn approval_card(approval: &Approval, tools: &[std::sync::Arc<Tool>], csrf: &str) -> Markup {
    let pending = approval.state == "pending" && !approval.expired;
    html! {
        article.card.approval id={ "approval-" (approval.id) } {
            h2 { a href={ "/console/approvals/" (approval.id) } { (visible(&approval.tool)) } }
            dl {
                dt { "Arguments" } dd { pre.args { (pretty(&approval.args)) } }
                dt { "Filesystem" } dd { (approval.capability) }
                dt { "Network" } dd { (visible(&approval.network)) }
                dt { "Session" } dd { code { (visible(&approval.session)) } }
                @if let Some(profile) = &approval.profile {
                    dt { "Profile" } dd { code { (visible(profile)) } }
                }
                dt { "Plugin" } dd {
                    (plugin_of(approval, tools).map(visible).unwrap_or_else(|| "no longer loaded in this build".into()))
                    br; code.hash { (approval.plugin_sha256) }
                }
                @if let Some(preview) = &approval.preview {
                    dt { "What it would do" } dd { (preview_of(preview)) }
                }
                @if approval.rehearsed.is_some() {
                    dt { "Applies" } dd {
                        "exactly the change shown: the approved call runs again in a fresh copy \
                         of the workspace, and if it would change anything else, nothing is changed"
                    }
                } @else if !approval.bound_files.is_empty() {
                    dt { "Held to" } dd {
                        "the current content of "
                        @for (i, file) in approval.bound_files.iter().enumerate() {
                            @if i > 0 { ", " } code { (visible(file)) }
                        }
                        ": if it changes, the approved call is refused"
                    }
                }
                dt { "Why the policy asks" } dd { (visible(&approval.reason)) }
                dt { "Rules that matched" } dd { (if approval.rules.is_empty() { "none" } else { &approval.rules }) }
                dt { "Asked" } dd { (timestamp(approval.created_ms)) }
                dt { "Expires" } dd {
                    (timestamp(approval.expires_ms)) " · "
                    @if pending { span.countdown data-expires=(approval.expires_ms) { "" } } @else { "—" }
                }
                dt { "State" } dd.state { (state(approval)) }
                @if let Some(by) = &approval.decided_by {
                    dt { "Decided" } dd {
                        (by) (approval.decided_ms.map(|ms| format!(" at {}", timestamp(ms))).unwrap_or_default())
                        @if let Some(why) = &approval.decided_reason { ": " (visible(why)) }
                    }
                }
                @if let Some(ms) = approval.consumed_ms {
                    dt { "Ran" } dd { (timestamp(ms)) }
                }
            }
            @if pending { (decide_forms(approval, csrf)) }
        }
    }
}

/// A call's preview: its title and the diff or text (escaped like every
/// other value), or why there is none.
fn preview_of(preview: &Rendered) -> Markup {
    view_of(preview, "preview")
}

/// A plugin's view of a call (`what`: its preview, its view of the result).
fn view_of(rendered: &Rendered, what: &str) -> Markup {
    match rendered {
        Rendered::Shown {
            title, text, view, ..
        } => html! {
            p { (visible(title)) " " span.view { "(" (view.as_str()) ")" } }
            pre.preview { (visible(text)) }
        },
        Rendered::Failed { reason } => html! {
            p.failed { "The plugin's " (what) " failed, so there is none: " (visible(reason)) }
        },
        Rendered::Unverified { reason } => html! {
            p.failed {
                "The host cannot show what this call changes, because it could not rehearse it ("
                (visible(reason)) "); nothing of what it does is verified."
            }
        },
    }
}

/// How a finished call looks to its tool, read back from the audit log.
fn shown_call(shown: &ShownCall) -> Markup {
    html! {
        @if let Some(preview) = &shown.preview {
            section.card.asked {
                h2 { "What the approver was shown" }
                (view_of(preview, "preview"))
            }
        }
        section.card.result {
            h2 { "As its tool shows it" }
            @if let Some(result) = &shown.result { (view_of(result, "view")) }
            @if let Some(why) = &shown.no_result { p.empty { "No view: " (why) "." } }
            @if shown.other_build {
                p.note { "The plugin loaded now is not the build that ran this call; this is the newer build's view." }
            }
        }
    }
}

pub fn state(approval: &Approval) -> &'static str {
    match (approval.state, approval.expired) {
        (_, true) => "expired",
        ("consumed", _) => "used",
        (other, false) => other,
    }
}

pub fn waiting(approvals: &[Approval], tools: &[std::sync::Arc<Tool>], csrf: &str) -> Markup {
    layout(
        "waiting",
        Some(Section::Waiting),
        true,
        Some(csrf),
        html! {
            h1 { "Waiting for a decision" }
            @if approvals.is_empty() {
                p.empty { "Nothing is waiting. Calls the policy asks about appear here as they are made." }
            }
            @for approval in approvals { (approval_card(approval, tools, csrf)) }
        },
    )
}

/// One approval on its own, with what follows from its state.
pub fn approval(
    approval: &Approval,
    tools: &[std::sync::Arc<Tool>],
    csrf: &str,
    note: Option<&str>,
) -> Markup {
    let next = match state(approval) {
        "approved" => {
            "The same call from the client (same tool, arguments and session) now runs once, until the approval expires."
        }
        "used" => "The approved call ran; the approval cannot be used again.",
        "denied" => {
            "The client's retry of this call is refused with APPROVAL_DENIED and the reason given."
        }
        "expired" => "The approval expired; a new call asks again.",
        _ => "Nothing runs until someone decides.",
    };
    layout(
        "approval",
        None,
        false,
        Some(csrf),
        html! {
            @if let Some(note) = note { p.notice role="status" { (note) } }
            (approval_card(approval, tools, csrf))
            p.next { (next) }
        },
    )
}

pub fn history(approvals: &[Approval], csrf: &str) -> Markup {
    layout(
        "history",
        Some(Section::History),
        true,
        Some(csrf),
        html! {
            h1 { "Decided, used and expired" }
            table {
                thead { tr { th { "Tool" } th { "State" } th { "Decided by" } th { "Asked" } th { "Decided" } th { "Ran" } th { "Reason" } } }
                tbody {
                    @for a in approvals {
                        tr {
                            td { a href={ "/console/approvals/" (a.id) } { (visible(&a.tool)) } }
                            td.state { (state(a)) }
                            td { (a.decided_by.as_deref().unwrap_or("—")) }
                            td { (timestamp(a.created_ms)) }
                            td { (a.decided_ms.map(timestamp).unwrap_or_else(|| "—".into())) }
                            td { (a.consumed_ms.map(timestamp).unwrap_or_else(|| "—".into())) }
                            td { (visible(a.decided_reason.as_deref().unwrap_or(""))) }
                        }
                    }
                }
            }
            @if approvals.is_empty() { p.empty { "No decided approvals yet." } }
        },
    )
}

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
    csrf: &str,
) -> Markup {
    let field = |name: &str, label: &str, value: &Option<String>, hint: &str| {
        html! { label { (label) " " input type="text" name=(name) value=[value.as_deref()] placeholder=(hint); } }
    };
    layout(
        "audit",
        Some(Section::Audit),
        false,
        Some(csrf),
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
pub fn trail(call_id: &str, records: &[Record], shown: Option<&ShownCall>, csrf: &str) -> Markup {
    layout(
        "call",
        Some(Section::Audit),
        false,
        Some(csrf),
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

fn network_cell(tool: &Tool, granted: &Network) -> Markup {
    html! {
        @match &tool.spec().network {
            None => { "none" }
            Some(need) => {
                "declares " (visible(&need.origins.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")))
                @if !need.credentials.is_empty() { br; "credentials " (visible(&need.credentials.join(", "))) }
                br; "granted " (granted.to_string())
            }
        }
    }
}

/// A tool as the tools page lists it, with what the policy decides.
pub struct ToolRow {
    pub tool: std::sync::Arc<Tool>,
    pub decision: String,
    pub granted: Network,
}

pub fn tools(
    rows: &[ToolRow],
    explained: Option<Markup>,
    chosen: Option<(&str, &str)>,
    csrf: &str,
) -> Markup {
    layout(
        "tools",
        Some(Section::Tools),
        false,
        Some(csrf),
        html! {
            h1 { "Tools" }
            table {
                thead { tr { th { "Tool" } th { "Plugin" } th { "Risk" } th { "Effects" } th { "Filesystem" } th { "Network" } th { "Policy" } } }
                tbody {
                    @for row in rows {
                        tr {
                            td { strong { (row.tool.spec().name) } br; small { (visible(&row.tool.spec().description)) } }
                            td { (visible(row.tool.plugin().file_name())) }
                            td { (row.tool.spec().risk.as_str()) }
                            td { (row.tool.spec().effects.to_string()) }
                            td { (row.tool.spec().filesystem.as_str()) }
                            td { (network_cell(&row.tool, &row.granted)) }
                            td { (visible(&row.decision)) }
                        }
                    }
                }
            }
            h2 #explain { "What would the policy decide?" }
            form.card method="post" action="/console/tools/explain" {
                input type="hidden" name="csrf" value=(csrf);
                label { "Tool " select name="tool" {
                    @for row in rows {
                        option value=(row.tool.spec().name) selected[chosen.is_some_and(|(t, _)| t == row.tool.spec().name)] { (row.tool.spec().name) }
                    }
                } }
                label { "Arguments (JSON) " textarea name="args" rows="4" { (chosen.map_or("{}", |(_, a)| a)) } }
                button type="submit" { "Explain (runs nothing)" }
            }
            @if let Some(explained) = explained { (explained) }
        },
    )
}

pub fn explanation(result: &Result<Explanation, String>) -> Markup {
    html! {
        section.card.explained {
            @match result {
                Err(e) => { p.error role="alert" { (visible(e)) } }
                Ok(x) => {
                    p { "Decision: " strong.verdict { (x.decision.verdict.as_str()) } " — " (visible(&x.decision.reason)) }
                    @for path in &x.paths { p { "Path " (visible(&path.to_string())) } }
                    table {
                        thead { tr { th { "Rule" } th { "Line" } th { "Decides" } th { "Matched" } th { "Note" } } }
                        tbody {
                            @for r in &x.rules {
                                tr {
                                    td { (r.rule) }
                                    td { (r.line.map(|l| l.to_string()).unwrap_or_default()) }
                                    td { (r.verdict.as_str()) }
                                    td { (if r.matched { "yes" } else { "no" }) }
                                    td { (visible(r.note.as_deref().unwrap_or(""))) }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// A page that says what went wrong, with the status the route gives it.
pub fn problem(title: &str, message: &str, csrf: Option<&str>) -> Markup {
    layout(
        title,
        None,
        false,
        csrf,
        html! { h1 { (title) } p.error role="alert" { (visible(message)) } },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_and_markup_show_as_text() {
        assert_eq!(
            visible("\u{1b}[31mred\u{202e}"),
            "\\u{001b}[31mred\\u{202e}"
        );
        let page = problem(
            "t",
            "<script>alert(1)</script>\"><img src=x onerror=alert(1)>",
            None,
        )
        .into_string();
        assert!(!page.contains("<script>alert"), "{page}");
        assert!(!page.contains("<img src=x"), "{page}");
        assert!(page.contains("&lt;script&gt;"), "{page}");
    }
}
