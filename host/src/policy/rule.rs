//! One policy rule: what it matches, what it decides, and why.

use super::PolicyError;
use globset::{Glob, GlobSet, GlobSetBuilder};
use serde::{Deserialize, Serialize};

/// A decision. Ordered from least to most restrictive, so `max` is the rule
/// "most restrictive wins".
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Allow,
    Ask,
    Deny,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Allow => "allow",
            Verdict::Ask => "ask",
            Verdict::Deny => "deny",
        }
    }
}

/// A rule as written in the config file.
#[derive(Clone, Debug)]
pub struct RuleDef {
    pub line: Option<usize>,
    pub tools: Vec<String>,
    pub verdict: Verdict,
    pub reason: String,
}

/// A compiled rule.
#[derive(Debug)]
pub struct Rule {
    index: usize,
    def: RuleDef,
    tools: GlobSet,
}

impl Rule {
    pub(super) fn compile(index: usize, def: RuleDef) -> Result<Rule, PolicyError> {
        let error = |message: String, hint: &str| PolicyError {
            line: def.line,
            message,
            hint: hint.into(),
        };
        if def.tools.is_empty() {
            return Err(error(
                "`tools` is empty, so the rule matches nothing".into(),
                "list tool names or globs, e.g. tools = [\"read_file\", \"list_*\"]",
            ));
        }
        if def.reason.trim().is_empty() {
            return Err(error(
                "`reason` is empty; every decision must say why".into(),
                "write the reason a person reviewing the audit log should read",
            ));
        }
        let mut set = GlobSetBuilder::new();
        for pattern in &def.tools {
            let glob = Glob::new(pattern).map_err(|e| {
                error(
                    format!("`{pattern}` is not a valid glob: {e}"),
                    "use `*` and `?` wildcards, e.g. \"fs_*\"",
                )
            })?;
            set.add(glob);
        }
        let tools = set.build().map_err(|e| {
            error(
                format!("cannot build the tool globs: {e}"),
                "simplify the globs",
            )
        })?;
        Ok(Rule { index, def, tools })
    }

    pub fn index(&self) -> usize {
        self.index
    }

    pub fn line(&self) -> Option<usize> {
        self.def.line
    }

    pub fn verdict(&self) -> Verdict {
        self.def.verdict
    }

    pub(super) fn matches(&self, tool: &str) -> bool {
        self.tools.is_match(tool)
    }

    /// Two rules with the same matchers (whatever the order of their globs).
    pub(super) fn same_matchers(&self, other: &Rule) -> bool {
        let mut a = self.def.tools.clone();
        let mut b = other.def.tools.clone();
        a.sort();
        a.dedup();
        b.sort();
        b.dedup();
        a == b
    }

    /// The rule as the user wrote it, for messages and the audit log.
    pub fn describe(&self) -> String {
        format!(
            "{}{} (rule {}: tools = {:?})",
            self.def.reason,
            self.def
                .line
                .map(|l| format!(" [toolwarden.toml line {l}]"))
                .unwrap_or_default(),
            self.index + 1,
            self.def.tools
        )
    }
}
