//! How deep and how wide a tree of calls may grow (seed 002 §5.12): a call
//! a tool makes through `compose` is refused before it resolves when it
//! would nest deeper than `max_depth`, be more than `max_children`-th child
//! of its parent, or reach a tool already running above it in the same
//! tree (a cycle, which would otherwise only end at the deadline). Owns the
//! `[compose]` table. Never looks at what the child would do: policy,
//! guards and approval govern a child as any other call.

use crate::call::Lineage;
use crate::outcome::{CallError, ErrorCode};
use crate::settings::{SettingError, bounded};
use serde::Deserialize;

const DEFAULT_MAX_DEPTH: u64 = 4;
const MAX_MAX_DEPTH: u64 = 16;
const DEFAULT_MAX_CHILDREN: u64 = 16;
const MAX_MAX_CHILDREN: u64 = 1_000;

/// The `[compose]` table as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ComposeSection {
    max_depth: Option<u64>,
    max_children: Option<u64>,
}

/// The bounds of a tree of calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Nesting {
    /// Levels below a call an agent made: 1 lets its tool call others, whose
    /// own calls are then refused.
    pub max_depth: u32,
    /// Calls one call may make through `compose`.
    pub max_children: u32,
}

impl Default for Nesting {
    fn default() -> Nesting {
        Nesting {
            max_depth: DEFAULT_MAX_DEPTH as u32,
            max_children: DEFAULT_MAX_CHILDREN as u32,
        }
    }
}

impl ComposeSection {
    pub const KEYS: &str = "max_depth, max_children";

    pub fn resolve(self) -> Result<Nesting, SettingError> {
        let max_depth = bounded(
            "compose",
            "max_depth",
            self.max_depth,
            DEFAULT_MAX_DEPTH,
            MAX_MAX_DEPTH,
        )?;
        let max_children = bounded(
            "compose",
            "max_children",
            self.max_children,
            DEFAULT_MAX_CHILDREN,
            MAX_MAX_CHILDREN,
        )?;
        Ok(Nesting {
            max_depth: max_depth as u32,
            max_children: max_children as u32,
        })
    }
}

impl Nesting {
    /// Refuses a nested call to `tool` that would break the bounds; a call
    /// an agent made (no lineage) always passes.
    pub fn check(&self, lineage: Option<&Lineage>, tool: &str) -> Result<(), CallError> {
        let Some(lineage) = lineage else {
            return Ok(());
        };
        if let Some(at) = lineage.path.iter().position(|above| &**above == tool) {
            let chain: Vec<&str> = lineage.path[at..].iter().map(|t| &**t).collect();
            return Err(CallError::new(
                ErrorCode::CallCycle,
                format!(
                    "`{tool}` is already running in this tree of calls ({} -> {tool}); \
                     a tool may not reach itself through the tools it calls",
                    chain.join(" -> ")
                ),
            ));
        }
        if lineage.depth > self.max_depth {
            return Err(CallError::new(
                ErrorCode::NestingLimit,
                format!(
                    "this call would be {} levels below the agent's call, over `compose.max_depth` = {}; it did not run",
                    lineage.depth, self.max_depth
                ),
            ));
        }
        if lineage.sibling > self.max_children {
            return Err(CallError::new(
                ErrorCode::NestingLimit,
                format!(
                    "`{}` already made {} calls, as many as `compose.max_children` allows; this one did not run",
                    lineage.parent_tool(),
                    self.max_children
                ),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::call::CallId;
    use std::sync::Arc;

    fn lineage(path: &[&str], sibling: u32) -> Lineage {
        Lineage {
            parent_call_id: CallId::new(),
            root_call_id: CallId::new(),
            path: path.iter().map(|t| Arc::from(*t)).collect(),
            depth: path.len() as u32,
            sibling,
        }
    }

    #[test]
    fn a_tool_above_in_the_tree_is_a_cycle_whatever_the_depth() {
        let bounds = Nesting::default();
        let e = bounds
            .check(Some(&lineage(&["a", "b", "c"], 1)), "b")
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::CallCycle);
        assert!(e.message.contains("b -> c -> b"), "{}", e.message);
        assert!(bounds.check(Some(&lineage(&["a", "b"], 1)), "c").is_ok());
        assert!(bounds.check(None, "a").is_ok());
    }

    #[test]
    fn depth_and_fan_out_stop_at_their_bounds() {
        let bounds = Nesting {
            max_depth: 2,
            max_children: 3,
        };
        assert!(bounds.check(Some(&lineage(&["a", "b"], 3)), "c").is_ok());
        let deep = bounds
            .check(Some(&lineage(&["a", "b", "c"], 1)), "d")
            .unwrap_err();
        assert_eq!(deep.code, ErrorCode::NestingLimit);
        assert!(deep.message.contains("max_depth"), "{}", deep.message);
        let wide = bounds.check(Some(&lineage(&["a"], 4)), "b").unwrap_err();
        assert_eq!(wide.code, ErrorCode::NestingLimit);
        assert!(
            wide.message.contains("`a` already made 3 calls"),
            "{}",
            wide.message
        );
    }

    #[test]
    fn the_table_is_bounded() {
        let section: ComposeSection = toml::from_str("max_depth = 0").unwrap();
        assert!(section.resolve().is_err());
        let section: ComposeSection = toml::from_str("max_children = 2").unwrap();
        assert_eq!(section.resolve().unwrap().max_children, 2);
    }
}
