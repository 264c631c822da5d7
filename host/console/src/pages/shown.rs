//! How a call is shown: its approval's preview and its result as its tool
//! renders them, each marked as the tool's own view.

use crate::controller::ShownCall;
use crate::presentation::{Rendered, visible};
use maud::{Markup, html};

/// A call's preview: its title and the diff or text (escaped like every
/// other value), or why there is none.
pub(super) fn preview_of(preview: &Rendered) -> Markup {
    view_of(preview, "preview")
}

/// A plugin's view of a call (`what`: its preview, its view of the result).
pub(super) fn view_of(rendered: &Rendered, what: &str) -> Markup {
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
pub(super) fn shown_call(shown: &ShownCall) -> Markup {
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
