//! What a tool says about itself: the host-side copy of the WIT `tool-spec`,
//! spelled as in the WIT (`read-only`, `workspace-write`, `dangerous`).
//!
//! These are plain values; the registry checks them when a plugin loads and
//! every later step trusts them.

use crate::origin::OriginPattern;
use serde::{Deserialize, Serialize};
use std::fmt;

/// Largest tool name; the strictest model API (OpenAI) allows 64 characters.
pub const MAX_TOOL_NAME: usize = 64;

/// One effect a tool declares. See `wit/tool.wit` for their meaning.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Effect {
    ReadOnly,
    MutatesWorkspace,
    Exclusive,
    Stateful,
    Idempotent,
    OpenWorld,
}

impl Effect {
    pub const ALL: [Effect; 6] = [
        Effect::ReadOnly,
        Effect::MutatesWorkspace,
        Effect::Exclusive,
        Effect::Stateful,
        Effect::Idempotent,
        Effect::OpenWorld,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Effect::ReadOnly => "read-only",
            Effect::MutatesWorkspace => "mutates-workspace",
            Effect::Exclusive => "exclusive",
            Effect::Stateful => "stateful",
            Effect::Idempotent => "idempotent",
            Effect::OpenWorld => "open-world",
        }
    }

    fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

/// The set of effects a tool declares.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Effects(u8);

impl Effects {
    pub fn with(self, effect: Effect) -> Self {
        Effects(self.0 | effect.bit())
    }

    pub fn contains(self, effect: Effect) -> bool {
        self.0 & effect.bit() != 0
    }

    pub fn iter(self) -> impl Iterator<Item = Effect> {
        Effect::ALL.into_iter().filter(move |e| self.contains(*e))
    }
}

impl FromIterator<Effect> for Effects {
    fn from_iter<I: IntoIterator<Item = Effect>>(iter: I) -> Self {
        iter.into_iter().fold(Effects::default(), Effects::with)
    }
}

impl Serialize for Effects {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}

impl fmt::Display for Effects {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<_> = self.iter().map(Effect::as_str).collect();
        f.write_str(&names.join(","))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Risk {
    Safe,
    Normal,
    Dangerous,
}

impl Risk {
    pub fn as_str(self) -> &'static str {
        match self {
            Risk::Safe => "safe",
            Risk::Normal => "normal",
            Risk::Dangerous => "dangerous",
        }
    }
}

/// The filesystem access a tool declares it needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FsNeed {
    None,
    ReadOnly,
    WorkspaceWrite,
}

impl FsNeed {
    pub fn as_str(self) -> &'static str {
        match self {
            FsNeed::None => "none",
            FsNeed::ReadOnly => "read-only",
            FsNeed::WorkspaceWrite => "workspace-write",
        }
    }
}

/// What a tool declares it needs from the network (0.2.0 contract).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NetworkNeed {
    /// Origins it may send requests to; never empty.
    pub origins: Vec<OriginPattern>,
    /// Names of the credentials its requests need.
    pub credentials: Vec<String>,
}

/// Whether `name` is a credential name a config can define: `[a-z][a-z0-9_-]*`,
/// at most 64 characters (it is a TOML key and appears in messages).
pub fn is_valid_credential_name(name: &str) -> bool {
    name.len() <= 64
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
}

/// A tool's declaration, as its plugin returned it from `tools()`.
#[derive(Clone, Debug, Serialize)]
pub struct ToolSpec {
    pub name: String,
    pub title: String,
    pub description: String,
    pub input_schema: serde_json::Value,
    pub output_schema: Option<serde_json::Value>,
    pub effects: Effects,
    pub risk: Risk,
    pub filesystem: FsNeed,
    pub timeout_ms: Option<u32>,
    /// `None`: the tool reaches no network (every 0.1.0 tool).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network: Option<NetworkNeed>,
    /// Its plugin lists it in the optional `keyed` export: a repeat of the
    /// same call answers with the recorded outcome instead of running.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub keyed: bool,
}

/// Whether `name` is a tool name every model API accepts.
pub fn is_valid_name(name: &str) -> bool {
    name.len() <= MAX_TOOL_NAME
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// Why a declaration is refused. Checked when the plugin loads, so that a
/// loaded tool is always usable by every model API and honest about itself.
pub fn check_declaration(
    name: &str,
    description: &str,
    effects: Effects,
    fs: FsNeed,
    network: Option<&NetworkNeed>,
) -> Result<(), String> {
    if !is_valid_name(name) {
        return Err(format!(
            "the name must match `[a-z][a-z0-9_]*` and be at most {MAX_TOOL_NAME} characters, \
             so that every model API accepts it"
        ));
    }
    if description.trim().is_empty() {
        return Err("the description is empty; models choose tools by it".into());
    }
    if effects.contains(Effect::ReadOnly) && effects.contains(Effect::MutatesWorkspace) {
        return Err("declares both `read-only` and `mutates-workspace`".into());
    }
    if network.is_some() && !effects.contains(Effect::OpenWorld) {
        return Err("declares `network` but not the `open-world` effect".into());
    }
    match fs {
        FsNeed::WorkspaceWrite if effects.contains(Effect::ReadOnly) => Err(
            "declares `read-only` effects but asks for `workspace-write` filesystem access".into(),
        ),
        FsNeed::None | FsNeed::ReadOnly if effects.contains(Effect::MutatesWorkspace) => {
            Err("declares `mutates-workspace` but does not ask for `workspace-write` access".into())
        }
        FsNeed::None | FsNeed::ReadOnly | FsNeed::WorkspaceWrite => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn effects_serialize_as_wit_spelling() {
        let e: Effects = [Effect::Idempotent, Effect::ReadOnly].into_iter().collect();
        assert_eq!(
            serde_json::to_string(&e).unwrap(),
            r#"["read-only","idempotent"]"#
        );
        assert_eq!(e.to_string(), "read-only,idempotent");
    }

    #[test]
    fn names_must_suit_every_model_api() {
        let ok = |n: &str| check_declaration(n, "d", Effects::default(), FsNeed::None, None);
        assert!(ok("read_file").is_ok());
        for bad in ["", "Read", "1x", "a-b", "a.b", &"a".repeat(65)] {
            assert!(ok(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn effects_must_agree_with_filesystem_need() {
        let ro: Effects = [Effect::ReadOnly].into_iter().collect();
        let rw: Effects = [Effect::MutatesWorkspace].into_iter().collect();
        assert!(check_declaration("t", "d", ro, FsNeed::WorkspaceWrite, None).is_err());
        assert!(check_declaration("t", "d", rw, FsNeed::ReadOnly, None).is_err());
        assert!(check_declaration("t", "d", rw, FsNeed::WorkspaceWrite, None).is_ok());
        assert!(check_declaration("t", " ", ro, FsNeed::None, None).is_err());
    }

    #[test]
    fn network_needs_the_open_world_effect() {
        let need = NetworkNeed {
            origins: vec!["https://example.org".parse().unwrap()],
            credentials: vec![],
        };
        let open: Effects = [Effect::OpenWorld].into_iter().collect();
        assert!(
            check_declaration("t", "d", Effects::default(), FsNeed::None, Some(&need)).is_err()
        );
        assert!(check_declaration("t", "d", open, FsNeed::None, Some(&need)).is_ok());
        assert!(is_valid_credential_name("github-token_2"));
        for bad in ["", "Github", "1x", "a b", "a.b", &"a".repeat(65)] {
            assert!(!is_valid_credential_name(bad), "{bad:?}");
        }
    }
}
