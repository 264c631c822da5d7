//! What plugins change that clients hear of (contract 0.3.0, `changes`):
//! a resource announced as changed, or a plugin's tools offered or
//! withdrawn ([`Offers`], kept with the plugin). Owns the broadcast every
//! listener hears ([`Changes`]) and what one run asks to offer or withdraw
//! ([`Reoffered`]). Never decides when a run's changes are real (the
//! sandbox does) and never runs a plugin.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// How many changes a listener that falls behind may miss before it is
/// told it lagged (it then misses the oldest, which a client that reads
/// again on the next one does not need).
const CHANGES_BACKLOG: usize = 1024;

/// One change a client may hear of.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    /// A plugin's resource at this URI changed.
    Resource(Arc<str>),
    /// A plugin offered or withdrew tools: the tool list changed.
    Tools,
}

/// Where the changes plugins make go: every listener (the MCP server's
/// subscriptions and list-changed notifications) hears each as it is told.
#[derive(Clone, Debug)]
pub struct Changes(tokio::sync::broadcast::Sender<Change>);

impl Default for Changes {
    fn default() -> Changes {
        Changes(tokio::sync::broadcast::Sender::new(CHANGES_BACKLOG))
    }
}

impl Changes {
    /// The changes told from now on.
    pub fn listen(&self) -> tokio::sync::broadcast::Receiver<Change> {
        self.0.subscribe()
    }

    /// Tells every listener that `uris` changed.
    pub fn tell_resources(&self, uris: Vec<String>) {
        for uri in uris {
            self.tell(Change::Resource(Arc::from(uri)));
        }
    }

    /// Tells every listener that the tool list changed.
    pub fn tell_tools(&self) {
        self.tell(Change::Tools);
    }

    fn tell(&self, change: Change) {
        // No listener (no client connected) is not an error.
        let _ = self.0.send(change);
    }
}

/// Which of one plugin's tools are withdrawn right now: none at first.
/// Kept with the loaded plugin and shared by every reload that finds its
/// file unchanged, so it lasts as long as the file does.
#[derive(Debug)]
pub struct Offers {
    /// Every tool the plugin declared, by name.
    declared: BTreeSet<String>,
    withdrawn: Mutex<BTreeSet<String>>,
    /// Whether `withdrawn` holds anything: a call to a plugin that never
    /// withdrew a tool (nearly all) takes no lock.
    any_withdrawn: AtomicBool,
}

impl Offers {
    /// Every tool of `declared` offered.
    pub fn new(declared: impl IntoIterator<Item = String>) -> Offers {
        Offers {
            declared: declared.into_iter().collect(),
            withdrawn: Mutex::default(),
            any_withdrawn: AtomicBool::new(false),
        }
    }

    fn withdrawn(&self) -> std::sync::MutexGuard<'_, BTreeSet<String>> {
        self.withdrawn.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether `tool` is offered now.
    pub fn offers(&self, tool: &str) -> bool {
        !self.any_withdrawn.load(Ordering::Acquire) || !self.withdrawn().contains(tool)
    }

    /// What a run of one of the plugin's tools starts from: nothing asked
    /// yet, over what is offered now (read, not copied: a call costs one
    /// reference count).
    pub fn reoffered(self: &Arc<Offers>) -> Reoffered {
        Reoffered {
            offers: Arc::clone(self),
            wanted: BTreeMap::new(),
        }
    }

    /// Takes what a run asked for, and says what that changed.
    pub fn apply(&self, wanted: BTreeMap<String, bool>) -> Reoffer {
        let mut withdrawn = self.withdrawn();
        let mut changed = Reoffer::default();
        for (tool, offered) in wanted {
            if offered && withdrawn.remove(&tool) {
                changed.offered.push(tool);
            } else if !offered && withdrawn.insert(tool.clone()) {
                changed.withdrawn.push(tool);
            }
        }
        self.any_withdrawn
            .store(!withdrawn.is_empty(), Ordering::Release);
        changed
    }
}

/// The tools a run offered again and withdrew: what it changed, which its
/// call's audit records.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Reoffer {
    pub offered: Vec<String>,
    pub withdrawn: Vec<String>,
}

impl Reoffer {
    /// Nothing changed.
    pub fn is_empty(&self) -> bool {
        self.offered.is_empty() && self.withdrawn.is_empty()
    }

    /// Adds what a later attempt of the same call changed, so that the
    /// call's record says what the call changed in all: a tool withdrawn by
    /// one attempt and offered again by the next is back where it was, and
    /// is in neither list.
    pub fn and(mut self, later: Reoffer) -> Reoffer {
        for tool in later.offered {
            if !take(&mut self.withdrawn, &tool) {
                self.offered.push(tool);
            }
        }
        for tool in later.withdrawn {
            if !take(&mut self.offered, &tool) {
                self.withdrawn.push(tool);
            }
        }
        self
    }
}

/// Removes `tool` from `tools`; whether it was there.
fn take(tools: &mut Vec<String>, tool: &str) -> bool {
    let before = tools.len();
    tools.retain(|t| t != tool);
    tools.len() != before
}

/// What one run asked to offer or withdraw, over what its plugin offers.
/// Only the sandbox applies it, once the run's changes are real.
#[derive(Debug)]
pub struct Reoffered {
    offers: Arc<Offers>,
    /// Each tool the run named, with whether it is to be offered: the last
    /// word on each counts.
    wanted: BTreeMap<String, bool>,
}

impl Reoffered {
    /// The plugin's tools offered as the run sees them, in name order.
    pub fn offered(&self) -> Vec<String> {
        self.offers
            .declared
            .iter()
            .filter(|tool| match self.wanted.get(*tool) {
                Some(offered) => *offered,
                None => self.offers.offers(tool),
            })
            .cloned()
            .collect()
    }

    /// Offers or withdraws `tools`, or says why nothing changed.
    pub fn offer(&mut self, tools: &[String], offered: bool) -> Result<(), String> {
        let declared = &self.offers.declared;
        if let Some(foreign) = tools.iter().find(|t| !declared.contains(*t)) {
            let shown: String = foreign.chars().take(64).collect();
            return Err(format!(
                "`{shown}` is not one of this plugin's tools ({}); a plugin offers or \
                 withdraws only its own; nothing changed",
                declared
                    .iter()
                    .map(String::as_str)
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        for tool in tools {
            self.wanted.insert(tool.clone(), offered);
        }
        Ok(())
    }

    /// What the run asked for, tool by tool.
    pub fn into_wanted(self) -> BTreeMap<String, bool> {
        self.wanted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_changes_only_its_plugins_tools_and_only_once_applied() {
        let offers = Arc::new(Offers::new(["a".to_owned(), "b".to_owned()]));
        let mut run = offers.reoffered();
        assert!(run.offer(&["b".into(), "other".into()], false).is_err());
        assert_eq!(
            run.offered(),
            ["a", "b"],
            "a refused request changes nothing"
        );
        run.offer(&["b".into()], false).unwrap();
        assert_eq!(run.offered(), ["a"]);
        assert!(offers.offers("b"), "nothing applies before the run ends");
        let applied = offers.apply(run.into_wanted());
        assert_eq!(applied.withdrawn, ["b"]);
        assert!(applied.offered.is_empty());
        assert!(!offers.offers("b"));
        let mut again = offers.reoffered();
        again.offer(&["b".into()], false).unwrap();
        assert!(
            offers.apply(again.into_wanted()).is_empty(),
            "withdrawing twice changes nothing"
        );
    }

    #[test]
    fn attempts_of_one_call_add_up_to_what_the_call_changed() {
        let change = |offered: &[&str], withdrawn: &[&str]| Reoffer {
            offered: offered.iter().map(|t| t.to_string()).collect(),
            withdrawn: withdrawn.iter().map(|t| t.to_string()).collect(),
        };
        let first = change(&["c"], &["a", "b"]);
        let second = change(&["a"], &["c", "d"]);
        assert_eq!(
            first.and(second),
            change(&[], &["b", "d"]),
            "a and c are back where they were; b and d stay withdrawn"
        );
        assert_eq!(
            change(&[], &["a"]).and(change(&[], &[])),
            change(&[], &["a"])
        );
    }
}
