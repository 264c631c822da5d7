//! The one place the CLI writes to stdout and stderr. Writing errors (a
//! closed pipe, say) are ignored: there is nobody left to tell.

use crate::presentation::{Rendered, visible};
use std::fmt::Display;
use std::io::Write;

#[derive(Clone, Copy, Debug, Default)]
pub struct Printer {
    /// The command was asked for JSON: its errors are JSON too, on stdout,
    /// so a script reads one document whatever happened.
    json: bool,
}

impl Printer {
    pub fn new(json: bool) -> Printer {
        Printer { json }
    }

    /// A line of the command's output.
    pub fn out(&self, line: impl Display) {
        let _ = writeln!(std::io::stdout().lock(), "{line}");
    }

    /// A JSON document on stdout.
    pub fn json(&self, value: &impl serde::Serialize) {
        match serde_json::to_string_pretty(value) {
            Ok(text) => self.out(text),
            Err(e) => self.error(format!("cannot encode the output as JSON: {e}"), None),
        }
    }

    /// A side note for the person at the terminal (stderr, not the output).
    pub fn note(&self, line: impl Display) {
        let _ = writeln!(std::io::stderr().lock(), "{line}");
    }

    /// A plugin's view of a call as labelled lines: `title_label` before
    /// its title, `body_label` before its text (indented under it); control
    /// characters show as escapes.
    pub fn rendered(&self, rendered: &Rendered, title_label: &str, body_label: &str) {
        match rendered {
            Rendered::Shown { title, text, .. } => {
                self.out(format!("{title_label:<10} {}", visible(title)));
                self.out(format!(
                    "{body_label:<10} {}",
                    visible(text).trim_end().replace('\n', "\n           ")
                ));
            }
            Rendered::Failed { reason } => self.out(format!(
                "{body_label:<10} none: the plugin's {body_label} failed: {}",
                visible(reason)
            )),
            Rendered::Unverified { reason } => self.out(format!(
                "{body_label:<10} none: the host cannot show what this call changes, because it \
                 could not rehearse it ({}); nothing of what it does is verified",
                visible(reason)
            )),
        }
    }

    /// An error for the person at the terminal, with what to do about it.
    pub fn error(&self, message: impl Display, hint: Option<&str>) {
        self.coded_error(None, message, hint);
    }

    /// An error with the stable code of the host error behind it.
    pub fn coded_error(&self, code: Option<&str>, message: impl Display, hint: Option<&str>) {
        if self.json {
            let error = serde_json::json!({"error": {
                "code": code,
                "message": message.to_string(),
                "hint": hint,
            }});
            let _ = writeln!(std::io::stdout().lock(), "{error:#}");
            return;
        }
        self.warning(message, hint);
    }

    /// A problem that does not end the command (a plugin that did not
    /// load, a tool left out): always text on stderr, so a `--json`
    /// document on stdout stays whole.
    pub fn warning(&self, message: impl Display, hint: Option<&str>) {
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "toolwarden: {message}");
        if let Some(hint) = hint {
            let _ = writeln!(err, "hint: {hint}");
        }
    }
}

pub use crate::when::timestamp;
