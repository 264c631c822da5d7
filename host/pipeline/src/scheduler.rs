//! Runs the calls of one model turn: consecutive calls whose tools declare
//! themselves parallel-safe (read-only, not exclusive, not stateful) run
//! concurrently under a limit; any other call, or one whose tool is unknown,
//! runs alone, in order. Results come back in call order, whatever the
//! completion order. Each call still goes through the whole pipeline.
//!
//! It decides only the grouping; the controller runs each call.

use crate::call::CallRequest;
use crate::registry::Registry;
use crate::settings::{SettingError, bounded};
use crate::spec::Effect;
use serde::Deserialize;

/// Calls that may overlap when their tools say they are parallel-safe,
/// unless the config says otherwise (`[scheduler] max_parallel`).
pub fn default_parallelism() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Most calls a turn may run at once, whatever the config says.
const MAX_PARALLEL: u64 = 1024;

/// The `[scheduler]` table as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SchedulerSection {
    max_parallel: Option<u64>,
}

impl SchedulerSection {
    pub const KEYS: &str = "max_parallel";

    /// Calls of one turn that may overlap.
    pub fn resolve(self) -> Result<usize, SettingError> {
        let default = default_parallelism() as u64;
        Ok(bounded(
            "scheduler",
            "max_parallel",
            self.max_parallel,
            default,
            MAX_PARALLEL,
        )? as usize)
    }
}

/// Whether a call may run beside others. Missing metadata means no.
fn parallel_safe(registry: &Registry, request: &CallRequest) -> bool {
    registry.get(&request.tool).is_some_and(|tool| {
        let e = tool.spec.effects;
        e.contains(Effect::ReadOnly)
            && !e.contains(Effect::Exclusive)
            && !e.contains(Effect::Stateful)
    })
}

/// Splits a turn into groups run one after another: a run of parallel-safe
/// calls, or a single call that must run alone.
pub fn groups(registry: &Registry, calls: Vec<CallRequest>) -> Vec<Vec<CallRequest>> {
    let mut groups: Vec<Vec<CallRequest>> = Vec::new();
    let mut open_parallel = false;
    for call in calls {
        let safe = parallel_safe(registry, &call);
        match groups.last_mut() {
            Some(group) if safe && open_parallel => group.push(call),
            Some(_) | None => groups.push(vec![call]),
        }
        open_parallel = safe;
    }
    groups
}
