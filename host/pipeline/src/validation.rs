//! The validation step, `ResolvedCall -> ValidatedCall`: a call goes on
//! only if its arguments match the tool's input schema. The schemas
//! themselves (compiling, checking values) are [`crate::schema`]'s; this
//! module only applies a tool's schema to a call.

use crate::materialize::Arguments;
use crate::outcome::{CallError, ErrorCode};
use crate::registry::ResolvedCall;
use crate::schema::describe;

/// A call whose arguments match the tool's input schema. Only [`validate`]
/// makes one.
#[derive(Debug)]
pub struct ValidatedCall {
    resolved: ResolvedCall,
}

impl ValidatedCall {
    pub fn resolved(&self) -> &ResolvedCall {
        &self.resolved
    }

    pub(crate) fn into_resolved(self) -> ResolvedCall {
        self.resolved
    }

    /// The same call with arguments a later step derived from these (the
    /// path step's resolved paths), validated again: what the plugin
    /// receives must match the schema, whatever rewrote it.
    pub(crate) fn with_args(self, args: Arguments) -> Result<ValidatedCall, CallError> {
        validate(self.resolved.with_args(args)).map_err(|mut error| {
            error.message = format!(
                "once its paths are resolved, the call breaks the input schema: {}",
                error.message
            );
            error
        })
    }
}

/// Pipeline step: checks the arguments against the tool's input schema.
pub fn validate(call: ResolvedCall) -> Result<ValidatedCall, CallError> {
    let violations = call.tool().input.violations(call.args().value());
    if violations.is_empty() {
        Ok(ValidatedCall { resolved: call })
    } else {
        Err(CallError::new(
            ErrorCode::InvalidArgs,
            describe("the arguments", &violations),
        ))
    }
}
