//! Whether a session's totals leave room for one more call: the budget's
//! limits and the duplicate guard, each refusal saying which limit and
//! what to do.

use super::section::Budget;
use super::totals::SessionTotals;
use crate::outcome::{CallError, ErrorCode};
use crate::registry::Tool;
use crate::spec::Effect;

fn exceeded(message: String) -> Result<(), CallError> {
    Err(CallError::new(ErrorCode::BudgetExceeded, message))
}

/// Whether the duplicate guard can refuse a repeat of this tool's calls:
/// not when the config allows repeats, nor for a tool whose calls are
/// read-only and idempotent, nor for a keyed tool (its key answers a
/// repeat of a call that succeeded, and lets one that failed run again).
/// Only then are its calls counted per arguments.
pub(super) fn repeats_checked(budget: &Budget, tool: &Tool) -> bool {
    let harmless = tool.spec.effects.contains(Effect::ReadOnly)
        && tool.spec.effects.contains(Effect::Idempotent);
    !budget.allow_duplicate_calls && !harmless && !tool.spec.keyed
}

/// `digest` is given when the duplicate guard applies to the call.
pub(super) fn check(
    budget: &Budget,
    totals: &SessionTotals,
    tool: &Tool,
    digest: Option<&str>,
) -> Result<(), CallError> {
    let name = &tool.spec.name;
    if let Some(max) = budget.max_calls
        && totals.calls >= max
    {
        return exceeded(format!(
            "this session already ran {max} calls, its `budget.max_calls`; start a new session to go on"
        ));
    }
    let per_tool = totals.tools.get(name.as_str());
    let tool_calls = per_tool.map_or(0, |t| t.calls);
    if let Some(max) = budget.max_calls_per_tool
        && tool_calls >= max
    {
        return exceeded(format!(
            "this session already ran `{name}` {max} times, its `budget.max_calls_per_tool`"
        ));
    }
    if let Some(max) = budget.max_run_time
        && u128::from(totals.run_us) >= max.as_micros()
    {
        return exceeded(format!(
            "this session already spent {} ms running tools, its `budget.max_run_ms`",
            totals.run_us / 1000
        ));
    }
    let Some(digest) = digest else { return Ok(()) };
    let same_args = per_tool
        .and_then(|t| t.per_args.get(digest))
        .copied()
        .unwrap_or(0);
    if same_args > 0 {
        return Err(CallError::new(
            ErrorCode::DuplicateCall,
            format!(
                "`{name}` already ran with exactly these arguments in this session; repeating a call with effects is refused. Check its earlier result instead"
            ),
        ));
    }
    Ok(())
}
