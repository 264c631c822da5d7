//! Prompts (contract 0.3.0): what a plugin declares it offers, what a
//! request for one carries, and what a rendered one holds, in the host's
//! types. Owns the rules a declaration must meet when its plugin loads and
//! the check of a request's arguments against the declaration. Never runs a
//! plugin and never decides whether a session may have a prompt (that is the
//! policy's job).

use crate::content::Block;
use crate::spec::is_valid_name;
use serde::Serialize;
use std::collections::BTreeMap;

/// Prompts one plugin may declare, and arguments one prompt may take:
/// far more than a person picks from, few enough to list cheaply.
pub const MAX_PROMPTS_PER_PLUGIN: usize = 128;
pub const MAX_PROMPT_ARGUMENTS: usize = 32;
/// The longest argument name, and the most bytes of all argument values
/// of one request together.
pub const MAX_ARGUMENT_NAME: usize = 64;
pub const MAX_ARGUMENT_BYTES: usize = 64 * 1024;
/// Completion values passed on to a client, as MCP allows at most.
pub const MAX_COMPLETIONS: usize = 100;

/// One argument a prompt takes; every value is a string.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PromptArgument {
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    pub required: bool,
}

/// One prompt as its plugin declared it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PromptSpec {
    pub name: String,
    pub title: Option<String>,
    pub description: String,
    pub arguments: Vec<PromptArgument>,
}

/// Who a message of a prompt speaks as.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
}

/// One message of a rendered prompt.
#[derive(Clone, Debug)]
pub struct PromptMessage {
    pub role: Role,
    pub content: Block,
}

/// A prompt filled in with its arguments, as the plugin rendered it
/// (secrets masked, size checked).
#[derive(Clone, Debug)]
pub struct RenderedPrompt {
    pub description: Option<String>,
    pub messages: Vec<PromptMessage>,
}

impl RenderedPrompt {
    /// Bytes it holds, as the output limit counts them.
    pub fn size(&self) -> usize {
        self.description.as_ref().map_or(0, String::len)
            + self
                .messages
                .iter()
                .map(|m| m.content.size())
                .sum::<usize>()
    }
}

/// Whether `name` may name a prompt argument: MCP clients show and send it
/// as a key, so it is kept plain.
fn is_argument_name(name: &str) -> bool {
    name.len() <= MAX_ARGUMENT_NAME
        && name.starts_with(|c: char| c.is_ascii_alphabetic())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

impl PromptSpec {
    /// Why the declaration is refused, checked when its plugin loads;
    /// `max_text` is `[limits] max_description_kb` in bytes.
    pub fn check(&self, max_text: usize) -> Result<(), String> {
        if !is_valid_name(&self.name) {
            return Err(format!(
                "the name must match `[a-z][a-z0-9_]*` and be at most {} characters",
                crate::spec::MAX_TOOL_NAME
            ));
        }
        if self.description.trim().is_empty() {
            return Err("the description is empty; people choose prompts by it".into());
        }
        if self.arguments.len() > MAX_PROMPT_ARGUMENTS {
            return Err(format!(
                "declares {} arguments; at most {MAX_PROMPT_ARGUMENTS} are accepted",
                self.arguments.len()
            ));
        }
        let texts = std::iter::once(self.title.as_deref().unwrap_or(""))
            .chain(std::iter::once(self.description.as_str()))
            .chain(self.arguments.iter().flat_map(|a| {
                [
                    a.title.as_deref().unwrap_or(""),
                    a.description.as_deref().unwrap_or(""),
                ]
            }));
        let longest = texts.map(str::len).max().unwrap_or(0);
        if longest > max_text {
            return Err(format!(
                "a title or description is {longest} bytes; at most {max_text} are accepted \
                 (`limits.max_description_kb`)"
            ));
        }
        for (at, argument) in self.arguments.iter().enumerate() {
            if !is_argument_name(&argument.name) {
                let shown: String = argument.name.chars().take(MAX_ARGUMENT_NAME).collect();
                return Err(format!(
                    "argument `{shown}`: a name must match `[A-Za-z][A-Za-z0-9_-]*` and be at \
                     most {MAX_ARGUMENT_NAME} characters"
                ));
            }
            if self.arguments[..at].iter().any(|a| a.name == argument.name) {
                return Err(format!("argument `{}` is declared twice", argument.name));
            }
        }
        Ok(())
    }

    /// The arguments of a request, checked against the declaration: each
    /// one declared, every required one given, all of them small. The
    /// message says what to send instead.
    pub fn admit(&self, given: &BTreeMap<String, String>) -> Result<(), String> {
        if let Some(unknown) = given
            .keys()
            .find(|name| !self.arguments.iter().any(|a| &a.name == *name))
        {
            return Err(format!(
                "prompt `{}` takes no argument `{}`; it takes: {}",
                self.name,
                crate::presentation::one_line(unknown),
                self.argument_list()
            ));
        }
        let missing: Vec<&str> = self
            .arguments
            .iter()
            .filter(|a| a.required && !given.contains_key(&a.name))
            .map(|a| a.name.as_str())
            .collect();
        if !missing.is_empty() {
            return Err(format!(
                "prompt `{}` needs the argument(s) {}",
                self.name,
                missing.join(", ")
            ));
        }
        let bytes: usize = given.iter().map(|(k, v)| k.len() + v.len()).sum();
        if bytes > MAX_ARGUMENT_BYTES {
            return Err(format!(
                "the arguments are {bytes} bytes; at most {MAX_ARGUMENT_BYTES} are accepted"
            ));
        }
        Ok(())
    }

    fn argument_list(&self) -> String {
        if self.arguments.is_empty() {
            return "none".into();
        }
        let names: Vec<&str> = self.arguments.iter().map(|a| a.name.as_str()).collect();
        names.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(arguments: &[(&str, bool)]) -> PromptSpec {
        PromptSpec {
            name: "review".into(),
            title: None,
            description: "Reviews a change.".into(),
            arguments: arguments
                .iter()
                .map(|(name, required)| PromptArgument {
                    name: (*name).into(),
                    title: None,
                    description: None,
                    required: *required,
                })
                .collect(),
        }
    }

    #[test]
    fn a_declaration_is_checked_for_names_and_sizes() {
        assert!(
            spec(&[("path", true), ("resourceUri", false)])
                .check(64)
                .is_ok()
        );
        assert!(spec(&[("a b", true)]).check(64).is_err());
        assert!(spec(&[("x", true), ("x", false)]).check(64).is_err());
        let mut bad = spec(&[]);
        bad.name = "Review".into();
        assert!(bad.check(64).is_err());
        let mut long = spec(&[]);
        long.description = "d".repeat(65);
        assert!(long.check(64).unwrap_err().contains("max_description_kb"));
        let mut empty = spec(&[]);
        empty.description = " ".into();
        assert!(empty.check(64).is_err());
    }

    #[test]
    fn a_request_brings_the_declared_arguments() {
        let s = spec(&[("path", true), ("depth", false)]);
        let args = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| ((*k).into(), (*v).into()))
                .collect()
        };
        assert!(s.admit(&args(&[("path", "a")])).is_ok());
        assert!(s.admit(&args(&[("path", "a"), ("depth", "2")])).is_ok());
        assert!(s.admit(&args(&[])).unwrap_err().contains("path"));
        let unknown = s.admit(&args(&[("path", "a"), ("deep", "1")])).unwrap_err();
        assert!(
            unknown.contains("`deep`") && unknown.contains("path, depth"),
            "{unknown}"
        );
        let huge = "x".repeat(MAX_ARGUMENT_BYTES);
        assert!(s.admit(&args(&[("path", &huge)])).is_err());
    }
}
