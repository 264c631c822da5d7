//! How a call looks (seed 002's views): what a plugin's `present.preview`
//! said of a call before it runs, or its `show.show-result` of a finished
//! one, and what a person is shown of it. A preview's `diff` is rendered
//! here, by the host, against the file as it is now, so the person sees
//! the change the call would make, not the plugin's account of it; a
//! result's view is shown as given, since the file it changed has moved on
//! since. Never runs a plugin and never reads the workspace itself: the
//! caller hands it the file's current bytes.

use serde::{Deserialize, Serialize};

/// The longest body a preview keeps; a longer one is cut, and says so.
pub const MAX_PREVIEW_BYTES: usize = 256 << 10;

/// Which view renders a presentation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum View {
    Terminal,
    Diff,
    Search,
    Read,
    Web,
    Generic,
}

impl View {
    pub fn as_str(self) -> &'static str {
        match self {
            View::Terminal => "terminal",
            View::Diff => "diff",
            View::Search => "search",
            View::Read => "read",
            View::Web => "web",
            View::Generic => "generic",
        }
    }
}

/// What a plugin said a call would do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Presentation {
    pub view: View,
    pub title: String,
    pub path: Option<String>,
    pub body: String,
}

/// What a person is shown of a plugin's view of a call (an approval's
/// preview, a finished call's result), or why there is none.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Rendered {
    Shown {
        view: View,
        title: String,
        #[serde(skip_serializing_if = "Option::is_none", default)]
        path: Option<String>,
        /// For a preview's `diff`: a unified diff against the file as it
        /// was when the approval was asked; otherwise the plugin's text.
        text: String,
    },
    /// The plugin's view failed or ran out of time: the approval was asked
    /// (the call is shown) without it.
    Failed { reason: String },
    /// The call may change the workspace, and the host could not rehearse
    /// it (why), and the plugin gave no view of its own: what it changes
    /// cannot be shown.
    Unverified { reason: String },
}

impl Rendered {
    /// Renders a preview; `current` is the file its `path` names as it is
    /// now (`None`: there is no such file).
    pub fn preview(presentation: Presentation, current: Option<&[u8]>) -> Rendered {
        let (View::Diff, Some(path)) = (presentation.view, &presentation.path) else {
            return Rendered::result(presentation);
        };
        let before = current.map(String::from_utf8_lossy).unwrap_or_default();
        let diff = similar::TextDiff::from_lines(before.as_ref(), presentation.body.as_str());
        let old = if current.is_some() {
            format!("a/{path}")
        } else {
            "/dev/null".to_owned()
        };
        let body = diff
            .unified_diff()
            .context_radius(3)
            .header(&old, &format!("b/{path}"))
            .to_string();
        Rendered::result(Presentation {
            body,
            ..presentation
        })
    }

    /// Renders a finished call's view: its body as the plugin gave it.
    pub fn result(presentation: Presentation) -> Rendered {
        Rendered::Shown {
            view: presentation.view,
            title: cut(presentation.title, 512),
            path: presentation.path,
            text: cut(presentation.body, MAX_PREVIEW_BYTES),
        }
    }
}

/// Characters that reorder or break what is shown around them: bidi
/// overrides and isolates, and Unicode's line and paragraph separators.
fn reorders(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{2028}' | '\u{2029}')
}

fn escaped(text: &str, escape: impl Fn(char) -> bool) -> String {
    text.chars()
        .map(|c| {
            if escape(c) {
                format!("\\u{{{:04x}}}", c as u32)
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// `text` with control characters written as escapes: an ANSI sequence or a
/// bidi override in an argument or a preview shows as what it is, on a
/// terminal as in a browser. Newlines and tabs stay.
pub fn visible(text: &str) -> String {
    escaped(text, hidden_in_text)
}

fn hidden_in_text(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t') || reorders(c)
}

/// Whether `text` holds anything [`visible`] would escape.
pub fn has_hidden(text: &str) -> bool {
    text.chars().any(hidden_in_text)
}

/// `text` as one line: like [`visible`], with newlines and tabs escaped
/// too, for names and other text shown in a row (a newline there would
/// forge the next row).
pub fn one_line(text: &str) -> String {
    escaped(text, |c| c.is_control() || reorders(c))
}

/// Whether `text` holds anything [`one_line`] would escape: what a name the
/// host writes or prints must not.
pub fn has_control(text: &str) -> bool {
    text.chars().any(|c| c.is_control() || reorders(c))
}

/// `text` cut to at most `max` bytes, on a character boundary.
pub fn cut_to(mut text: String, max: usize) -> String {
    if text.len() > max {
        let mut end = max;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
    text
}

fn cut(text: String, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    let mut text = cut_to(text, max);
    text.push_str("\n[... cut: the view is longer than the host keeps]");
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn diff(path: &str, body: &str) -> Presentation {
        Presentation {
            view: View::Diff,
            title: format!("write {path}"),
            path: Some(path.into()),
            body: body.into(),
        }
    }

    #[test]
    fn a_diff_is_rendered_against_the_file_as_it_is() {
        let Rendered::Shown { text, .. } = Rendered::preview(
            diff("notes.md", "one\nTWO\nthree\n"),
            Some(b"one\ntwo\nthree\n"),
        ) else {
            panic!("shown");
        };
        assert!(
            text.starts_with("--- a/notes.md\n+++ b/notes.md\n"),
            "{text}"
        );
        assert!(text.contains("-two\n+TWO\n"), "{text}");
        let Rendered::Shown { text, .. } = Rendered::preview(diff("new.md", "hello\n"), None)
        else {
            panic!("shown");
        };
        assert!(text.starts_with("--- /dev/null\n+++ b/new.md\n"), "{text}");
        assert!(text.contains("+hello"), "{text}");
    }

    #[test]
    fn a_results_diff_is_shown_as_the_plugin_gave_it() {
        let Rendered::Shown { text, view, .. } = Rendered::result(diff("notes.md", "-a\n+b\n"))
        else {
            panic!("shown");
        };
        assert_eq!(view, View::Diff);
        assert_eq!(text, "-a\n+b\n");
    }

    #[test]
    fn other_views_show_the_body_and_long_ones_are_cut() {
        let long = Presentation {
            view: View::Generic,
            title: "t".into(),
            path: None,
            body: "x".repeat(MAX_PREVIEW_BYTES + 10),
        };
        let Rendered::Shown { text, view, .. } = Rendered::preview(long, None) else {
            panic!("shown");
        };
        assert_eq!(view, View::Generic);
        assert!(text.ends_with("longer than the host keeps]"));
        assert!(text.len() < MAX_PREVIEW_BYTES + 100);
    }
}
