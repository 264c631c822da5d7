//! Which rules can match a tool, found in one pass.
//!
//! Every rule's `tools` globs go into one set, so a call's tool name is
//! matched once against all of them instead of against each rule's globs in
//! turn: a decision among a thousand rules for other tools then checks only
//! the few rules that name its tool (and those that name no tool). A rule
//! left out here could only have missed on `tools`, so the decision is the
//! same. A rule about prompts or resources can match no tool and is left out. Never
//! decides anything itself.

use super::Rule;
use globset::{Glob, GlobSet, GlobSetBuilder};

#[derive(Debug, Default)]
pub(super) struct ToolIndex {
    set: GlobSet,
    /// The rule (by position) each glob of `set` belongs to.
    owners: Vec<usize>,
    /// Rules with no `tools` key, which may match any tool; every rule
    /// when the set cannot be built.
    unscoped: Vec<usize>,
}

impl ToolIndex {
    pub(super) fn new(rules: &[Rule]) -> ToolIndex {
        let mut builder = GlobSetBuilder::new();
        let mut owners = Vec::new();
        let mut unscoped = Vec::new();
        for (at, rule) in rules.iter().enumerate() {
            if rule.offers().is_some() {
                continue;
            }
            let Some(patterns) = rule.tool_patterns() else {
                unscoped.push(at);
                continue;
            };
            for pattern in patterns {
                // The rule compiled the same glob already; one that did not
                // would leave the rule to be checked every time.
                match Glob::new(pattern) {
                    Ok(glob) => {
                        builder.add(glob);
                        owners.push(at);
                    }
                    Err(_) => unscoped.push(at),
                }
            }
        }
        match builder.build() {
            Ok(set) => {
                unscoped.sort_unstable();
                unscoped.dedup();
                ToolIndex {
                    set,
                    owners,
                    unscoped,
                }
            }
            Err(_) => ToolIndex {
                set: GlobSet::empty(),
                owners: Vec::new(),
                unscoped: (0..rules.len()).collect(),
            },
        }
    }

    /// The positions of the rules that may match `tool`, in file order.
    pub(super) fn candidates(&self, tool: &str) -> Vec<usize> {
        let mut rules = self.unscoped.clone();
        rules.extend(self.set.matches(tool).into_iter().map(|g| self.owners[g]));
        rules.sort_unstable();
        rules.dedup();
        rules
    }
}
