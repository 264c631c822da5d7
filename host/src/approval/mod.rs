//! Turns an authorized call into a [`PreparedCall`], the only thing the
//! sandbox will run.
//!
//! An `allow` decision passes straight through. An `ask` decision needs a
//! person's one-time approval; until approvals are persisted (they arrive
//! with the governance work), no approver exists, so `ask` fails closed with
//! APPROVAL_UNAVAILABLE and nothing runs.

use crate::call::Arguments;
use crate::capability::Grant;
use crate::outcome::{CallError, ErrorCode};
use crate::policy::{AuthorizedCall, Verdict};
use crate::registry::Tool;
use std::sync::Arc;

/// A call cleared to run: resolved, validated, allowed or approved, with its
/// grant. Only [`admit`] makes one, and running it consumes it.
#[derive(Debug)]
pub struct PreparedCall {
    tool: Arc<Tool>,
    args: Arguments,
    grant: Grant,
}

impl PreparedCall {
    pub fn tool(&self) -> &Arc<Tool> {
        &self.tool
    }

    pub fn args(&self) -> &Arguments {
        &self.args
    }

    pub fn grant(&self) -> Grant {
        self.grant
    }
}

/// Pipeline step: lets an allowed call through; an `ask` with nobody to ask
/// is refused.
pub fn admit(call: AuthorizedCall) -> Result<PreparedCall, CallError> {
    let (call, decision, grant) = call.into_parts();
    match decision.verdict {
        Verdict::Allow => {
            let (tool, args) = call.into_resolved().into_parts();
            Ok(PreparedCall { tool, args, grant })
        }
        Verdict::Ask => Err(CallError::new(
            ErrorCode::ApprovalUnavailable,
            format!(
                "the policy asks for a person's approval before `{}` runs ({}), and no approver \
                 is available here, so the call did not run",
                call.resolved().tool().spec.name,
                decision.reason
            ),
        )),
        Verdict::Deny => Err(CallError::new(ErrorCode::PolicyDenied, decision.reason)),
    }
}
