//! How a call looks before it runs (seed 002's views): what a plugin's
//! `present.preview` said, and what a person is shown of it. A `diff` is
//! rendered here, by the host, against the file as it is now, so the
//! person sees the change the call would make, not the plugin's account
//! of it. Never runs a plugin and never reads the workspace itself: the
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

/// What a plugin said a call would do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Presentation {
    pub view: View,
    pub title: String,
    pub path: Option<String>,
    pub body: String,
}

/// What an approval shows of its call: the rendered preview, or why there
/// is none.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Preview {
    Shown {
        view: View,
        title: String,
        #[serde(skip_serializing_if = "Option::is_none", default)]
        path: Option<String>,
        /// For `diff`: a unified diff against the file as it was when the
        /// approval was asked; otherwise the plugin's text.
        text: String,
    },
    /// The plugin's preview failed or ran out of time: the approval was
    /// asked anyway.
    Failed { reason: String },
}

impl Preview {
    /// Renders `presentation`; `current` is the file its `path` names as it
    /// is now (`None`: there is no such file).
    pub fn render(presentation: Presentation, current: Option<&[u8]>) -> Preview {
        let Presentation {
            view,
            title,
            path,
            body,
        } = presentation;
        let text = match (view, &path) {
            (View::Diff, Some(path)) => {
                let before = current.map(String::from_utf8_lossy).unwrap_or_default();
                let diff = similar::TextDiff::from_lines(before.as_ref(), body.as_str());
                let old = if current.is_some() {
                    format!("a/{path}")
                } else {
                    "/dev/null".to_owned()
                };
                diff.unified_diff()
                    .context_radius(3)
                    .header(&old, &format!("b/{path}"))
                    .to_string()
            }
            _ => body,
        };
        Preview::Shown {
            view,
            title: cut(title, 512),
            path,
            text: cut(text, MAX_PREVIEW_BYTES),
        }
    }
}

/// `text` with control characters written as escapes: an ANSI sequence or a
/// bidi override in an argument or a preview shows as what it is, on a
/// terminal as in a browser.
pub fn visible(text: &str) -> String {
    text.chars()
        .map(|c| {
            if (c.is_control() && c != '\n' && c != '\t')
                || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
            {
                format!("\\u{{{:04x}}}", c as u32)
            } else {
                c.to_string()
            }
        })
        .collect()
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
    text.push_str("\n[... cut: the preview is longer than the host keeps]");
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
        let Preview::Shown { text, .. } = Preview::render(
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
        let Preview::Shown { text, .. } = Preview::render(diff("new.md", "hello\n"), None) else {
            panic!("shown");
        };
        assert!(text.starts_with("--- /dev/null\n+++ b/new.md\n"), "{text}");
        assert!(text.contains("+hello"), "{text}");
    }

    #[test]
    fn other_views_show_the_body_and_long_ones_are_cut() {
        let long = Presentation {
            view: View::Generic,
            title: "t".into(),
            path: None,
            body: "x".repeat(MAX_PREVIEW_BYTES + 10),
        };
        let Preview::Shown { text, view, .. } = Preview::render(long, None) else {
            panic!("shown");
        };
        assert_eq!(view, View::Generic);
        assert!(text.ends_with("longer than the host keeps]"));
        assert!(text.len() < MAX_PREVIEW_BYTES + 100);
    }
}
