//! Tool sets per intent (seed 003 §4): named profiles a session declares,
//! so that a model reviewing code sees the reading tools and nothing else.
//!
//! ```toml
//! [profile.review]
//! tools = ["read_file", "list_dir", "search_*"]
//! prompts = ["review_*"]      # optional: without it, the profile offers no prompt
//! resources = ["notes://*"]   # optional: likewise for resources, by URI glob
//! ```
//!
//! A session without a profile sees every tool and prompt; one with a
//! profile sees, lists and calls only the tools (and gets only the prompts)
//! its globs name; one that names a profile the config does not define sees
//! none (it fails closed). A profile only
//! narrows: it never allows a call the policy would not. Owns the
//! `[profile.NAME]` tables; a plain value the registry and the front ends
//! ask, deciding nothing else.

use crate::settings::SettingError;
use globset::{Glob, GlobSet, GlobSetBuilder};
use serde::Deserialize;
use std::collections::BTreeMap;

/// One `[profile.NAME]` table as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProfileSection {
    tools: Vec<String>,
    prompts: Option<Vec<String>>,
    resources: Option<Vec<String>>,
}

/// Every profile the config defines, each as the sets of its tool and
/// prompt globs.
#[derive(Debug, Default)]
pub struct Profiles {
    named: BTreeMap<String, GlobSet>,
    prompts: BTreeMap<String, GlobSet>,
    resources: BTreeMap<String, GlobSet>,
}

/// The tools one session may see and call.
#[derive(Clone, Copy, Debug)]
pub enum ToolSet<'a> {
    /// No profile: every tool.
    All,
    /// The tools of profile `name`.
    Named(&'a str, &'a GlobSet),
    /// A profile the config does not define: no tool at all.
    Unknown(&'a str),
}

impl ProfileSection {
    pub const KEYS: &str = "tools, prompts, resources";

    /// The profile's tool, prompt and resource globs (none: no prompt, no
    /// resource).
    pub fn resolve(self, name: &str) -> Result<[GlobSet; 3], SettingError> {
        let fail = |message: String| {
            SettingError::new(
                format!("`profile.{name}`: {message}"),
                "list the tools it offers by name or glob, e.g. tools = [\"read_file\", \"search_*\"]",
            )
        };
        if self.tools.is_empty() {
            return Err(fail(
                "`tools` is empty, so the profile offers nothing".into(),
            ));
        }
        let set = |patterns: &[String]| {
            let mut set = GlobSetBuilder::new();
            for pattern in patterns {
                set.add(
                    Glob::new(pattern)
                        .map_err(|e| fail(format!("`{pattern}` is not a glob: {e}")))?,
                );
            }
            set.build().map_err(|e| fail(e.to_string()))
        };
        Ok([
            set(&self.tools)?,
            set(self.prompts.as_deref().unwrap_or(&[]))?,
            set(self.resources.as_deref().unwrap_or(&[]))?,
        ])
    }
}

impl Profiles {
    /// The profiles of every `[profile.NAME]` table; an error names the table.
    pub fn resolve(
        tables: BTreeMap<String, ProfileSection>,
    ) -> Result<Profiles, (String, SettingError)> {
        let mut named = BTreeMap::new();
        let mut prompts = BTreeMap::new();
        let mut resources = BTreeMap::new();
        for (name, table) in tables {
            if !is_profile_name(&name) {
                return Err((
                    name.clone(),
                    SettingError::new(
                        format!(
                            "`profile.{name}`: a profile name is letters, digits, `-`, `_` and `.`"
                        ),
                        "rename the table, e.g. [profile.review]",
                    ),
                ));
            }
            let [tools, offered, readable] = table.resolve(&name).map_err(|e| (name.clone(), e))?;
            prompts.insert(name.clone(), offered);
            resources.insert(name.clone(), readable);
            named.insert(name, tools);
        }
        Ok(Profiles {
            named,
            prompts,
            resources,
        })
    }

    /// The tool set of a session that declared `profile` (or none).
    pub fn select<'a>(&'a self, profile: Option<&'a str>) -> ToolSet<'a> {
        select(&self.named, profile)
    }

    /// The prompts a session that declared `profile` (or none) may get,
    /// as a set of names like a tool set.
    pub fn select_prompts<'a>(&'a self, profile: Option<&'a str>) -> ToolSet<'a> {
        select(&self.prompts, profile)
    }

    /// The resource URIs a session that declared `profile` (or none) may
    /// read, as a set of names like a tool set.
    pub fn select_resources<'a>(&'a self, profile: Option<&'a str>) -> ToolSet<'a> {
        select(&self.resources, profile)
    }

    /// The names of every profile, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.named.keys().map(String::as_str)
    }
}

/// The set one of a profile's maps holds for `profile`: everything without
/// a profile, nothing for one the config does not define.
fn select<'a>(sets: &'a BTreeMap<String, GlobSet>, profile: Option<&'a str>) -> ToolSet<'a> {
    match profile {
        None => ToolSet::All,
        Some(name) => match sets.get_key_value(name) {
            Some((name, set)) => ToolSet::Named(name, set),
            None => ToolSet::Unknown(name),
        },
    }
}

/// Profile names travel in flags, `_meta` and approvals: kept plain.
fn is_profile_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

impl ToolSet<'_> {
    pub fn includes(&self, tool: &str) -> bool {
        match self {
            ToolSet::All => true,
            ToolSet::Named(_, tools) => tools.is_match(tool),
            ToolSet::Unknown(_) => false,
        }
    }

    /// Why `tool` is not there, for the model: the profile and its meaning.
    pub fn missing(&self, tool: &str) -> String {
        match self {
            ToolSet::All => format!("no tool named `{tool}`"),
            ToolSet::Named(name, _) => {
                format!("no tool named `{tool}` in this session's profile `{name}`")
            }
            ToolSet::Unknown(name) => format!(
                "this session's profile `{name}` is not defined in the config, so it offers no tools (`{tool}` included)"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profiles(toml: &str) -> Result<Profiles, (String, SettingError)> {
        let tables: BTreeMap<String, ProfileSection> = toml::from_str(toml).unwrap();
        Profiles::resolve(tables)
    }

    #[test]
    fn a_profile_narrows_and_an_unknown_one_offers_nothing() {
        let p = profiles("[review]\ntools = [\"read_file\", \"search_*\"]\n").unwrap();
        let all = p.select(None);
        let review = p.select(Some("review"));
        let typo = p.select(Some("reveiw"));
        assert!(all.includes("write_file"));
        assert!(review.includes("read_file") && review.includes("search_text"));
        assert!(!review.includes("write_file"));
        assert!(!typo.includes("read_file"));
        assert!(typo.missing("read_file").contains("not defined"));
        assert!(review.missing("write_file").contains("`review`"));
    }

    #[test]
    fn a_profile_offers_only_the_prompts_it_names() {
        let p = profiles(
            "[review]\ntools = [\"read_file\"]\nprompts = [\"review_*\"]\n\
             [plain]\ntools = [\"read_file\"]\n",
        )
        .unwrap();
        assert!(p.select_prompts(None).includes("anything"));
        assert!(p.select_prompts(Some("review")).includes("review_diff"));
        assert!(!p.select_prompts(Some("review")).includes("deploy"));
        assert!(!p.select_prompts(Some("plain")).includes("review_diff"));
        assert!(!p.select_prompts(Some("typo")).includes("review_diff"));
        assert!(!p.select(Some("review")).includes("review_diff"));
    }

    #[test]
    fn a_profile_must_name_tools() {
        assert!(profiles("[empty]\ntools = []\n").is_err());
        assert!(profiles("[bad]\ntools = [\"[a\"]\n").is_err());
        assert!(profiles("[\"two words\"]\ntools = [\"a\"]\n").is_err());
    }
}
