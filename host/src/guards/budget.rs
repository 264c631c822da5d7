//! Per-session budgets and the duplicate-call guard, counted over the calls
//! that actually executed in the session (denied or pending calls never
//! count, so asking for approval does not make the approved run a duplicate).
//!
//! Two calls of one session racing through the guard at the same moment may
//! both pass the last unit of a budget: budgets bound runaway agents, they
//! are not a billing meter.

use crate::outcome::{CallError, ErrorCode};
use crate::registry::Tool;
use crate::spec::Effect;
use crate::store::{ExecutionTotals, Store};
use std::time::Duration;

/// Limits per session, from the `[budget]` table. `None` is unlimited.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Budget {
    pub max_calls: Option<u64>,
    pub max_calls_per_tool: Option<u64>,
    pub max_run_time: Option<Duration>,
    /// Calls one model turn may ask for (checked by the batch runner).
    pub max_calls_per_turn: Option<u64>,
    /// The same tool with the same arguments may run again in a session.
    /// Off by default, except for tools declaring `read-only` and `idempotent`.
    pub allow_duplicate_calls: bool,
}

fn exceeded(message: String) -> Result<(), CallError> {
    Err(CallError::new(ErrorCode::BudgetExceeded, message))
}

pub(super) fn check(
    budget: &Budget,
    totals: ExecutionTotals,
    tool: &Tool,
) -> Result<(), CallError> {
    let name = &tool.spec.name;
    if let Some(max) = budget.max_calls
        && totals.calls as u64 >= max
    {
        return exceeded(format!(
            "this session already ran {max} calls, its `budget.max_calls`; start a new session to go on"
        ));
    }
    if let Some(max) = budget.max_calls_per_tool
        && totals.tool_calls as u64 >= max
    {
        return exceeded(format!(
            "this session already ran `{name}` {max} times, its `budget.max_calls_per_tool`"
        ));
    }
    if let Some(max) = budget.max_run_time
        && totals.run_us as u128 >= max.as_micros()
    {
        return exceeded(format!(
            "this session already spent {} ms running tools, its `budget.max_run_ms`",
            totals.run_us / 1000
        ));
    }
    let harmless = tool.spec.effects.contains(Effect::ReadOnly)
        && tool.spec.effects.contains(Effect::Idempotent);
    if totals.same_args > 0 && !budget.allow_duplicate_calls && !harmless {
        return Err(CallError::new(
            ErrorCode::DuplicateCall,
            format!(
                "`{name}` already ran with exactly these arguments in this session; repeating a call with effects is refused. Check its earlier result instead"
            ),
        ));
    }
    Ok(())
}

pub(super) fn totals(
    store: &Store,
    session: &str,
    tool: &str,
    digest: &str,
) -> Result<ExecutionTotals, CallError> {
    store.execution_totals(session, tool, digest).map_err(|e| {
        CallError::new(
            ErrorCode::HostError,
            format!("cannot read the session's history, so the call did not run: {e}"),
        )
    })
}
