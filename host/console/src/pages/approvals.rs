//! The approval pages: what is waiting, one approval with its forms, the
//! history of decisions.

use super::shown::preview_of;
use super::{Section, Viewer, layout, pretty};
use crate::approval::Approval;
use crate::presentation::visible;
use crate::registry::Tool;
use crate::when::timestamp;
use maud::{Markup, html};

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
                dt { "Asked" } dd {
                    (timestamp(approval.created_ms))
                    @if let Some(caller) = &approval.asked_by { " by " code { (visible(caller)) } }
                }
                @if approval.approvers_needed > 1 || !approval.self_approval {
                    dt { "Approvers" } dd.approvers {
                        (approvers(approval))
                    }
                }
                @if !approval.decisions.is_empty() {
                    dt { "Decisions" } dd.decisions {
                        ul {
                            @for d in &approval.decisions {
                                li {
                                    (if d.approved { "approved by " } else { "denied by " })
                                    strong { (visible(&d.name)) }
                                    " (" (d.proof) ", " (d.channel) ") at " (timestamp(d.decided_ms))
                                }
                            }
                        }
                    }
                }
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

/// Who must approve, and how many more a pending approval awaits.
fn approvers(approval: &Approval) -> String {
    match approval.awaiting() {
        awaiting if approval.state == "pending" && awaiting > 0 => {
            format!("{}; waiting for {awaiting} more", approval.approvers())
        }
        _ => approval.approvers(),
    }
}

pub fn state(approval: &Approval) -> &'static str {
    match (approval.state, approval.expired) {
        (_, true) => "expired",
        ("consumed", _) => "used",
        (other, false) => other,
    }
}

/// The approvals waiting for a decision, as of approvals `version`.
pub fn waiting(
    version: i64,
    approvals: &[Approval],
    tools: &[std::sync::Arc<Tool>],
    viewer: Viewer,
) -> Markup {
    layout(
        "waiting",
        Some(Section::Waiting),
        Some(version),
        Some(viewer),
        html! {
            h1 { "Waiting for a decision" }
            @if approvals.is_empty() {
                p.empty { "Nothing is waiting. Calls the policy asks about appear here as they are made." }
            }
            @for approval in approvals { (approval_card(approval, tools, viewer.csrf)) }
        },
    )
}

/// One approval on its own, with what follows from its state.
pub fn approval(
    approval: &Approval,
    tools: &[std::sync::Arc<Tool>],
    viewer: Viewer,
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
        None,
        Some(viewer),
        html! {
            @if let Some(note) = note { p.notice role="status" { (note) } }
            (approval_card(approval, tools, viewer.csrf))
            p.next { (next) }
        },
    )
}

/// The approvals no longer waiting, as of approvals `version`.
pub fn history(version: i64, approvals: &[Approval], viewer: Viewer) -> Markup {
    layout(
        "history",
        Some(Section::History),
        Some(version),
        Some(viewer),
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
