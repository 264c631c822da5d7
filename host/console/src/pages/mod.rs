//! The console's pages, as maud templates: checked when the host compiles,
//! and every value written into them escaped, so what an agent, a plugin or
//! a file put into an argument, an output, a reason or a description is
//! shown as text and never read as markup. Control characters (an ANSI
//! escape, say) are shown as `\u{..}` escapes, not sent to the browser.
//!
//! Only presentation lives here: what to show comes from the routes.

use crate::presentation::visible;
use maud::{DOCTYPE, Markup, html};
use serde_json::Value;

mod approvals;
mod audit;
mod shown;
mod tools;

pub use approvals::{approval, history, waiting};
pub use audit::{AuditQuery, CallRow, audit, chain, trail};
pub use tools::{ToolRow, explanation, tools};

/// The sections the navigation offers.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Section {
    Waiting,
    History,
    Audit,
    Tools,
}

/// Who is looking, for the frame: the form token every change carries, and
/// who the console knows them as, in words.
#[derive(Clone, Copy)]
pub struct Viewer<'a> {
    pub csrf: &'a str,
    pub who: &'a str,
}

/// How the login page offers to sign in.
pub struct LoginOffer<'a> {
    /// The issuer people may sign in with, if any.
    pub issuer: Option<&'a str>,
    /// Whether the shared token may be given.
    pub token: bool,
    /// What went wrong the last time, if anything.
    pub failed: Option<&'a str>,
}

/// A JSON value laid out for reading (JSON escapes every control character).
pub fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
}

/// The frame of every page. A live page carries the approvals version it
/// was rendered from (`Some`), so that its script is told of every change
/// after it, even one made before the script started listening.
pub fn layout(
    title: &str,
    section: Option<Section>,
    live: Option<i64>,
    viewer: Option<Viewer>,
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
                @if live.is_some() {
                    noscript { meta http-equiv="refresh" content="10"; }
                }
            }
            body data-live=[live.map(|_| "approvals")] data-version=[live] {
                header {
                    strong.brand { "toolwarden" }
                    nav {
                        (link(Section::Waiting, "/console", "Waiting"))
                        (link(Section::History, "/console/history", "History"))
                        (link(Section::Audit, "/console/audit", "Audit"))
                        (link(Section::Tools, "/console/tools", "Tools"))
                    }
                    @if let Some(viewer) = viewer {
                        span.who { (visible(viewer.who)) }
                        form.logout method="post" action="/console/logout" {
                            input type="hidden" name="csrf" value=(viewer.csrf);
                            button type="submit" { "Sign out" }
                        }
                    }
                }
                main { (body) }
            }
        }
    }
}

pub fn login(offer: &LoginOffer) -> Markup {
    layout(
        "sign in",
        None,
        None,
        None,
        html! {
            h1 { "Sign in" }
            @if let Some(failed) = offer.failed { p.error role="alert" { (visible(failed)) } }
            @if let Some(issuer) = offer.issuer {
                p.card {
                    a.button #sign-in href="/console/login/issuer" { "Sign in with " (visible(issuer)) }
                }
            }
            @if offer.token {
                form.card method="post" action="/console/login" {
                    label for="token" { "Bearer token (the contents of the server's " code { "--token-file" } ")" }
                    input #token type="password" name="token" autocomplete="current-password" required autofocus[offer.issuer.is_none()];
                    button type="submit" { "Sign in" }
                }
            }
        },
    )
}

/// The answer to a finished sign-in: the issuer's redirect brought the
/// browser here from another site, so a cookie kept `SameSite=Strict` is
/// not sent on a redirect onwards; this page moves on from the console's
/// own origin, where it is.
pub fn signed_in(who: &str) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta http-equiv="refresh" content="0;url=/console";
                title { "toolwarden · signed in" }
                link rel="stylesheet" href="/console/static/console.css";
            }
            body { main { p { "Signed in as " (visible(who)) ". " a href="/console" { "Continue" } } } }
        }
    }
}

/// A page that says what went wrong, with the status the route gives it.
pub fn problem(title: &str, message: &str, viewer: Option<Viewer>) -> Markup {
    layout(
        title,
        None,
        None,
        viewer,
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
