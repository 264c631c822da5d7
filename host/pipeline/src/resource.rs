//! Resources (contract 0.3.0): what a plugin declares it serves (the URI
//! prefixes it owns, its resources and templates), and what a read returns,
//! in the host's types. Owns the rules a catalog must meet when its plugin
//! loads: every URI under a prefix of its own, no `file:` (the host's),
//! bounded counts and sizes; and what one run announces as changed
//! ([`Announced`]). Never runs a plugin and never
//! decides whether a session may read a URI (that is the policy's job).

use crate::content::ResourceContents;
use serde::Serialize;

/// What one plugin may declare: far more than a client lists, few enough
/// to list and match cheaply.
pub const MAX_PREFIXES: usize = 16;
pub const MAX_RESOURCES: usize = 256;
pub const MAX_TEMPLATES: usize = 64;
/// The longest URI (or template, or prefix) the host takes or passes on.
pub const MAX_URI: usize = 2048;

/// One resource a plugin lists.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ResourceSpec {
    pub uri: String,
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    pub mime_type: Option<String>,
}

/// A family of resources, read by filling in the template.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TemplateSpec {
    pub uri_template: String,
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    pub mime_type: Option<String>,
}

/// Everything a plugin serves.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Catalog {
    pub prefixes: Vec<String>,
    pub resources: Vec<ResourceSpec>,
    pub templates: Vec<TemplateSpec>,
}

/// One part of what a read returns.
#[derive(Clone, Debug)]
pub struct ResourceContent {
    pub uri: String,
    pub mime_type: Option<String>,
    pub contents: ResourceContents,
}

impl ResourceContent {
    /// Bytes it holds, as the output limit counts them.
    pub fn size(&self) -> usize {
        self.uri.len()
            + self.mime_type.as_ref().map_or(0, String::len)
            + match &self.contents {
                ResourceContents::Text(text) => text.len(),
                ResourceContents::Blob(blob) => blob.0.len(),
            }
    }
}

/// Whether `prefix` may be claimed: a scheme (letters, digits, `+`, `-`,
/// `.`, starting with a letter), a `:`, and no control character; never the
/// host's `file:`.
fn prefix_problem(prefix: &str) -> Option<String> {
    let shown: String = prefix.chars().take(64).collect();
    let Some((scheme, _)) = prefix.split_once(':') else {
        return Some(format!("prefix `{shown}` has no scheme (e.g. `notes://`)"));
    };
    let plain = scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    if !plain {
        return Some(format!("prefix `{shown}` does not start with a URI scheme"));
    }
    if scheme.eq_ignore_ascii_case("file") {
        return Some("`file:` URIs are the host's (the workspace), not a plugin's".into());
    }
    if prefix.len() > MAX_URI || prefix.chars().any(char::is_control) {
        return Some(format!(
            "prefix `{shown}` is too long or holds a control character"
        ));
    }
    None
}

/// Whether two prefixes overlap: one starts with the other, so a URI could
/// belong to both.
pub fn overlap(a: &str, b: &str) -> bool {
    a.starts_with(b) || b.starts_with(a)
}

impl Catalog {
    /// Why the catalog is refused, checked when its plugin loads;
    /// `max_text` is `[limits] max_description_kb` in bytes.
    pub fn check(&self, max_text: usize) -> Result<(), String> {
        if self.prefixes.len() > MAX_PREFIXES
            || self.resources.len() > MAX_RESOURCES
            || self.templates.len() > MAX_TEMPLATES
        {
            return Err(format!(
                "declares {} prefixes, {} resources and {} templates; at most {MAX_PREFIXES}, \
                 {MAX_RESOURCES} and {MAX_TEMPLATES} are accepted",
                self.prefixes.len(),
                self.resources.len(),
                self.templates.len()
            ));
        }
        if let Some(problem) = self.prefixes.iter().find_map(|p| prefix_problem(p)) {
            return Err(problem);
        }
        for (at, a) in self.prefixes.iter().enumerate() {
            if let Some(b) = self.prefixes[..at].iter().find(|b| overlap(a, b)) {
                return Err(format!(
                    "prefixes `{a}` and `{b}` overlap; claim one of them"
                ));
            }
        }
        let uris = self
            .resources
            .iter()
            .map(|r| (r.uri.as_str(), r.name.as_str()))
            .chain(
                self.templates
                    .iter()
                    .map(|t| (t.uri_template.as_str(), t.name.as_str())),
            );
        for (uri, name) in uris {
            let shown: String = uri.chars().take(64).collect();
            if uri.len() > MAX_URI || uri.chars().any(char::is_control) {
                return Err(format!(
                    "`{shown}` is too long or holds a control character"
                ));
            }
            if !self.owns(uri) {
                return Err(format!(
                    "`{shown}` is under none of the plugin's prefixes ({})",
                    self.prefixes.join(", ")
                ));
            }
            if name.trim().is_empty() {
                return Err(format!("`{shown}` has an empty name"));
            }
        }
        for template in &self.templates {
            Template::parse(&template.uri_template)?;
        }
        let texts = self
            .resources
            .iter()
            .flat_map(|r| [&r.title, &r.description])
            .chain(
                self.templates
                    .iter()
                    .flat_map(|t| [&t.title, &t.description]),
            );
        let longest = texts.flatten().map(String::len).max().unwrap_or(0);
        if longest > max_text {
            return Err(format!(
                "a title or description is {longest} bytes; at most {max_text} are accepted \
                 (`limits.max_description_kb`)"
            ));
        }
        Ok(())
    }

    /// Whether `uri` is under one of the catalog's prefixes.
    pub fn owns(&self, uri: &str) -> bool {
        self.prefixes.iter().any(|p| uri.starts_with(p.as_str()))
    }

    /// The longest of its prefixes `uri` is under, if any.
    pub fn prefix_of(&self, uri: &str) -> Option<&str> {
        self.prefixes
            .iter()
            .filter(|p| uri.starts_with(p.as_str()))
            .map(String::as_str)
            .max_by_key(|p| p.len())
    }
}

/// Distinct URIs one call may announce as changed: far more than a tool
/// changes at once, few enough that a plugin cannot flood the clients.
pub const MAX_ANNOUNCED: usize = 64;

/// What one run of a plugin's tool announced as changed: URIs under the
/// plugin's own prefixes, each once, at most [`MAX_ANNOUNCED`] of them.
/// Kept until the run ends: only the sandbox knows whether its changes
/// were real (a rehearsal's are not) and tells [`crate::changes::Changes`].
#[derive(Debug)]
pub struct Announced {
    prefixes: Vec<String>,
    uris: Vec<String>,
}

impl Announced {
    /// Nothing announced yet by a plugin that owns `prefixes`.
    pub fn new(prefixes: Vec<String>) -> Announced {
        Announced {
            prefixes,
            uris: Vec::new(),
        }
    }

    /// Takes `uri` as changed, or says why not.
    pub fn announce(&mut self, uri: &str) -> Result<(), String> {
        let shown: String = uri.chars().take(64).collect();
        if uri.len() > MAX_URI || uri.chars().any(char::is_control) {
            return Err(format!(
                "`{shown}` is too long or holds a control character; nothing was announced"
            ));
        }
        if !self.prefixes.iter().any(|p| uri.starts_with(p.as_str())) {
            return Err(format!(
                "`{shown}` is under none of this plugin's prefixes ({}); a plugin announces \
                 only its own resources",
                self.prefixes.join(", ")
            ));
        }
        if self.uris.iter().any(|told| told == uri) {
            return Ok(());
        }
        if self.uris.len() >= MAX_ANNOUNCED {
            return Err(format!(
                "a call announces at most {MAX_ANNOUNCED} changed resources; `{shown}` was not"
            ));
        }
        self.uris.push(uri.to_owned());
        Ok(())
    }

    /// The URIs announced, in order.
    pub fn into_uris(self) -> Vec<String> {
        self.uris
    }
}

/// An RFC 6570 level 1 template: literal text and `{variable}`s.
#[derive(Debug, PartialEq, Eq)]
pub struct Template {
    parts: Vec<Part>,
}

#[derive(Debug, PartialEq, Eq)]
enum Part {
    Literal(String),
    Variable(String),
}

impl Template {
    pub fn parse(text: &str) -> Result<Template, String> {
        let shown: String = text.chars().take(64).collect();
        let mut parts = Vec::new();
        let mut rest = text;
        while let Some(open) = rest.find('{') {
            if open > 0 {
                parts.push(Part::Literal(rest[..open].to_owned()));
            }
            let Some(close) = rest[open..].find('}') else {
                return Err(format!("template `{shown}` opens a `{{` it does not close"));
            };
            let name = &rest[open + 1..open + close];
            let plain =
                !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !plain || matches!(parts.last(), Some(Part::Variable(_))) {
                return Err(format!(
                    "template `{shown}`: `{{{name}}}` is not a plain variable after literal \
                     text (level 1 templates only)"
                ));
            }
            parts.push(Part::Variable(name.to_owned()));
            rest = &rest[open + close + 1..];
        }
        if rest.contains('}') {
            return Err(format!("template `{shown}` closes a `}}` it did not open"));
        }
        if !rest.is_empty() {
            parts.push(Part::Literal(rest.to_owned()));
        }
        Ok(Template { parts })
    }

    /// The variables' values when `uri` fills in the template (a value
    /// holds no `/`), else none.
    pub fn matches(&self, uri: &str) -> Option<Vec<(String, String)>> {
        let mut values = Vec::new();
        let mut rest = uri;
        for (at, part) in self.parts.iter().enumerate() {
            match part {
                Part::Literal(text) => rest = rest.strip_prefix(text.as_str())?,
                Part::Variable(name) => {
                    let end = match self.parts.get(at + 1) {
                        Some(Part::Literal(next)) => rest.find(next.as_str())?,
                        _ => rest.len(),
                    };
                    let value = &rest[..end];
                    if value.is_empty() || value.contains('/') {
                        return None;
                    }
                    values.push((name.clone(), value.to_owned()));
                    rest = &rest[end..];
                }
            }
        }
        rest.is_empty().then_some(values)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn catalog(prefixes: &[&str], uris: &[&str], templates: &[&str]) -> Catalog {
        Catalog {
            prefixes: prefixes.iter().map(|p| (*p).to_owned()).collect(),
            resources: uris
                .iter()
                .map(|u| ResourceSpec {
                    uri: (*u).to_owned(),
                    name: "n".into(),
                    title: None,
                    description: None,
                    mime_type: None,
                })
                .collect(),
            templates: templates
                .iter()
                .map(|t| TemplateSpec {
                    uri_template: (*t).to_owned(),
                    name: "t".into(),
                    title: None,
                    description: None,
                    mime_type: None,
                })
                .collect(),
        }
    }

    #[test]
    fn a_catalog_serves_only_under_its_own_prefixes() {
        assert!(
            catalog(&["test://"], &["test://a"], &["test://t/{id}/data"])
                .check(64)
                .is_ok()
        );
        assert!(
            catalog(&["test://"], &["other://a"], &[])
                .check(64)
                .is_err()
        );
        assert!(
            catalog(&["file:///"], &[], &[])
                .check(64)
                .unwrap_err()
                .contains("host")
        );
        assert!(catalog(&["FILE:"], &[], &[]).check(64).is_err());
        assert!(catalog(&["no scheme"], &[], &[]).check(64).is_err());
        assert!(catalog(&["a://", "a://b/"], &[], &[]).check(64).is_err());
        assert!(
            catalog(&["test://"], &[], &["test://{a}{b}"])
                .check(64)
                .is_err()
        );
        assert!(
            catalog(&["test://"], &[], &["test://{a"])
                .check(64)
                .is_err()
        );
        assert!(
            catalog(&["test://"], &["test://a\n"], &[])
                .check(64)
                .is_err()
        );
    }

    #[test]
    fn a_template_matches_what_fills_it_in() {
        let t = Template::parse("test://template/{id}/data").unwrap();
        assert_eq!(
            t.matches("test://template/123/data"),
            Some(vec![("id".into(), "123".into())])
        );
        assert_eq!(t.matches("test://template/1/2/data"), None);
        assert_eq!(t.matches("test://template//data"), None);
        assert_eq!(t.matches("test://template/1/datax"), None);
        let tail = Template::parse("notes://{day}").unwrap();
        assert_eq!(
            tail.matches("notes://mon"),
            Some(vec![("day".into(), "mon".into())])
        );
    }

    #[test]
    fn a_call_announces_its_own_uris_once_each_and_no_more_than_the_cap() {
        let mut announced = Announced::new(vec!["notes://".into()]);
        announced.announce("notes://a").unwrap();
        announced.announce("notes://a").unwrap();
        assert!(
            announced
                .announce("other://a")
                .unwrap_err()
                .contains("prefixes")
        );
        assert!(announced.announce("notes://\n").is_err());
        for n in 1..MAX_ANNOUNCED {
            announced.announce(&format!("notes://{n}")).unwrap();
        }
        assert!(
            announced
                .announce("notes://one-more")
                .unwrap_err()
                .contains("at most")
        );
        let uris = announced.into_uris();
        assert_eq!(uris.len(), MAX_ANNOUNCED);
        assert_eq!(uris[0], "notes://a");
    }

    #[test]
    fn the_longest_prefix_owns_a_uri() {
        let c = catalog(&["a://x/", "b://"], &[], &[]);
        assert_eq!(c.prefix_of("a://x/y"), Some("a://x/"));
        assert_eq!(c.prefix_of("a://z"), None);
        assert!(overlap("a://", "a://x/") && !overlap("a://x", "b://x"));
    }
}
