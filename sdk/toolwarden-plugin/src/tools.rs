//! Offering and withdrawing this plugin's own tools while it runs (contract
//! 0.3.0, `changes`): a plugin whose tools make sense only in some state
//! (say, `query` once `connect` has run) withdraws the others, so agents do
//! not see them, and offers them again later. The clients hear that the
//! tool list changed. A plugin only narrows what it declared: the policy
//! and profiles still decide every call.
//!
//! ```ignore
//! use toolwarden_plugin::tools;
//! tools::offer(&["query"])?;
//! tools::withdraw(&["connect"])?;
//! ```
//!
//! The change counts once the call ends (a preview's rehearsal changes
//! nothing), and lasts until the plugin's file changes.

use crate::bindings::toolwarden::tool::changes;

/// This plugin's tools offered now, in name order, as this call left them.
pub fn offered() -> Vec<String> {
    changes::offered_tools()
}

/// Offers `names` (this plugin's own tools) again once the call ends. An
/// error, and nothing changes, for a name that is not one of them.
pub fn offer(names: &[&str]) -> Result<(), String> {
    changes::offer_tools(&owned(names), true)
}

/// Withdraws `names` (this plugin's own tools) once the call ends: they are
/// not listed and their calls are refused until offered again. An error,
/// and nothing changes, for a name that is not one of them.
pub fn withdraw(names: &[&str]) -> Result<(), String> {
    changes::offer_tools(&owned(names), false)
}

fn owned(names: &[&str]) -> Vec<String> {
    names.iter().map(|name| (*name).to_owned()).collect()
}
