//! The tools page: every tool with its decision and network, and what
//! `policy explain` says for a call a person describes.

use super::{Section, Viewer, layout};
use crate::capability::Network;
use crate::policy::Explanation;
use crate::presentation::visible;
use crate::registry::Tool;
use maud::{Markup, html};

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
    viewer: Viewer,
) -> Markup {
    layout(
        "tools",
        Some(Section::Tools),
        None,
        Some(viewer),
        html! {
            h1 { "Tools" }
            table {
                thead { tr { th { "Tool" } th { "Plugin" } th { "Risk" } th { "Effects" } th { "Filesystem" } th { "Network" } th { "Policy" } } }
                tbody {
                    @for row in rows {
                        tr {
                            td {
                                strong { (row.tool.spec().name) }
                                @if !row.tool.offered() {
                                    br; span.withdrawn { "withdrawn by its plugin for now: no agent sees it, and a call to it is refused" }
                                }
                                br; small { (visible(&row.tool.spec().description)) }
                            }
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
                input type="hidden" name="csrf" value=(viewer.csrf);
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
