//! What one session has executed or holds reserved, counted per tool and
//! per arguments, as the ledger keeps it in memory.

use crate::store::ExecutionGroup;
use std::sync::Arc;

/// The ledger's maps, keyed by session ids, tool names and argument
/// digests. foldhash instead of SipHash: a call hashes several keys under
/// the ledger's lock, and foldhash's per-process random seed is enough
/// against keys chosen to collide (digests are SHA-256 outputs anyway).
pub(super) type Map<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

/// What one session has executed (or reserved) so far. Keys are shared
/// with the calls' records, so counting a call copies no text.
#[derive(Debug, Default)]
pub(super) struct SessionTotals {
    pub(super) calls: u64,
    pub(super) run_us: u64,
    /// Reservations not yet executed or given back.
    pub(super) in_flight: u64,
    /// This process minted the id: the database knows nothing these totals
    /// do not, so they must not be dropped while the id is still held.
    pub(super) minted: bool,
    pub(super) tools: Map<Arc<str>, ToolTotals>,
}

#[derive(Debug, Default)]
pub(super) struct ToolTotals {
    pub(super) calls: u64,
    /// Calls per argument digest, for the duplicate guard. Only calls it
    /// could refuse a repeat of are counted here (see `limits::repeats_checked`).
    pub(super) per_args: Map<Arc<str>, u64>,
}

impl SessionTotals {
    /// Counts `calls` of `tool`, and of its arguments when `digest` is given.
    pub(super) fn add(&mut self, tool: &Arc<str>, digest: Option<&Arc<str>>, calls: u64) {
        self.calls += calls;
        let per_tool = match self.tools.get_mut(tool) {
            Some(t) => t,
            None => self.tools.entry(Arc::clone(tool)).or_default(),
        };
        per_tool.calls += calls;
        let Some(digest) = digest else { return };
        match per_tool.per_args.get_mut(digest) {
            Some(n) => *n += calls,
            None => {
                per_tool.per_args.insert(Arc::clone(digest), calls);
            }
        }
    }

    /// Totals of what a store says a session executed.
    pub(super) fn from_groups(groups: Vec<ExecutionGroup>) -> SessionTotals {
        let mut totals = SessionTotals::default();
        for g in groups {
            let (tool, digest) = (Arc::from(g.tool), Arc::from(g.args_digest));
            totals.add(&tool, Some(&digest), g.calls.max(0) as u64);
            totals.run_us += g.duration_us.max(0) as u64;
        }
        totals
    }

    pub(super) fn remove_one(&mut self, tool: &str, digest: Option<&str>) {
        self.calls = self.calls.saturating_sub(1);
        if let Some(t) = self.tools.get_mut(tool) {
            t.calls = t.calls.saturating_sub(1);
            if let Some(n) = digest.and_then(|d| t.per_args.get_mut(d)) {
                *n = n.saturating_sub(1);
            }
        }
    }
}
