//! Runs the calls of one model turn: consecutive calls whose tools declare
//! themselves parallel-safe (read-only, not exclusive, not stateful) run
//! concurrently under a limit; any other call, or one whose tool is unknown,
//! runs alone, in order. Results come back in call order, whatever the
//! completion order. Each call still goes through the whole pipeline.
//!
//! It decides only the grouping; the controller runs each call.

use crate::call::CallRequest;
use crate::registry::Registry;
use crate::spec::Effect;

/// Calls that may overlap when their tools say they are parallel-safe,
/// unless the config says otherwise (`[scheduler] max_parallel`).
pub fn default_parallelism() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
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
